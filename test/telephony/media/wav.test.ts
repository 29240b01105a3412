import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readWav, wavHeader, writeWav } from "../../../src/telephony/media/wav.js";

/** One RIFF chunk: id, little-endian size, body, and the pad byte an odd-sized body needs. */
function chunk(id: string, body: Buffer, declaredSize = body.length): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, "latin1");
  header.writeUInt32LE(declaredSize, 4);
  return Buffer.concat([header, body, Buffer.alloc(body.length & 1)]);
}

function riff(...chunks: Buffer[]): Buffer {
  const body = Buffer.concat([Buffer.from("WAVE", "latin1"), ...chunks]);
  return Buffer.concat([chunk("RIFF", body).subarray(0, 8), body]);
}

function fmt(format: number, channels: number, sampleRate: number, bits: number): Buffer {
  const body = Buffer.alloc(16);
  body.writeUInt16LE(format, 0);
  body.writeUInt16LE(channels, 2);
  body.writeUInt32LE(sampleRate, 4);
  body.writeUInt32LE((sampleRate * channels * bits) / 8, 8);
  body.writeUInt16LE((channels * bits) / 8, 12);
  body.writeUInt16LE(bits, 14);
  return chunk("fmt ", body);
}

function pcm(...samples: number[]): Buffer {
  const body = Buffer.alloc(samples.length * 2);
  samples.forEach((sample, i) => {
    body.writeInt16LE(sample, i * 2);
  });
  return body;
}

describe("wavHeader", () => {
  it("writes the canonical 44-byte header of 16-bit mono PCM", () => {
    const expected = Buffer.from(
      [
        "52494646 64010000 57415645", // "RIFF", 36 + 320 = 356 bytes follow, "WAVE"
        "666d7420 10000000", // "fmt ", 16 bytes
        "0100 0100 401f0000 803e0000 0200 1000", // PCM, mono, 8000 Hz, 16000 bytes/s, 2-byte frames, 16 bits
        "64617461 40010000", // "data", 320 bytes
      ]
        .join("")
        .replaceAll(" ", ""),
      "hex",
    );
    assert.deepEqual(wavHeader(8000, 320), expected);
  });
});

describe("writeWav", () => {
  it("puts the samples little-endian after the header, at 8000 Hz unless told otherwise", () => {
    const file = writeWav(Int16Array.of(0x1234, -2));
    assert.equal(file.length, 48);
    assert.deepEqual(file.subarray(0, 44), wavHeader(8000, 4));
    assert.deepEqual(file.subarray(44), Buffer.from([0x34, 0x12, 0xfe, 0xff]));
    assert.equal(writeWav(new Int16Array(0), 16000).readUInt32LE(24), 16000);
  });
});

describe("readWav", () => {
  it("reads back what writeWav wrote, extremes included", () => {
    const samples = Int16Array.of(0, 1, -1, 32767, -32768, 12345, -23456);
    const audio = readWav(writeWav(samples, 11025));
    assert.equal(audio.sampleRate, 11025);
    assert.deepEqual(audio.samples, samples);
  });

  it("reads a file that starts at an odd offset of its buffer", () => {
    const file = writeWav(Int16Array.of(-300, 300));
    const shifted = Buffer.alloc(file.length + 1);
    file.copy(shifted, 1);
    assert.deepEqual(readWav(shifted.subarray(1)).samples, Int16Array.of(-300, 300));
  });

  it("skips a LIST chunk, and the pad byte after an odd-sized one, before the data", () => {
    const list = chunk("LIST", Buffer.from("INFOx", "latin1"));
    assert.equal(list.length, 14);
    const audio = readWav(riff(fmt(1, 1, 8000, 16), list, chunk("data", pcm(5, -6, 7))));
    assert.deepEqual(audio.samples, Int16Array.of(5, -6, 7));
  });

  it("reads the whole samples present when the data chunk claims more than the file holds", () => {
    const truncated = writeWav(new Int16Array(100).fill(9)).subarray(0, 44 + 149);
    assert.deepEqual(readWav(truncated).samples, new Int16Array(74).fill(9));

    const streamed = riff(fmt(1, 1, 8000, 16), chunk("data", pcm(1, 2), 0xffffffff));
    assert.deepEqual(readWav(streamed).samples, Int16Array.of(1, 2));
  });

  it("takes WAVE_FORMAT_EXTENSIBLE whose sub-format is PCM", () => {
    const body = Buffer.alloc(40);
    fmt(0xfffe, 1, 8000, 16).copy(body, 0, 8, 24);
    body.writeUInt16LE(22, 16);
    body.writeUInt16LE(1, 24);
    const audio = readWav(riff(chunk("fmt ", body), chunk("data", pcm(3))));
    assert.deepEqual(audio.samples, Int16Array.of(3));
  });

  it("refuses stereo, 8-bit and non-PCM audio, saying why", () => {
    const data = chunk("data", pcm(0, 0));
    assert.throws(() => readWav(riff(fmt(1, 2, 8000, 16), data)), /2 channels; only mono/);
    assert.throws(() => readWav(riff(fmt(1, 1, 8000, 8), data)), /8-bit samples; only 16-bit/);
    assert.throws(() => readWav(riff(fmt(3, 1, 8000, 16), data)), /format 3 is not linear PCM/);
    assert.throws(() => readWav(riff(fmt(7, 1, 8000, 8), data)), /format 7 is not linear PCM/);
  });

  it("refuses what is not a complete WAV file", () => {
    assert.throws(() => readWav(Buffer.from("not a wav file at all", "latin1")), /no RIFF\/WAVE header/);
    assert.throws(() => readWav(Buffer.alloc(4)), /no RIFF\/WAVE header/);
    assert.throws(() => readWav(riff(fmt(1, 1, 8000, 16))), /no data chunk/);
    assert.throws(() => readWav(riff(chunk("data", pcm(1)))), /data chunk comes before any fmt chunk/);
    assert.throws(() => readWav(riff()), /no fmt chunk/);
  });
});
