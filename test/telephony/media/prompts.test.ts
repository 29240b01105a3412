import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { numberPrompt, PROMPT_NAMES, type PromptName } from "../../../src/domain/prompt.js";
import { concatPrompts, prompt } from "../../../src/telephony/media/prompts.js";
import { createResampler } from "../../../src/telephony/media/resampler.js";
import { readWav } from "../../../src/telephony/media/wav.js";
import { bandEnergy, bandShareDb } from "../../helpers/spectrum.js";

const FILE_RATE = 16000;
const PROMPT_DIRECTORY = new URL("../../../assets/prompts/", import.meta.url);
/** The keypad maps are read out whole; every other prompt is a sentence or two. */
const LONG_PROMPTS: ReadonlySet<PromptName> = new Set(["help-member", "help-moderator"]);
/** -40 dBFS: quieter than any speech after normalization, louder than the trimmed silence. */
const SPEECH_THRESHOLD = 328;

function peakDbfs(samples: Int16Array): number {
  let peak = 0;
  for (const sample of samples) peak = Math.max(peak, Math.abs(sample));
  return 20 * Math.log10(peak / 32767);
}

/** Seconds of near-silence before the first and after the last sound. */
function silentEnds(samples: Int16Array, rate: number): { leading: number; trailing: number } {
  const first = samples.findIndex((sample) => Math.abs(sample) > SPEECH_THRESHOLD);
  let last = samples.length - 1;
  while (last > 0 && Math.abs(samples[last] ?? 0) <= SPEECH_THRESHOLD) last--;
  return { leading: first / rate, trailing: (samples.length - 1 - last) / rate };
}

/** 8 kHz samples at 16 kHz, aligned with them (the interpolator's delay dropped). */
function doubleRate(samples: Int16Array): Int16Array {
  const interpolator = createResampler(8000, 16000);
  const input = new Int16Array(samples.length + interpolator.delay / 2);
  input.set(samples);
  const output = new Int16Array(2 * input.length);
  interpolator.process(input, output);
  return output.subarray(interpolator.delay);
}

