import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  convertSampleRate,
  createResampler,
  FrameConverter,
  type SampleRate,
} from "../../../src/telephony/media/resampler.js";
import { toneAmplitude as amplitudeAt } from "../../helpers/audio.js";

const AMPLITUDE = 16000;
/** The filters are designed for ±0.1 dB in the passband; the rest is room for the 16-bit rounding. */
const PASSBAND_DB = 0.12;
/** The filters are designed for 70 dB in the stopband; the rest is room for the 16-bit rounding. */
const STOPBAND_DB = 69;

interface Direction {
  from: SampleRate;
  to: SampleRate;
  /** Where the output lags the input, in output samples and in milliseconds. */
  delay: number;
  delayMs: number;
}

const DIRECTIONS: Direction[] = [
  { from: 8000, to: 16000, delay: 38, delayMs: 2.375 },
  { from: 16000, to: 8000, delay: 19, delayMs: 2.375 },
  { from: 16000, to: 48000, delay: 69, delayMs: 1.4375 },
  { from: 48000, to: 16000, delay: 23, delayMs: 1.4375 },
];

function name({ from, to }: Direction): string {
  return `${from} Hz to ${to} Hz`;
}

function tone(frequency: number, rate: number, seconds: number, amplitude = AMPLITUDE): Int16Array {
  return Int16Array.from({ length: Math.round(seconds * rate) }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / rate)),
  );
}

/** Deterministic white noise over the whole band (a linear congruential generator), about -10 dBFS. */
function noise(samples: number): Int16Array {
  let state = 12345;
  return Int16Array.from({ length: samples }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return ((state >>> 16) - 32768) >> 2;
  });
}

/** The whole input converted in one call. */
function convert(direction: Direction, input: Int16Array): Int16Array {
  const output = new Int16Array((input.length * direction.to) / direction.from);
  createResampler(direction.from, direction.to).process(input, output);
  return output;
}

/** 0.1 s from 0.05 s on: past the filter's start, a whole number of cycles of any multiple of 10 Hz. */
function steady(output: Int16Array, rate: number): Int16Array {
  return output.subarray(0.05 * rate, 0.15 * rate);
}

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / samples.length);
}

function decibels(ratio: number): number {
  return 20 * Math.log10(ratio);
}

function frequencies(first: number, last: number, step: number): number[] {
  const list: number[] = [];
  for (let frequency = first; frequency <= last; frequency += step) list.push(frequency);
  return list;
}

describe("createResampler", () => {
  it("offers 8000 ↔ 16000 and 16000 ↔ 48000 only", () => {
    assert.throws(() => createResampler(8000, 48000), RangeError);
    assert.throws(() => createResampler(48000, 8000), RangeError);
    assert.throws(() => createResampler(16000, 16000), RangeError);
    for (const { from, to } of DIRECTIONS) {
      const resampler = createResampler(from, to);
      assert.equal(resampler.fromRate, from);
      assert.equal(resampler.toRate, to);
    }
  });

  it("refuses an output buffer of the wrong length, and a decimator's input not a multiple of its factor", () => {
    assert.throws(
      () => createResampler(8000, 16000).process(new Int16Array(160), new Int16Array(319)),
      RangeError,
    );
    assert.throws(
      () => createResampler(16000, 8000).process(new Int16Array(320), new Int16Array(161)),
      RangeError,
    );
    assert.throws(
      () => createResampler(48000, 16000).process(new Int16Array(961), new Int16Array(320)),
      RangeError,
    );
  });
});

