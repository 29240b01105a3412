import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { entryTone, exitTone, holdMusic, LoopingPlayer } from "../../../src/telephony/media/tones.js";
import { goertzelLevelDb } from "../../helpers/audio.js";

const SAMPLE_RATE = 8000;

function peakDbfs(samples: Int16Array): number {
  let peak = 0;
  for (const sample of samples) peak = Math.max(peak, Math.abs(sample));
  return 20 * Math.log10(peak / 32767);
}

function rmsDbfs(samples: Int16Array): number {
  let squares = 0;
  for (const sample of samples) squares += sample * sample;
  return 10 * Math.log10(squares / samples.length / (32767 * 32767));
}

/** The frequency among `candidates` with the most power in `samples`, and how far it leads the next. */
function dominant(samples: Int16Array, candidates: number[]): { frequency: number; lead: number } {
  const levels = candidates.map((frequency) => ({ frequency, level: goertzelLevelDb(samples, frequency) }));
  levels.sort((a, b) => b.level - a.level);
  const [first, second] = levels;
  assert.ok(first && second);
  return { frequency: first.frequency, lead: 10 ** ((first.level - second.level) / 10) };
}

const CANDIDATES = [440, 550, 660, 770, 880, 990, 1320, 1760];

describe("tones", () => {
  for (const [name, tone, notes] of [
    ["entry", entryTone, [660, 880]],
    ["exit", exitTone, [880, 660]],
  ] as const) {
    it(`${name} tone: 300 ms, two notes ${notes.join(" then ")} Hz, peak near -12 dBFS, silent at both ends`, () => {
      const samples = tone();
      assert.equal(samples.length, 2400);
      const peak = peakDbfs(samples);
      assert.ok(peak > -13 && peak < -11, `peak ${peak} dBFS`);
      // The middle 100 ms of each note, away from the envelopes.
      const first = dominant(samples.subarray(200, 1000), CANDIDATES);
      const second = dominant(samples.subarray(1400, 2200), CANDIDATES);
      assert.equal(first.frequency, notes[0]);
      assert.equal(second.frequency, notes[1]);
      assert.ok(first.lead > 100 && second.lead > 100, `leads ${first.lead} and ${second.lead}`);
      assert.ok(Math.abs(samples[0] as number) < 50 && Math.abs(samples.at(-1) as number) < 50);
      assert.equal(tone(), samples, "computed once");
    });
  }

  it("hold music: a 16 s loop around -18 dBFS that goes round without a seam", () => {
    const music = holdMusic();
    assert.equal(music.length, 16 * SAMPLE_RATE);
    const rms = rmsDbfs(music);
    assert.ok(rms > -19 && rms < -17, `RMS ${rms} dBFS`);
    const peak = peakDbfs(music);
    assert.ok(peak < -3, `peak ${peak} dBFS`);
    // The step from the last sample to the first is no larger than most steps inside the loop: a
    // note cut off at the end (instead of wrapped round to the start) makes it several times larger.
    const steps = Array.from({ length: music.length - 1 }, (_, i) =>
      Math.abs((music[i + 1] as number) - (music[i] as number)),
    ).sort((a, b) => a - b);
    const p90 = steps[Math.floor(0.9 * steps.length)] as number;
    const seam = Math.abs((music[0] as number) - (music.at(-1) as number));
    assert.ok(seam <= p90, `seam step ${seam}, 90th percentile step ${p90}`);
    assert.equal(holdMusic(), music, "computed once");
  });

  it("hold music has no click at the loop point", () => {
    const music = holdMusic();
    const length = music.length;
    const at = (k: number): number => music[(k + length) % length] as number;
    // A click is a sudden bend: a large second difference, taken here round the loop.
    const bend = (i: number): number => Math.abs(at(i + 1) - 2 * at(i) + at(i - 1));
    const bends = Array.from({ length }, (_, i) => bend(i)).sort((a, b) => a - b);
    const p99 = bends[Math.floor(0.99 * length)] as number;
    for (const i of [length - 1, 0])
      assert.ok(bend(i) <= p99, `bend ${bend(i)} at ${i}, 99th percentile ${p99}`);
  });

  it("LoopingPlayer fills frames from a sound and goes round at its end", () => {
    const sound = Int16Array.from({ length: 400 }, (_, i) => i);
    const player = new LoopingPlayer(sound);
    const frame = new Int16Array(160);
    const played: number[] = [];
    for (let n = 0; n < 6; n++) {
      player.next(frame);
      played.push(...frame);
    }
    assert.deepEqual(
      played,
      Array.from({ length: 960 }, (_, i) => i % 400),
    );
    assert.throws(() => new LoopingPlayer(new Int16Array(0)), RangeError);
  });
});
