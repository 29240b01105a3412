import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { numberPrompt, PROMPT_NAMES, type PromptName } from "../../../src/domain/prompt.js";
import { concatPrompts, prompt } from "../../../src/telephony/media/prompts.js";
import { readWav } from "../../../src/telephony/media/wav.js";

const SAMPLE_RATE = 8000;
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
function silentEnds(samples: Int16Array): { leading: number; trailing: number } {
  const first = samples.findIndex((sample) => Math.abs(sample) > SPEECH_THRESHOLD);
  let last = samples.length - 1;
  while (last > 0 && Math.abs(samples[last] ?? 0) <= SPEECH_THRESHOLD) last--;
  return { leading: first / SAMPLE_RATE, trailing: (samples.length - 1 - last) / SAMPLE_RATE };
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
    it(`${name}: 8 kHz, a sensible length, loud enough, silence trimmed to about 100 ms`, () => {
      const file = readWav(readFileSync(new URL(`${name}.wav`, PROMPT_DIRECTORY)));
      assert.equal(file.sampleRate, SAMPLE_RATE);
      const samples = prompt(name);
      assert.deepEqual(samples, file.samples);
      const seconds = samples.length / SAMPLE_RATE;
      assert.ok(seconds >= 0.3, `${name} lasts ${seconds} s`);
      assert.ok(seconds <= (LONG_PROMPTS.has(name) ? 30 : 12), `${name} lasts ${seconds} s`);
      const peak = peakDbfs(samples);
      assert.ok(peak > -12 && peak < -1, `${name} peaks at ${peak.toFixed(1)} dBFS`);
      const { leading, trailing } = silentEnds(samples);
      for (const end of [leading, trailing]) {
        assert.ok(end >= 0.05 && end <= 0.3, `${name} has ${leading} s of silence first, ${trailing} s last`);
      }
    });
  }
});

describe("prompt", () => {
  it("reads each file once and hands out the cached samples after", () => {
    assert.equal(prompt("goodbye"), prompt("goodbye"));
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
  it("puts the prompts in order with the gap of silence between each two", () => {
    const names: PromptName[] = ["participants", "number-3", "goodbye"];
    const [first, second, third] = names.map(prompt) as [Int16Array, Int16Array, Int16Array];
    const joined = concatPrompts(names);
    const gap = 150 * 8;
    assert.equal(joined.length, first.length + second.length + third.length + 2 * gap);
    assert.deepEqual(joined.subarray(0, first.length), first);
    assert.ok(joined.subarray(first.length, first.length + gap).every((sample) => sample === 0));
    const secondStart = first.length + gap;
    assert.deepEqual(joined.subarray(secondStart, secondStart + second.length), second);
    assert.deepEqual(joined.subarray(joined.length - third.length), third);
  });

  it("takes the gap in milliseconds, rounded to whole samples", () => {
    const one = prompt("number-1");
    const two = prompt("number-2");
    assert.equal(concatPrompts(["number-1", "number-2"], 0).length, one.length + two.length);
    assert.equal(concatPrompts(["number-1", "number-2"], 12.5).length, one.length + two.length + 100);
    assert.throws(() => concatPrompts(["number-1"], -1), RangeError);
  });

  it("gives a copy for one prompt and nothing for none", () => {
    const alone = concatPrompts(["muted"]);
    assert.deepEqual(alone, prompt("muted"));
    assert.notEqual(alone, prompt("muted"));
    assert.equal(concatPrompts([]).length, 0);
  });
});