describe("voice prompt files", () => {
  it("are exactly the prompts listed in prompts.txt, the script's input", () => {
    const listed = readFileSync(new URL("prompts.txt", PROMPT_DIRECTORY), "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "" && !line.startsWith("#"))
      .map((line) => line.split("|")[0]);
    assert.deepEqual([...listed].sort(), [...PROMPT_NAMES].sort());
    const files = readdirSync(PROMPT_DIRECTORY).filter((file) => file.endsWith(".wav"));
    assert.deepEqual(files.sort(), PROMPT_NAMES.map((name) => `${name}.wav`).sort());
  });

  for (const name of PROMPT_NAMES) {
    it(`${name}: 16 kHz, a sensible length, loud enough, silence trimmed to about 100 ms`, () => {
      const file = readWav(readFileSync(new URL(`${name}.wav`, PROMPT_DIRECTORY)));
      assert.equal(file.sampleRate, FILE_RATE);
      const samples = prompt(name);
      assert.deepEqual(samples, file.samples);
      const seconds = samples.length / FILE_RATE;
      assert.ok(seconds >= 0.3, `${name} lasts ${seconds} s`);
      assert.ok(seconds <= (LONG_PROMPTS.has(name) ? 30 : 12), `${name} lasts ${seconds} s`);
      const peak = peakDbfs(samples);
      assert.ok(peak > -12 && peak < -1, `${name} peaks at ${peak.toFixed(1)} dBFS`);
      const { leading, trailing } = silentEnds(samples, FILE_RATE);
      for (const end of [leading, trailing]) {
        assert.ok(end >= 0.05 && end <= 0.3, `${name} has ${leading} s of silence first, ${trailing} s last`);
      }
    });
  }
});

describe("prompt at 8000 Hz", () => {
  for (const name of PROMPT_NAMES) {
    it(`${name}: as long as at 16 kHz, in step with it, as loud`, () => {
      const wide = prompt(name, 16000);
      const narrow = prompt(name, 8000);
      // Within a sample of 16 kHz, well inside the ±1 frame (20 ms) a player can notice.
      assert.ok(
        Math.abs(2 * narrow.length - wide.length) <= 1,
        `${narrow.length} samples, ${wide.length} at 16 kHz`,
      );
      // In step: the 16 kHz samples at even positions match the 8 kHz ones best with no shift (the
      // filter's delay left in would shift them 19 samples).
      const shifts = [-20, -19, -2, -1, 0, 1, 2, 19, 20];
      const matches = shifts.map((shift) => {
        let sum = 0;
        for (let i = 0; i < narrow.length; i++) sum += (narrow[i] as number) * (wide[2 * (i + shift)] ?? 0);
        return sum;
      });
      assert.equal(shifts[matches.indexOf(Math.max(...matches))], 0);
      const peakChange = peakDbfs(narrow) - peakDbfs(wide);
      assert.ok(Math.abs(peakChange) < 3, `the peak moved by ${peakChange.toFixed(1)} dB`);
    });
  }

  // Sibilants put much of these prompts' energy above 4 kHz: folded into the narrow band instead of
  // filtered out, it would land in the speech band.
  for (const name of ["participants", "muting-not-allowed"] as const) {
    it(`${name}: the 16 kHz prompt's band below 4 kHz, with nothing from above folded in`, () => {
      const wide = prompt(name, 16000);
      const highShare = bandShareDb(wide, 16000, 4000, 8000);
      assert.ok(highShare > -20, `only ${highShare.toFixed(1)} dB of ${name} is above 4 kHz`);
      // What the 8 kHz prompt, brought back to 16 kHz, lacks from the original is only what lay above
      // the band: below 3 kHz the two agree to within the filters' ripple.
      const back = doubleRate(prompt(name, 8000));
      const missing = Float64Array.from(wide, (sample, i) => sample - (back[i] ?? 0));
      const errorDb = 10 * Math.log10(bandEnergy(missing, 16000, 0, 3000) / bandEnergy(wide, 16000, 0, 3000));
      assert.ok(errorDb < -30, `below 3 kHz the 8 kHz prompt is off by ${errorDb.toFixed(1)} dB`);
    });
  }
});

describe("prompt", () => {
  it("reads each file once and hands out the cached samples after, at each rate", () => {
    assert.equal(prompt("goodbye"), prompt("goodbye", 16000));
    assert.equal(prompt("goodbye", 8000), prompt("goodbye", 8000));
    assert.notEqual(prompt("goodbye", 8000), prompt("goodbye"));
  });

  it("refuses a rate it has no prompts at", () => {
    assert.throws(() => prompt("goodbye", 48000 as 16000), RangeError);
  });

  it("names the missing file", () => {
    assert.throws(
      () => prompt("no-such-prompt" as PromptName),
      /"no-such-prompt" is missing: .*no-such-prompt\.wav/,
    );
  });
});

describe("numberPrompt", () => {
  it("has a prompt for each count from 0 to 20, and one for more", () => {
    assert.equal(numberPrompt(0), "number-0");
    assert.equal(numberPrompt(7), "number-7");
    assert.equal(numberPrompt(20), "number-20");
    assert.equal(numberPrompt(21), "number-many");
    assert.equal(numberPrompt(1000), "number-many");
    for (let n = 0; n <= 21; n++) assert.ok(PROMPT_NAMES.includes(numberPrompt(n)));
  });

  it("refuses what is not a count", () => {
    for (const n of [-1, 1.5, Number.NaN]) assert.throws(() => numberPrompt(n), RangeError);
  });
});

describe("concatPrompts", () => {
  for (const [rate, joined] of [
    [16000, () => concatPrompts(["participants", "number-3", "goodbye"])],
    [8000, () => concatPrompts(["participants", "number-3", "goodbye"], 8000)],
  ] as const) {
    it(`puts the prompts at ${rate} Hz in order with 150 ms of silence between each two`, () => {
      const names: PromptName[] = ["participants", "number-3", "goodbye"];
      const [first, second, third] = names.map((name) => prompt(name, rate)) as [
        Int16Array,
        Int16Array,
        Int16Array,
      ];
      const all = joined();
      const gap = (150 * rate) / 1000;
      assert.equal(all.length, first.length + second.length + third.length + 2 * gap);
      assert.deepEqual(all.subarray(0, first.length), first);
      assert.ok(all.subarray(first.length, first.length + gap).every((sample) => sample === 0));
      const secondStart = first.length + gap;
      assert.deepEqual(all.subarray(secondStart, secondStart + second.length), second);
      assert.deepEqual(all.subarray(all.length - third.length), third);
    });
  }

  it("takes the gap in milliseconds, rounded to whole samples at the rate", () => {
    const one = prompt("number-1");
    const two = prompt("number-2");
    assert.equal(concatPrompts(["number-1", "number-2"], 16000, 0).length, one.length + two.length);
    assert.equal(concatPrompts(["number-1", "number-2"], 16000, 12.53).length, one.length + two.length + 200);
    const narrowOne = prompt("number-1", 8000);
    const narrowTwo = prompt("number-2", 8000);
    assert.equal(
      concatPrompts(["number-1", "number-2"], 8000, 12.53).length,
      narrowOne.length + narrowTwo.length + 100,
    );
    assert.throws(() => concatPrompts(["number-1"], 16000, -1), RangeError);
  });

  it("gives a copy for one prompt and nothing for none", () => {
    const alone = concatPrompts(["muted"]);
    assert.deepEqual(alone, prompt("muted"));
    assert.notEqual(alone, prompt("muted"));
    assert.equal(concatPrompts([]).length, 0);
  });
});
