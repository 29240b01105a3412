import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { crc32 } from "node:zlib";
import {
  G722_FRAME_BYTES,
  G722_FRAME_SAMPLES,
  G722Decoder,
  G722Encoder,
} from "../../../../src/telephony/media/codec/g722.js";
import { toneAmplitude } from "../../../helpers/audio.js";

/**
 * The reference fixtures come from scripts/g722-reference.py (its header says how they are made and
 * checked): the Recommendation's QMFs around spandsp's sub-band coders, at 64 kbit/s.
 */
function fixture(name: string): Buffer {
  return readFileSync(new URL(`../../../fixtures/g722/${name}`, import.meta.url));
}

function pcmFixture(name: string): Int16Array {
  const bytes = fixture(name);
  const samples = new Int16Array(bytes.length / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(2 * i);
  return samples;
}

/** Where two sequences first differ (in length or in a value), or -1 when they are equal. */
function firstDifference(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  const length = Math.min(actual.length, expected.length);
  for (let i = 0; i < length; i++) if (actual[i] !== expected[i]) return i;
  return actual.length === expected.length ? -1 : length;
}

/** Encodes `samples` in consecutive pieces of the given sizes (cycled), one encoder throughout. */
function encodeInPieces(samples: Int16Array, sizes: number[]): Uint8Array {
  const encoder = new G722Encoder();
  const octets = new Uint8Array(samples.length / 2);
  for (let start = 0, piece = 0; start < samples.length; piece++) {
    const end = Math.min(samples.length, start + (sizes[piece % sizes.length] as number));
    assert.equal(encoder.encode(samples.subarray(start, end), octets.subarray(start / 2)), (end - start) / 2);
    start = end;
  }
  return octets;
}

/** Decodes `octets` in consecutive pieces of the given sizes (cycled), one decoder throughout. */
function decodeInPieces(octets: Uint8Array, sizes: number[]): Int16Array {
  const decoder = new G722Decoder();
  const samples = new Int16Array(octets.length * 2);
  for (let start = 0, piece = 0; start < octets.length; piece++) {
    const end = Math.min(octets.length, start + (sizes[piece % sizes.length] as number));
    assert.equal(decoder.decode(octets.subarray(start, end), samples.subarray(2 * start)), 2 * (end - start));
    start = end;
  }
  return samples;
}

function decibels(ratio: number): number {
  return 20 * Math.log10(ratio);
}

function sine(frequency: number, amplitude: number, count: number): Int16Array {
  return Int16Array.from({ length: count }, (_, n) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * frequency * n) / 16000)),
  );
}

/**
 * G.722 Appendix II's digital test sequence T1C2.XMT (an overload test): its 768 input words between
 * the 16 synchronisation words (0x0001) at each end. The outputs are checked by the CRC-32s the ITU
 * publishes for the little-endian binary files, sync words included (bt2r2.cod: the octet in the
 * high byte; bt3l2.rc1 and bt3h2.rc0: rL and rH, doubled to 16 bits, in mode 1).
 */
const T1C2_INPUT = [
  ...Array.from({ length: 319 }, () => [0x8000, 0x7ffe]).flat(),
  0x8000,
  0x0000,
  0xb1e0,
  0xc000,
  ...Array.from({ length: 42 }, () => [0x8000, 0x7ffe, 0x8000]).flat(),
];
const T1C2_CRC = 0x2d604685;
const T2R2_CRC = 0x344ea5d0;
const T3L2_RC1_CRC = 0xaf00f31f;
const T3H2_RC0_CRC = 0x5330ae2e;

function sequenceCrc(words: number[]): number {
  const sync = Array.from({ length: 16 }, () => 0x0001);
  const all = [...sync, ...words, ...sync];
  const bytes = Buffer.alloc(all.length * 2);
  for (const [i, word] of all.entries()) bytes.writeUInt16LE(word & 0xffff, 2 * i);
  return crc32(bytes);
}

