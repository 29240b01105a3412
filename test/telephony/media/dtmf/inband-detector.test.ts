import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { decodeMulaw, encodeMulaw } from "../../../../src/telephony/media/codec/g711.js";
import {
  type DetectorRate,
  InbandDtmfDetector,
} from "../../../../src/telephony/media/dtmf/inband-detector.js";
import { seededRandom } from "../../../helpers/seeded-random.js";

/** The rate of the suite running: each runs every test at its rate (set in its `before`). */
let SAMPLE_RATE: DetectorRate = 8000;
let FRAME_LENGTH = 160;
const KEYS = "123A456B789C*0#D";
const ROW_FREQUENCIES = [697, 770, 852, 941];
const COLUMN_FREQUENCIES = [1209, 1336, 1477, 1633];

/** Linear amplitude of a sine peaking at `dbfs`, 0 dBFS being 32767. */
const amplitude = (dbfs: number) => 32767 * 10 ** (dbfs / 20);
const samples = (ms: number) => Math.round((ms * SAMPLE_RATE) / 1000);

/** Audio under construction, as floating-point samples. */
class Signal {
  readonly samples: number[] = [];

  silence(ms: number): this {
    for (let i = samples(ms); i > 0; i--) this.samples.push(0);
    return this;
  }

  /** A DTMF key: each tone peaking at `dbfs`, `rowDb` and `columnDb` added to one tone. */
  key(
    key: string,
    ms: number,
    options: { dbfs?: number; rowDb?: number; columnDb?: number; deviation?: number } = {},
  ) {
    const { dbfs = -10, rowDb = 0, columnDb = 0, deviation = 0 } = options;
    const index = KEYS.indexOf(key);
    assert.ok(index >= 0, `not a key: ${key}`);
    const row = (ROW_FREQUENCIES[index >> 2] as number) * (1 + deviation);
    const column = (COLUMN_FREQUENCIES[index & 3] as number) * (1 + deviation);
    const rowAmplitude = amplitude(dbfs + rowDb);
    const columnAmplitude = amplitude(dbfs + columnDb);
    const start = this.samples.length;
    for (let i = 0; i < samples(ms); i++) {
      const t = (start + i) / SAMPLE_RATE;
      this.samples.push(
        rowAmplitude * Math.sin(2 * Math.PI * row * t) + columnAmplitude * Math.sin(2 * Math.PI * column * t),
      );
    }
    return this;
  }

  /** Adds white Gaussian noise `snrDb` below the mean square of the samples from `from` on. */
  noise(snrDb: number, random: () => number, from = 0): this {
    let squares = 0;
    for (let i = from; i < this.samples.length; i++) squares += (this.samples[i] as number) ** 2;
    const deviation = Math.sqrt(squares / (this.samples.length - from) / 10 ** (snrDb / 10));
    for (let i = 0; i < this.samples.length; i++) {
      const gaussian = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      this.samples[i] = (this.samples[i] as number) + deviation * gaussian;
    }
    return this;
  }

  /** Whole frames, the last one padded with silence, clipped to 16 bits. */
  frames(): Int16Array[] {
    const frameCount = Math.ceil(this.samples.length / FRAME_LENGTH);
    const audio = new Int16Array(frameCount * FRAME_LENGTH);
    for (let i = 0; i < this.samples.length; i++) {
      audio[i] = Math.max(-32768, Math.min(32767, Math.round(this.samples[i] as number)));
    }
    const frames: Int16Array[] = [];
    for (let i = 0; i < audio.length; i += FRAME_LENGTH) frames.push(audio.subarray(i, i + FRAME_LENGTH));
    return frames;
  }
}

/** The keys a fresh detector reports for the frames, followed by 200 ms of silence. */
function detect(frames: Int16Array[]): string {
  let keys = "";
  const detector = new InbandDtmfDetector((key) => {
    keys += key;
  }, SAMPLE_RATE);
  for (const frame of frames) detector.process(frame);
  for (const frame of new Signal().silence(200).frames()) detector.process(frame);
  return keys;
}

