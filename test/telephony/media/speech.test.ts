import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { resample, speak } from "../../../src/telephony/media/speech.js";
import { bandShareDb } from "../../helpers/spectrum.js";

const SAMPLE_RATE = 8000;
const WIDEBAND_RATE = 16000;
const ESPEAK_RATE = 22050;
const HAS_ESPEAK = !spawnSync("espeak-ng", ["--version"]).error;
/** Under CI the test command installs espeak-ng, so its absence there is a failure, not a skip. */
const SKIP_SPEECH =
  !HAS_ESPEAK && process.env.CI !== "true"
    ? "espeak-ng is not installed (apt-get install espeak-ng, or run scripts/test-full.sh)"
    : false;
/** espeak-ng may be slow to start on a loaded machine; the tests are about the audio, not speed. */
const TIMEOUT_MS = 30_000;

function sine(frequency: number, sampleRate: number, seconds: number, amplitude = 16000): Int16Array {
  const samples = new Int16Array(Math.round(seconds * sampleRate));
  for (let i = 0; i < samples.length; i++) {
    samples[i] = Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / sampleRate));
  }
  return samples;
}

function peak(samples: ArrayLike<number>): number {
  let loudest = 0;
  for (let i = 0; i < samples.length; i++) loudest = Math.max(loudest, Math.abs(samples[i] ?? 0));
  return loudest;
}

function rms(samples: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += (samples[i] ?? 0) ** 2;
  return Math.sqrt(sum / samples.length);
}

/** Power of `samples` at `frequency` (Goertzel). */
function powerAt(samples: ArrayLike<number>, frequency: number, sampleRate: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequency) / sampleRate);
  let previous = 0;
  let beforePrevious = 0;
  for (let i = 0; i < samples.length; i++) {
    const current = (samples[i] ?? 0) + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  return previous ** 2 + beforePrevious ** 2 - coefficient * previous * beforePrevious;
}

/** The middle of a signal, away from the edges where the filter meets the silence around it. */
function middle(samples: Float32Array, sampleRate: number): Float32Array {
  const edge = Math.round(0.05 * sampleRate);
  return samples.subarray(edge, samples.length - edge);
}

describe("resample", () => {
  it("turns a 1 kHz sine at 22050 Hz into a 1 kHz sine at 8000 Hz of the same level", () => {
    const output = resample(sine(1000, ESPEAK_RATE, 1), ESPEAK_RATE, SAMPLE_RATE);
    assert.equal(output.length, SAMPLE_RATE);
    const steady = middle(output, SAMPLE_RATE);
    const frequencies = Array.from({ length: 39 }, (_, i) => 100 * (i + 1));
    const powers = frequencies.map((frequency) => powerAt(steady, frequency, SAMPLE_RATE));
    assert.equal(frequencies[powers.indexOf(Math.max(...powers))], 1000);
    const levelDb = 20 * Math.log10(rms(steady) / (16000 / Math.SQRT2));
    assert.ok(Math.abs(levelDb) < 0.5, `1 kHz came out ${levelDb.toFixed(2)} dB off`);
  });

  it("attenuates a 6 kHz sine, above the new Nyquist frequency, by more than 30 dB", () => {
    const input = sine(6000, ESPEAK_RATE, 1);
    const steady = middle(resample(input, ESPEAK_RATE, SAMPLE_RATE), SAMPLE_RATE);
    const attenuationDb = 20 * Math.log10(rms(input) / rms(steady));
    assert.ok(attenuationDb > 30, `6 kHz attenuated by only ${attenuationDb.toFixed(1)} dB`);
  });
});