describe("G.722", () => {
  const input = pcmFixture("input.s16");
  const encoded = fixture("input.g722");

  it("encodes the reference signal to the reference octets, 20 ms at a time", () => {
    const octets = encodeInPieces(input, [G722_FRAME_SAMPLES]);
    const at = firstDifference(octets, encoded);
    assert.equal(at, -1, `octet ${at} (frame ${Math.floor(at / G722_FRAME_BYTES)}) differs`);
  });

  it("decodes the reference octets to the reference samples, a packet at a time", () => {
    const expected = pcmFixture("input.out.s16");
    const at = firstDifference(decodeInPieces(encoded, [G722_FRAME_BYTES]), expected);
    assert.equal(at, -1, `sample ${at} differs`);
  });

  it("decodes random octets, codes an encoder never sends included, to the reference samples", () => {
    const octets = fixture("random.g722");
    assert.ok(octets.some((octet) => (octet & 0x3f) < 4));
    const at = firstDifference(decodeInPieces(octets, [G722_FRAME_BYTES]), pcmFixture("random.out.s16"));
    assert.equal(at, -1, `sample ${at} differs`);
  });

  it("reproduces Appendix II's sequence T1C2 with the QMFs by-passed (mode 1)", () => {
    assert.equal(sequenceCrc(T1C2_INPUT), T1C2_CRC);
    const encoder = new G722Encoder();
    const decoder = new G722Decoder();
    const reconstructed = new Int32Array(2);
    const octets: number[] = [];
    const lowBand: number[] = [];
    const highBand: number[] = [];
    for (const word of T1C2_INPUT) {
      // The appendix's words are 16-bit; the sub-band coders take 15 bits, in both bands at once.
      const sample = ((word << 16) >> 16) >> 1;
      const octet = encoder.encodeSubBands(sample, sample);
      octets.push(octet << 8);
      decoder.decodeSubBands(octet, reconstructed);
      lowBand.push((reconstructed[0] as number) << 1);
      highBand.push((reconstructed[1] as number) << 1);
    }
    assert.equal(sequenceCrc(octets), T2R2_CRC, "T2R2.COD");
    assert.equal(sequenceCrc(lowBand), T3L2_RC1_CRC, "T3L2.RC1");
    assert.equal(sequenceCrc(highBand), T3H2_RC0_CRC, "T3H2.RC0");
  });

  it("carries its state across calls: any split of the input gives what one call gives", () => {
    const whole = encodeInPieces(input, [input.length]);
    assert.equal(firstDifference(whole, encoded), -1);
    for (const sizes of [[2], [6, 318, 2, 642], [G722_FRAME_SAMPLES * 3 + 2]]) {
      assert.equal(firstDifference(encodeInPieces(input, sizes), whole), -1, `pieces of ${sizes}`);
    }
    const decoded = decodeInPieces(encoded, [encoded.length]);
    for (const sizes of [[1], [7, 160, 333], [G722_FRAME_BYTES * 2 + 1]]) {
      assert.equal(firstDifference(decodeInPieces(encoded, sizes), decoded), -1, `pieces of ${sizes}`);
    }
  });

  it("passes 1 kHz and 6 kHz tones at their level, without the sub-band split's alias", () => {
    // One second at -10 dBFS; the first 100 ms, while the quantizers adapt, are not measured.
    const amplitude = 32767 * 10 ** (-10 / 20);
    for (const frequency of [1000, 6000]) {
      const tone = sine(frequency, amplitude, 16000);
      const decoded = decodeInPieces(encodeInPieces(tone, [G722_FRAME_SAMPLES]), [G722_FRAME_BYTES]);
      const heard = decoded.subarray(1600);
      const level = decibels(
        toneAmplitude(heard, frequency, 16000) / toneAmplitude(tone.subarray(1600), frequency, 16000),
      );
      assert.ok(Math.abs(level) < 1, `${frequency} Hz comes out at ${level.toFixed(2)} dB`);
      // The QMF folds each band about 4 kHz; the receive QMF must cancel the fold at 8 kHz − f.
      const alias = decibels(
        toneAmplitude(heard, 8000 - frequency, 16000) / toneAmplitude(heard, frequency, 16000),
      );
      assert.ok(alias < -40, `${frequency} Hz leaves ${alias.toFixed(1)} dB at ${8000 - frequency} Hz`);
    }
  });

  it("turns digital silence into idle noise under -72 dBFS, not into sound", () => {
    // The quantizer's smallest steps are not zero, so silence comes back as a sample or two of noise.
    const octets = encodeInPieces(new Int16Array(16000), [G722_FRAME_SAMPLES]);
    const decoded = decodeInPieces(octets, [G722_FRAME_BYTES]);
    const loudest = decoded.reduce((peak, sample) => Math.max(peak, Math.abs(sample)), 0);
    assert.ok(loudest <= 8, `silence decoded to a peak of ${loudest}`);
  });

  it("refuses an odd number of samples and outputs too small", () => {
    const encoder = new G722Encoder();
    assert.throws(() => encoder.encode(new Int16Array(3), new Uint8Array(2)), RangeError);
    assert.throws(() => encoder.encode(new Int16Array(320), new Uint8Array(159)), RangeError);
    assert.throws(() => new G722Decoder().decode(new Uint8Array(160), new Int16Array(319)), RangeError);
  });
});