/** The signal: one key lasting `ms`, starting `offset` samples into silence. */
function lone(key: string, ms: number, offset: number, options: Parameters<Signal["key"]>[2] = {}): Signal {
  const signal = new Signal().silence((offset * 1000) / SAMPLE_RATE);
  return signal.key(key, ms, options).silence(100);
}

for (const rate of [8000, 16000] as const)
  describe(`InbandDtmfDetector at ${rate} Hz`, () => {
    before(() => {
      SAMPLE_RATE = rate;
      FRAME_LENGTH = rate / 50;
    });

    it("reports each of the 16 keys once, in order, for 100 ms tones with 60 ms pauses at −10 dBFS", () => {
      const signal = new Signal().silence(60);
      for (const key of KEYS) signal.key(key, 100).silence(60);
      assert.equal(detect(signal.frames()), KEYS);
    });

    it("reports a key while it still sounds, within 60 ms of its start", () => {
      const frames = new Signal().silence(40).key("5", 300).frames();
      let reportedAtMs = -1;
      let fedMs = 0;
      const detector = new InbandDtmfDetector(() => {
        reportedAtMs = fedMs;
      }, SAMPLE_RATE);
      for (const frame of frames) {
        fedMs += 20;
        detector.process(frame);
      }
      assert.ok(reportedAtMs > 40 && reportedAtMs <= 40 + 60, `reported after ${reportedAtMs} ms`);
    });

    it("detects 50 ms tones in white noise 20 dB below them", () => {
      const random = seededRandom(4733);
      for (const [index, key] of [...KEYS].entries()) {
        const signal = lone(key, 50, index * 11).noise(20, random);
        assert.equal(detect(signal.frames()), key, `key ${key}`);
      }
    });

    it("detects 40 ms tones and ignores 30 ms ones, however they fall across frames", () => {
      for (let offset = 0; offset < FRAME_LENGTH; offset += 7) {
        const key = KEYS[offset % 16] as string;
        assert.equal(detect(lone(key, 40, offset).frames()), key, `40 ms ${key} at offset ${offset}`);
        assert.equal(detect(lone(key, 30, offset).frames()), "", `30 ms ${key} at offset ${offset}`);
      }
    });

    it("accepts tones off frequency by the 1.5 % Q.24 allows", () => {
      for (const deviation of [-0.015, 0.015]) {
        const signal = new Signal().silence(60);
        for (const key of KEYS) signal.key(key, 60, { deviation }).silence(60);
        assert.equal(detect(signal.frames()), KEYS, `deviation ${deviation}`);
      }
    });

    it("accepts twist within the 8 dB normal and 4 dB reverse limits, and rejects more", () => {
      for (const key of KEYS) {
        assert.equal(detect(lone(key, 100, 0, { rowDb: -10 }).frames()), "", `${key}, row 10 dB weaker`);
        assert.equal(
          detect(lone(key, 100, 0, { columnDb: -10 }).frames()),
          "",
          `${key}, column 10 dB weaker`,
        );
        assert.equal(detect(lone(key, 100, 0, { rowDb: -6 }).frames()), "", `${key}, row 6 dB weaker`);
        assert.equal(detect(lone(key, 100, 0, { rowDb: -3 }).frames()), key, `${key}, row 3 dB weaker`);
        assert.equal(detect(lone(key, 100, 0, { columnDb: -6 }).frames()), key, `${key}, column 6 dB weaker`);
      }
    });

    it("ignores tones below the −30 dBm0 floor and hears quiet ones above it", () => {
      // A full-scale sine is +3.17 dBm0 in μ-law: two tones at −28 dBm0 each sum to −25 dBm0.
      const quiet = -28 - 3.17;
      const faint = -40 - 3.17;
      for (const key of KEYS) {
        assert.equal(detect(lone(key, 60, 0, { dbfs: quiet }).frames()), key, `${key} at −28 dBm0 per tone`);
        assert.equal(detect(lone(key, 100, 0, { dbfs: faint }).frames()), "", `${key} at −40 dBm0 per tone`);
      }
    });

    it("hears nothing in several seconds of voiced speech", () => {
      // A 150 Hz voice with 5 Hz vibrato of ±4 %, its harmonics shaped by formants gliding between
      // vowels, and syllables 4 times a second: its harmonics sweep across every DTMF frequency.
      const random = seededRandom(150);
      const vowels = [
        [730, 1090, 2440],
        [270, 2290, 3010],
        [530, 1840, 2480],
        [570, 840, 2410],
        [660, 1720, 2410],
      ];
      const signal = new Signal();
      let phase = 0;
      const phases = Float64Array.from({ length: 26 }, () => 2 * Math.PI * random());
      for (let i = 0; i < samples(6000); i++) {
        const t = i / SAMPLE_RATE;
        const fundamental = 150 * (1 + 0.04 * Math.sin(2 * Math.PI * 5 * t));
        phase += (2 * Math.PI * fundamental) / SAMPLE_RATE;
        const position = (t * 2) % vowels.length;
        const from = vowels[Math.floor(position)] as number[];
        const to = vowels[(Math.floor(position) + 1) % vowels.length] as number[];
        const glide = position % 1;
        const syllable = 0.5 - 0.5 * Math.cos(2 * Math.PI * 4 * t);
        let sample = 0;
        for (let harmonic = 1; harmonic * fundamental < 3800; harmonic++) {
          const frequency = harmonic * fundamental;
          let gain = 0.1;
          for (let formant = 0; formant < 3; formant++) {
            const centre = (from[formant] as number) * (1 - glide) + (to[formant] as number) * glide;
            gain += 1 / (1 + ((frequency - centre) / 80) ** 2);
          }
          sample += (gain / harmonic) * Math.sin(harmonic * phase + (phases[harmonic] as number));
        }
        signal.samples.push(amplitude(-12) * syllable * sample);
      }
      assert.equal(detect(signal.noise(30, random).frames()), "");
    });

    it("hears nothing in a C major chord of rich notes, nor in a 1 kHz tone", () => {
      const chord = new Signal();
      const notes = [523.25, 659.25, 783.99];
      for (let i = 0; i < samples(3000); i++) {
        let sample = 0;
        for (const note of notes) {
          for (let harmonic = 1; harmonic * note < 3800; harmonic++) {
            sample += Math.sin((2 * Math.PI * harmonic * note * i) / SAMPLE_RATE) / harmonic;
          }
        }
        chord.samples.push(amplitude(-16) * sample);
      }
      assert.equal(detect(chord.frames()), "");

      const tone = new Signal();
      for (let i = 0; i < samples(3000); i++)
        tone.samples.push(amplitude(-10) * Math.sin((2 * Math.PI * 1000 * i) / SAMPLE_RATE));
      assert.equal(detect(tone.frames()), "");
    });

    it("hears nothing in two notes on a key's frequencies that carry octave overtones", () => {
      // What DTMF generators never make: each tone with its second harmonic only 6 dB below it.
      for (const key of KEYS) {
        const index = KEYS.indexOf(key);
        const notes = [ROW_FREQUENCIES[index >> 2] as number, COLUMN_FREQUENCIES[index & 3] as number];
        const signal = new Signal().silence(60);
        for (let i = 0; i < samples(200); i++) {
          let sample = 0;
          for (const note of notes) {
            sample += Math.sin((2 * Math.PI * note * i) / SAMPLE_RATE);
            sample += 0.5 * Math.sin((2 * Math.PI * 2 * note * i) / SAMPLE_RATE);
          }
          signal.samples.push(amplitude(-12) * sample);
        }
        assert.equal(detect(signal.silence(60).frames()), "", `key ${key}`);
        assert.equal(detect(lone(key, 200, 0, { dbfs: -12 }).frames()), key, `key ${key} without overtones`);
      }
    });

    it("does not take a key drowned in noise 3 dB louder than itself for a digit", () => {
      const random = seededRandom(0);
      for (const key of KEYS)
        assert.equal(detect(new Signal().key(key, 200).noise(-3, random).frames()), "", `key ${key}`);
    });

    it("reports the same key twice for two presses 60 ms apart, and once across a 20 ms dropout", () => {
      assert.equal(detect(new Signal().key("7", 100).silence(60).key("7", 100).frames()), "77");
      assert.equal(detect(new Signal().key("7", 100).silence(20).key("7", 100).frames()), "7");
    });

    it("reports a different key at once, without a pause between them", () => {
      assert.equal(detect(new Signal().key("1", 80).key("2", 80).frames()), "12");
    });

    it("still detects every key after a μ-law round trip", () => {
      const signal = new Signal().silence(60);
      for (const key of KEYS) signal.key(key, 60, { dbfs: -20 }).silence(60);
      const encoded = new Uint8Array(FRAME_LENGTH);
      const decoded = signal.frames().map((frame) => {
        encodeMulaw(frame, encoded);
        const out = new Int16Array(FRAME_LENGTH);
        decodeMulaw(encoded, out);
        return out;
      });
      assert.equal(detect(decoded), KEYS);
    });

    it("gives the same keys whatever the frame length", () => {
      const signal = new Signal().silence(30);
      for (const key of "159D") signal.key(key, 70).silence(50);
      const audio = Int16Array.from(signal.frames().flatMap((frame) => [...frame]));
      let keys = "";
      const detector = new InbandDtmfDetector((key) => {
        keys += key;
      }, SAMPLE_RATE);
      for (let i = 0, length = 1; i < audio.length; i += length, length = (length * 7) % 331) {
        detector.process(audio.subarray(i, i + length));
      }
      assert.equal(keys, "159D");
    });

    it("forgets a tone in progress on reset", () => {
      let keys = "";
      const detector = new InbandDtmfDetector((key) => {
        keys += key;
      }, SAMPLE_RATE);
      const [first, second, third] = new Signal().key("9", 60).frames();
      assert.ok(first && second && third);
      detector.process(first);
      detector.reset();
      detector.process(second);
      detector.process(new Int16Array(FRAME_LENGTH));
      detector.process(new Int16Array(FRAME_LENGTH));
      assert.equal(keys, "");

      for (const frame of new Signal().key("9", 100).frames()) detector.process(frame);
      detector.reset();
      for (const frame of new Signal().key("9", 100).frames()) detector.process(frame);
      assert.equal(keys, "99");
    });
  });

describe("InbandDtmfDetector across rates", () => {
  it("follows the rate of the audio fed: 8 kHz keys, then 16 kHz ones, then 8 kHz again", () => {
    let keys = "";
    const detector = new InbandDtmfDetector((key) => {
      keys += key;
    });
    const feed = (rate: DetectorRate, key: string) => {
      SAMPLE_RATE = rate;
      FRAME_LENGTH = rate / 50;
      for (const frame of new Signal().silence(60).key(key, 80).silence(60).frames())
        detector.process(frame, frame.length, rate);
    };
    feed(8000, "1");
    assert.equal(detector.sampleRate, 8000);
    feed(16000, "2");
    assert.equal(detector.sampleRate, 16000);
    feed(16000, "3");
    feed(8000, "4");
    assert.equal(keys, "1234");
    // A 16 kHz tone read as 8 kHz audio sounds an octave low: no key.
    SAMPLE_RATE = 16000;
    FRAME_LENGTH = 320;
    for (const frame of new Signal().key("5", 100).silence(60).frames())
      detector.process(frame, frame.length, 8000);
    assert.equal(keys, "1234");
  });
});
