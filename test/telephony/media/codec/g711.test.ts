import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  alawToLinear,
  decodeAlaw,
  decodeMulaw,
  encodeAlaw,
  encodeMulaw,
  linearToAlaw,
  linearToMulaw,
  mulawToLinear,
} from "../../../../src/telephony/media/codec/g711.js";

/**
 * Quantization is monotonic, and every 16-bit input decodes back to within half the wider step next
 * to its decoder output level, or to the extreme level when beyond them. G.711 quantizes 14-bit
 * (μ-law) or 13-bit (A-law) samples, so the dropped low bits may add up to one `inputStep` of error.
 */
function assertQuantizationError(
  encode: (s: number) => number,
  decode: (c: number) => number,
  inputStep: number,
): void {
  const levels = [...new Set(Array.from({ length: 256 }, (_, code) => decode(code)))].sort((a, b) => a - b);
  const widerStep = new Map(
    levels.map((level, i) => [
      level,
      Math.max(level - (levels[i - 1] ?? level), (levels[i + 1] ?? level) - level),
    ]),
  );
  const lowest = levels[0] as number;
  const highest = levels[levels.length - 1] as number;
  let previous = lowest;
  for (let sample = -32768; sample < 32768; sample++) {
    const roundTrip = decode(encode(sample));
    assert.ok(roundTrip >= previous, `not monotonic at ${sample}`);
    previous = roundTrip;
    if (sample <= lowest || sample >= highest) {
      assert.equal(roundTrip, sample <= lowest ? lowest : highest, `sample ${sample}`);
    } else {
      const bound = (widerStep.get(roundTrip) as number) / 2 + inputStep;
      assert.ok(Math.abs(roundTrip - sample) <= bound, `sample ${sample} → ${roundTrip}`);
    }
  }
}

describe("G.711 μ-law", () => {
  it("decodes the reference code words", () => {
    assert.equal(mulawToLinear(0xff), 0);
    assert.equal(mulawToLinear(0x7f), 0); // negative zero
    assert.equal(mulawToLinear(0x80), 32124);
    assert.equal(mulawToLinear(0x00), -32124);
    assert.equal(mulawToLinear(0xfe), 8);
    assert.equal(mulawToLinear(0x7e), -8);
  });

  it("encodes zero, small and clipped samples", () => {
    assert.equal(linearToMulaw(0), 0xff);
    assert.equal(linearToMulaw(32767), 0x80);
    assert.equal(linearToMulaw(-32768), 0x00);
    assert.equal(linearToMulaw(8), 0xfe);
    assert.equal(linearToMulaw(-8), 0x7e);
  });

  it("re-encodes every code word to itself, except negative zero", () => {
    for (let code = 0; code < 256; code++) {
      assert.equal(linearToMulaw(mulawToLinear(code)), code === 0x7f ? 0xff : code, `code ${code}`);
    }
  });

  it("quantizes every 16-bit sample to within half a step", () => {
    assertQuantizationError(linearToMulaw, mulawToLinear, 4);
  });
});

describe("G.711 A-law", () => {
  it("decodes the reference code words", () => {
    assert.equal(alawToLinear(0xd5), 8);
    assert.equal(alawToLinear(0x55), -8);
    assert.equal(alawToLinear(0xaa), 32256);
    assert.equal(alawToLinear(0x2a), -32256);
  });

  it("encodes zero, small and clipped samples", () => {
    assert.equal(linearToAlaw(0), 0xd5);
    assert.equal(linearToAlaw(-1), 0x55);
    assert.equal(linearToAlaw(32767), 0xaa);
    assert.equal(linearToAlaw(-32768), 0x2a);
  });

  it("re-encodes every code word to itself", () => {
    for (let code = 0; code < 256; code++)
      assert.equal(linearToAlaw(alawToLinear(code)), code, `code ${code}`);
  });

  it("quantizes every 16-bit sample to within half a step", () => {
    assertQuantizationError(linearToAlaw, alawToLinear, 8);
  });
});

describe("G.711 frame conversion", () => {
  it("converts whole frames into the caller's buffers", () => {
    const samples = Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin(i / 5)));
    const payload = new Uint8Array(160);
    const decoded = new Int16Array(160);
    for (const [encode, decode, single] of [
      [encodeMulaw, decodeMulaw, linearToMulaw],
      [encodeAlaw, decodeAlaw, linearToAlaw],
    ] as const) {
      assert.equal(encode(samples, payload), 160);
      assert.deepEqual([...payload], [...samples].map(single));
      assert.equal(decode(payload, decoded), 160);
      for (let i = 0; i < 160; i++)
        assert.ok(Math.abs((decoded[i] as number) - (samples[i] as number)) <= 256);
    }
  });

  it("rejects an output buffer shorter than the input", () => {
    assert.throws(() => decodeMulaw(new Uint8Array(160), new Int16Array(80)), RangeError);
  });
});