for (const direction of DIRECTIONS) {
  const { from, to } = direction;
  const lowerNyquist = Math.min(from, to) / 2;
  const passband = lowerNyquist === 4000 ? [300, 1000, 2000, 3400] : [300, 1000, 3400, 6000, 7000];

  describe(`resampling ${name(direction)}`, () => {
    it(`passes ${passband.join(", ")} Hz at their level, within ${PASSBAND_DB} dB`, () => {
      for (const frequency of passband) {
        const output = steady(convert(direction, tone(frequency, from, 0.2)), to);
        const componentDb = decibels(amplitudeAt(output, frequency, to) / AMPLITUDE);
        const totalDb = decibels(rms(output) / (AMPLITUDE / Math.SQRT2));
        assert.ok(
          Math.abs(componentDb) < PASSBAND_DB,
          `${frequency} Hz came out at ${componentDb.toFixed(3)} dB`,
        );
        // Nothing else came out beside the tone.
        assert.ok(Math.abs(totalDb - componentDb) < 0.001, `${frequency} Hz: ${totalDb} dB in all`);
      }
    });

    if (from > to) {
      const folding = frequencies(lowerNyquist + 100, from / 2 - 100, lowerNyquist === 4000 ? 100 : 500);
      it(`folds nothing back: a tone of ${folding[0]}-${folding.at(-1)} Hz comes out ${STOPBAND_DB} dB down or more`, () => {
        for (const frequency of folding) {
          const output = steady(convert(direction, tone(frequency, from, 0.2)), to);
          const levelDb = decibels(rms(output) / (AMPLITUDE / Math.SQRT2));
          assert.ok(levelDb < -STOPBAND_DB, `${frequency} Hz came out at ${levelDb.toFixed(1)} dB`);
        }
      });

      if (to === 8000) {
        it("keeps a 6 kHz tone of a wideband leg out of a narrowband leg, and off 2 kHz where it would fold", () => {
          const output = steady(convert(direction, tone(6000, from, 0.2, 32000)), to);
          assert.ok(decibels(rms(output) / (32000 / Math.SQRT2)) < -STOPBAND_DB);
          assert.ok(decibels(amplitudeAt(output, 2000, to) / 32000) < -STOPBAND_DB);
        });
      }
    } else {
      const band = frequencies(100, lowerNyquist - 100, lowerNyquist === 4000 ? 100 : 200);
      it(`makes no image above ${lowerNyquist} Hz louder than -${STOPBAND_DB} dB of any tone of ${band[0]}-${band.at(-1)} Hz`, () => {
        for (const frequency of band) {
          const output = steady(convert(direction, tone(frequency, from, 0.2)), to);
          // A tone f at the input rate is also the tones k·from ± f; those under the output's Nyquist frequency are the images.
          for (let multiple = from; multiple - frequency < to / 2; multiple += from) {
            for (const image of [multiple - frequency, multiple + frequency]) {
              if (image >= to / 2) continue;
              const imageDb = decibels(amplitudeAt(output, image, to) / AMPLITUDE);
              assert.ok(
                imageDb < -STOPBAND_DB,
                `${frequency} Hz made ${image} Hz at ${imageDb.toFixed(1)} dB`,
              );
            }
          }
        }
      });

      if (from === 8000) {
        it("keeps a 2 kHz tone of a narrowband leg from sounding at 6 kHz in a wideband room", () => {
          const output = steady(convert(direction, tone(2000, from, 0.2, 32000)), to);
          assert.ok(decibels(amplitudeAt(output, 6000, to) / 32000) < -STOPBAND_DB);
          assert.ok(Math.abs(decibels(amplitudeAt(output, 2000, to) / 32000)) < PASSBAND_DB);
        });
      }
    }

    it(`delays by ${direction.delay} samples (${direction.delayMs} ms), symmetrically (linear phase)`, () => {
      const resampler = createResampler(from, to);
      assert.equal(resampler.delay, direction.delay);
      assert.equal((resampler.delay * 1000) / to, direction.delayMs);
      const impulse = new Int16Array(from / 50);
      impulse[0] = 20000;
      const output = new Int16Array(to / 50);
      resampler.process(impulse, output);
      let peak = 0;
      for (let i = 1; i < output.length; i++) if ((output[i] as number) > (output[peak] as number)) peak = i;
      assert.equal(peak, direction.delay);
      for (let k = 1; k <= direction.delay; k++) {
        assert.equal(
          output[direction.delay - k],
          output[direction.delay + k],
          `${k} samples either side of the peak`,
        );
      }
    });

    it("gives frame by frame exactly what it gives for the whole stream at once", () => {
      const input = noise(from);
      const whole = convert(direction, input);
      // 20 ms frames, then uneven ones: odd lengths and outputs not a multiple of the loops' steps.
      const factor = Math.max(from, to) / Math.min(from, to);
      const unit = from > to ? factor : 1;
      const uneven = [1, 3, 79, 161, 2, 480, 7, 1000, 5].map((units) => units * unit);
      for (const lengths of [[from / 50], uneven]) {
        const resampler = createResampler(from, to);
        const framed = new Int16Array(whole.length);
        let position = 0;
        for (let n = 0; position < input.length; n++) {
          const length = Math.min(lengths[n % lengths.length] as number, input.length - position);
          const frameOut = (length * to) / from;
          const outputStart = (position * to) / from;
          resampler.process(
            input.subarray(position, position + length),
            framed.subarray(outputStart, outputStart + frameOut),
          );
          position += length;
        }
        assert.deepEqual(framed, whole, `frames of ${lengths.join(", ")} samples`);
      }
    });

    it("turns silence into silence, also once a sound has passed through", () => {
      assert.ok(convert(direction, new Int16Array(from / 5)).every((sample) => sample === 0));
      const soundThenSilence = new Int16Array(from / 2);
      soundThenSilence.set(noise(from / 4));
      const output = convert(direction, soundThenSilence);
      const silent = output.subarray(to / 4 + 2 * direction.delay);
      assert.ok(silent.length > 0 && silent.every((sample) => sample === 0));
    });

    it("passes a constant level as a constant, within the passband ripple and the stopband's leak", () => {
      const level = 10000;
      const output = convert(direction, new Int16Array(from / 10).fill(level)).subarray(to / 50);
      const factor = Math.max(from, to) / Math.min(from, to);
      // A constant is 0 Hz; its images at the input rate's multiples are in the stopband.
      const ripple = level * (10 ** (0.1 / 20) - 1);
      const leak = level * (factor - 1) * 10 ** (-70 / 20);
      for (const sample of output) {
        assert.ok(Math.abs(sample - level) <= ripple + leak + 1, `${sample} for ${level}`);
      }
      assert.ok(Math.max(...output) - Math.min(...output) <= 2 * leak + 1);
    });

    it("saturates a full-scale square wave's overshoot at the rails instead of wrapping", () => {
      // 100 Hz, +32767 then -32768: the filter rings past full scale right after every edge.
      const halfPeriod = from / 200;
      const input = Int16Array.from({ length: from / 5 }, (_, i) =>
        Math.floor(i / halfPeriod) % 2 === 0 ? 32767 : -32768,
      );
      const output = convert(direction, input);
      assert.ok(output.includes(32767) && output.includes(-32768), "the overshoot reached the rails");
      for (let m = 2 * direction.delay; m < output.length; m++) {
        // Where output sample m sits in the input, in input samples; the edges lie half-way between two.
        const position = ((m - direction.delay) * from) / to;
        const sinceEdge = (position + 0.5) % halfPeriod;
        const distance = Math.min(sinceEdge, halfPeriod - sinceEdge);
        if (distance < 0.5) continue;
        const positive = Math.floor((position + 0.5) / halfPeriod) % 2 === 0;
        assert.equal((output[m] as number) > 0, positive, `output sample ${m} at input position ${position}`);
      }
    });
  });
}