describe("speak", { skip: SKIP_SPEECH }, () => {
  it("speaks a sentence as 1 to 6 s of 16 kHz audio peaking near -3 dBFS, with its sibilants above 4 kHz", {
    timeout: TIMEOUT_MS,
  }, async () => {
    const samples = await speak("Alice invites you to Weekly sync", { timeoutMs: TIMEOUT_MS });
    assert.ok(samples, "espeak-ng gave no audio");
    const seconds = samples.length / WIDEBAND_RATE;
    assert.ok(seconds >= 1 && seconds <= 6, `${seconds} s of audio`);
    const peakDbfs = 20 * Math.log10(peak(samples) / 32767);
    assert.ok(Math.abs(peakDbfs + 3) < 0.1, `peak at ${peakDbfs.toFixed(2)} dBFS`);
    // The "s" and "c" of the sentence: 8 kHz speech brought up to 16 kHz would have nothing there.
    const highShare = bandShareDb(samples, WIDEBAND_RATE, 4000, 8000);
    assert.ok(highShare > -30, `only ${highShare.toFixed(1)} dB of the speech lies above 4 kHz`);
    // Energy piled up near 8 kHz would be aliasing the filter let by.
    const speechBand = [200, 300, 400, 500, 600, 800, 1000].map((f) => powerAt(samples, f, WIDEBAND_RATE));
    const nyquistBand = [7700, 7800, 7900].map((f) => powerAt(samples, f, WIDEBAND_RATE));
    const ratioDb = 10 * Math.log10(Math.max(...speechBand) / Math.max(...nyquistBand));
    assert.ok(ratioDb > 20, `7.7-7.9 kHz only ${ratioDb.toFixed(1)} dB below the speech band`);
  });

  it("speaks it as 8 kHz audio when asked, as long and as loud", { timeout: TIMEOUT_MS }, async () => {
    const text = "Alice invites you to Weekly sync";
    const wide = await speak(text, { timeoutMs: TIMEOUT_MS });
    const samples = await speak(text, { timeoutMs: TIMEOUT_MS, sampleRate: SAMPLE_RATE });
    assert.ok(wide && samples, "espeak-ng gave no audio");
    assert.notEqual(samples, wide);
    assert.ok(
      Math.abs(2 * samples.length - wide.length) <= 2,
      `${samples.length} and ${wide.length} samples`,
    );
    const seconds = samples.length / SAMPLE_RATE;
    assert.ok(seconds >= 1 && seconds <= 6, `${seconds} s of audio`);
    const peakDbfs = 20 * Math.log10(peak(samples) / 32767);
    assert.ok(Math.abs(peakDbfs + 3) < 0.1, `peak at ${peakDbfs.toFixed(2)} dBFS`);
    // Speech is loudest below 1 kHz; energy piled up near 4 kHz would be aliasing the filter let by.
    const speechBand = [200, 300, 400, 500, 600, 800, 1000].map((f) => powerAt(samples, f, SAMPLE_RATE));
    const nyquistBand = [3700, 3800, 3900].map((f) => powerAt(samples, f, SAMPLE_RATE));
    const ratioDb = 10 * Math.log10(Math.max(...speechBand) / Math.max(...nyquistBand));
    assert.ok(ratioDb > 20, `3.7-3.9 kHz only ${ratioDb.toFixed(1)} dB below the speech band`);
  });

  it("gives the cached array when the same text is spoken again at the same rate", {
    timeout: TIMEOUT_MS,
  }, async () => {
    const first = await speak("Bob invites you to Planning", { timeoutMs: TIMEOUT_MS });
    assert.ok(first);
    assert.equal(await speak("Bob invites you to Planning"), first);
    assert.equal(await speak("  Bob invites you to Planning\n"), first, "surrounding blanks are not text");
    const narrow = await speak("Bob invites you to Planning", { timeoutMs: TIMEOUT_MS, sampleRate: 8000 });
    assert.ok(narrow && narrow.length < first.length);
    assert.equal(await speak("Bob invites you to Planning", { sampleRate: 8000 }), narrow);
  });

  it("speaks text that looks like options, quotes and newlines", { timeout: TIMEOUT_MS }, async () => {
    // As an option, "-v xx" would pick a voice that does not exist and espeak-ng would fail.
    const optionLike = await speak("-v xx --help", { timeoutMs: TIMEOUT_MS });
    assert.ok(optionLike && optionLike.length > WIDEBAND_RATE / 2, "option-like text was not spoken");
    const quoted = await speak('Carol "the boss" O\'Neil\ninvites you to\n"Q3 review"', {
      timeoutMs: TIMEOUT_MS,
    });
    const firstLine = await speak('Carol "the boss" O\'Neil', { timeoutMs: TIMEOUT_MS });
    assert.ok(quoted && firstLine);
    assert.ok(quoted.length > firstLine.length * 1.5, "the lines after the first newline were not spoken");
  });

  it("gives null for empty or blank text", async () => {
    assert.equal(await speak(""), null);
    assert.equal(await speak(" \n\t"), null);
  });
});
