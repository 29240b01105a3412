import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  maxWavDataBytes,
  readWavHeader,
  sameWavFormat,
  writeWavHeader,
} from "../../src/domain/wav-header.js";
import { wavHeader } from "../../src/telephony/media/wav.js";

const MONO_16K = { channels: 1, sampleRate: 16_000, bitsPerSample: 16 };

describe("WAV headers", () => {
  it("writes the canonical header of 16-bit mono PCM (as the recorder does), and reads its format and data size back", () => {
    // RIFF <36 + data>, WAVE, fmt <16> PCM 1 channel 16000 Hz 32000 B/s align 2 16-bit, data <32000>.
    const canonical = Buffer.from(
      "52494646247d000057415645666d74201000000001000100803e0000007d00000200100064617461007d0000",
      "hex",
    );
    assert.deepEqual(writeWavHeader(MONO_16K, 32_000), canonical);
    assert.deepEqual(wavHeader(16_000, 32_000), canonical, "the recorder's");
    for (const [sampleRate, dataBytes] of [
      [8000, 0],
      [16_000, 32_000],
    ] as const) {
      const format = { channels: 1, sampleRate, bitsPerSample: 16 };
      assert.deepEqual(readWavHeader(wavHeader(sampleRate, dataBytes)), { format, dataBytes });
    }
  });

  it("writes block align and byte rate for stereo and wider samples", () => {
    const header = writeWavHeader({ channels: 2, sampleRate: 48_000, bitsPerSample: 24 }, 600);
    assert.equal(header.readUInt16LE(32), 6, "block align");
    assert.equal(header.readUInt32LE(28), 288_000, "byte rate");
    assert.deepEqual(readWavHeader(header).format, { channels: 2, sampleRate: 48_000, bitsPerSample: 24 });
  });

  it("refuses what is not a canonical PCM header", () => {
    assert.throws(() => readWavHeader(Buffer.alloc(44)), /not a canonical WAV header/);
    assert.throws(() => readWavHeader(wavHeader(8000, 0).subarray(0, 40)), /not a canonical WAV header/);
    const alaw = wavHeader(8000, 0);
    alaw.writeUInt16LE(6, 20);
    assert.throws(() => readWavHeader(alaw), /format 6 is not linear PCM/);
  });

  it("counts at most what the 32-bit RIFF size can hold, in whole blocks", () => {
    const max = maxWavDataBytes(MONO_16K);
    assert.equal(max % 2, 0);
    assert.ok(max + 36 <= 0xffff_ffff && max + 36 + 2 > 0xffff_ffff);
    assert.equal(writeWavHeader(MONO_16K, max).readUInt32LE(4), max + 36);
    assert.throws(() => writeWavHeader(MONO_16K, max + 2), RangeError);
  });

  it("tells formats apart by rate, channels and sample width", () => {
    assert.ok(sameWavFormat(MONO_16K, { ...MONO_16K }));
    assert.ok(!sameWavFormat(MONO_16K, { ...MONO_16K, sampleRate: 8000 }));
    assert.ok(!sameWavFormat(MONO_16K, { ...MONO_16K, channels: 2 }));
    assert.ok(!sameWavFormat(MONO_16K, { ...MONO_16K, bitsPerSample: 8 }));
  });
});