describe("convertSampleRate", () => {
  it("takes a whole sound up to 16 kHz in step with it: same duration, each sample where it was", () => {
    const narrow = new Int16Array(801);
    for (let n = 0; n < narrow.length; n++)
      narrow[n] = Math.round(8000 * Math.sin((2 * Math.PI * 500 * n) / 8000));
    const wide = convertSampleRate(narrow, 8000, 16000);
    assert.equal(wide.length, 1602);
    // The delay is taken off: sample 2n of the result is sample n of the original (a 500 Hz tone is
    // well inside the passband, so only the filter's ±0.1 dB ripple is left: 90 of 8000 at most).
    for (let n = 100; n < 700; n += 37)
      assert.ok(Math.abs((wide[2 * n] as number) - (narrow[n] as number)) < 120, `sample ${n}`);
  });

  it("takes a whole sound down to 8 kHz in step with it, and leaves a sound at its own rate as it is", () => {
    const wide = new Int16Array(1601);
    for (let n = 0; n < wide.length; n++)
      wide[n] = Math.round(8000 * Math.sin((2 * Math.PI * 500 * n) / 16000));
    const narrow = convertSampleRate(wide, 16000, 8000);
    assert.equal(narrow.length, 801);
    for (let n = 50; n < 750; n += 41)
      assert.ok(Math.abs((narrow[n] as number) - (wide[2 * n] as number)) < 120, `sample ${n}`);
    assert.equal(convertSampleRate(wide, 16000, 16000), wide);
  });
});

describe("FrameConverter", () => {
  it("starts from silence after a skipped tick: no tail of the audio before the gap", () => {
    const loud = new Int16Array(160).fill(20000);
    const silent = new Int16Array(160);
    const out = new Int16Array(320);
    const converter = new FrameConverter(8000, 16000);
    converter.process(loud, out, 1);
    converter.process(silent, out, 5);
    assert.ok(
      out.every((sample) => sample === 0),
      "after the gap, silence converts to silence",
    );
    // Tick after tick the history is kept: the loud frame's tail is in the next frame, as it should be.
    converter.process(loud, out, 6);
    converter.process(silent, out, 7);
    assert.ok(
      out.some((sample) => Math.abs(sample) > 1000),
      "the filter's tail carries into the next tick",
    );
  });
});
