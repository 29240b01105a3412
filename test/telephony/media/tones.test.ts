import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { entryTone, exitTone, holdMusic, LoopingPlayer } from "../../../src/telephony/media/tones.js";
import { goertzelLevelDb } from "../../helpers/audio.js";
import { bandShareDb } from "../../helpers/spectrum.js";

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
function dominant(
  samples: Int16Array,
  rate: number,
  candidates: number[],
): { frequency: number; lead: number } {
  const levels = candidates.map((frequency) => ({
    frequency,
    level: goertzelLevelDb(samples, frequency, rate),
  }));
  levels.sort((a, b) => b.level - a.level);
  const [first, second] = levels;
  assert.ok(first && second);
  return { frequency: first.frequency, lead: 10 ** ((first.level - second.level) / 10) };
}

const CANDIDATES = [440, 550, 660, 770, 880, 990, 1320, 1760];
const RATES = [16000, 8000] as const;

describe("tones", () => {
  for (const rate of RATES) {
    const ms = (value: number): number => (value * rate) / 1000;
    for (const [name, tone, notes] of [
      ["entry", entryTone, [660, 880]],
      ["exit", exitTone, [880, 660]],
    ] as const) {
      it(`${name} tone at ${rate} Hz: 300 ms, two notes ${notes.join(" then ")} Hz, peak near -12 dBFS, silent at both ends`, () => {
        const samples = tone(rate);
        assert.equal(samples.length, ms(300));
        const peak = peakDbfs(samples);
        assert.ok(peak > -13 && peak < -11, `peak ${peak} dBFS`);
        // The middle 100 ms of each note, away from the envelopes.
        const first = dominant(samples.subarray(ms(25), ms(125)), rate, CANDIDATES);
        const second = dominant(samples.subarray(ms(175), ms(275)), rate, CANDIDATES);
        assert.equal(first.frequency, notes[0]);
        assert.equal(second.frequency, notes[1]);
        assert.ok(first.lead > 100 && second.lead > 100, `leads ${first.lead} and ${second.lead}`);
        assert.ok(Math.abs(samples[0] as number) < 50 && Math.abs(samples.at(-1) as number) < 50);
        assert.equal(tone(rate), samples, "computed once");
      });
    }

    it(`hold music at ${rate} Hz: a 16 s loop around -18 dBFS that goes round without a seam`, () => {
      const music = holdMusic(rate);
      assert.equal(music.length, 16 * rate);
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
      assert.equal(holdMusic(rate), music, "computed once");
    });

    it(`hold music at ${rate} Hz has no click at the loop point`, () => {
      const music = holdMusic(rate);
      const length = music.length;
      const at = (k: number): number => music[(k + length) % length] as number;
      // A click is a sudden bend: a large second difference, taken here round the loop.
      const bend = (i: number): number => Math.abs(at(i + 1) - 2 * at(i) + at(i - 1));
      const bends = Array.from({ length }, (_, i) => bend(i)).sort((a, b) => a - b);
      const p99 = bends[Math.floor(0.99 * length)] as number;
      for (const i of [length - 1, 0])
        assert.ok(bend(i) <= p99, `bend ${bend(i)} at ${i}, 99th percentile ${p99}`);
    });
  }

  it("defaults to 16 kHz", () => {
    assert.equal(entryTone(), entryTone(16000));
    assert.equal(exitTone(), exitTone(16000));
    assert.equal(holdMusic(), holdMusic(16000));
    assert.throws(() => holdMusic(44100 as 16000), RangeError);
  });

  it("hold music at 16 kHz has the arpeggio's harmonics above 4 kHz; at 8 kHz they are left out, not folded", () => {
    // The Am chord (4-8 s): its arpeggio's A5 (880 Hz) has a 5th harmonic at 4,400 Hz, which at
    // 8 kHz would fold to 3,600 Hz, where no note of the chord has a harmonic.
    const chord = (rate: number) => holdMusic(rate as 8000 | 16000).subarray(4 * rate, 8 * rate);
    const wide = chord(16000);
    const above = bandShareDb(wide, 16000, 4000, 8000);
    assert.ok(above > -50, `only ${above.toFixed(1)} dB of the 16 kHz music lies above 4 kHz`);
    const harmonic = goertzelLevelDb(wide, 4400, 16000);
    assert.ok(harmonic > -70, `4,400 Hz at ${harmonic.toFixed(1)} dBFS`);
    const narrow = chord(8000);
    const folded = goertzelLevelDb(narrow, 3600, 8000);
    assert.ok(
      folded < harmonic - 30,
      `3,600 Hz at ${folded.toFixed(1)} dBFS, 4,400 Hz at ${harmonic.toFixed(1)}`,
    );
  });

  it("LoopingPlayer fills frames of any length from a sound and goes round at its end", () => {
    const sound = Int16Array.from({ length: 400 }, (_, i) => i);
    for (const frameLength of [160, 320, 7]) {
      const player = new LoopingPlayer(sound);
      const frame = new Int16Array(frameLength);
      const played: number[] = [];
      for (let n = 0; n < 6; n++) {
        player.next(frame);
        played.push(...frame);
      }
      assert.deepEqual(
        played,
        Array.from({ length: 6 * frameLength }, (_, i) => i % 400),
      );
    }
    assert.throws(() => new LoopingPlayer(new Int16Array(0)), RangeError);
  });
});

it("a looping player started at a position goes on from there, wrapping at the end", () => {
  const samples = Int16Array.from([1, 2, 3, 4, 5]);
  const player = new LoopingPlayer(samples, 13);
  assert.equal(player.position, 3);
  const out = new Int16Array(4);
  player.next(out);
  assert.deepEqual([...out], [4, 5, 1, 2]);
  assert.equal(player.position, 2);
});
