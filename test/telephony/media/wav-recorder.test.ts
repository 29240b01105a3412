import assert from "node:assert/strict";
import fs from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { readWav } from "../../../src/telephony/media/wav.js";
import { WavRecorder } from "../../../src/telephony/media/wav-recorder.js";
import { FRAME_SAMPLES, SAMPLE_RATE, ToneGenerator } from "../../helpers/audio.js";

/**
 * Writes `seconds` of a 440 Hz sine in frames of `frameSamples` (20 ms at 8 kHz unless given) at
 * `sampleRate`; returns every sample written.
 */
function writeSine(
  recorder: WavRecorder,
  seconds: number,
  sampleRate = SAMPLE_RATE,
  frameSamples = FRAME_SAMPLES,
): Int16Array {
  const all = new Int16Array(Math.round(seconds * sampleRate));
  const generator = new ToneGenerator(440, 0.5, sampleRate);
  const frame = new Int16Array(frameSamples);
  for (let offset = 0; offset < all.length; offset += frameSamples) {
    const part = frame.subarray(0, Math.min(frameSamples, all.length - offset));
    generator.fill(part);
    // The recorder must copy the frame: the caller reuses it for the next one.
    recorder.write(part);
    all.set(part, offset);
  }
  return all;
}

interface HeaderSizes {
  fileBytes: number;
  riffSize: number;
  dataSize: number;
}

function headerSizes(file: Buffer): HeaderSizes {
  assert.ok(file.length >= 44, `the file has ${file.length} bytes, less than a header`);
  assert.equal(file.toString("latin1", 0, 4), "RIFF");
  assert.equal(file.toString("latin1", 8, 16), "WAVEfmt ");
  assert.equal(file.toString("latin1", 36, 40), "data");
  return { fileBytes: file.length, riffSize: file.readUInt32LE(4), dataSize: file.readUInt32LE(40) };
}

describe("WavRecorder", () => {
  let directory: string;
  let fileNumber = 0;
  const nextPath = () => path.join(directory, `recording-${++fileNumber}.wav`);

  before(() => {
    directory = fs.mkdtempSync(path.join(os.tmpdir(), "wav-recorder-"));
  });
  after(() => fs.rmSync(directory, { recursive: true, force: true }));

  it("writes a header for no samples at open", async () => {
    const filePath = nextPath();
    const recorder = await WavRecorder.open(filePath);
    const sizes = headerSizes(fs.readFileSync(filePath));
    assert.deepEqual(sizes, { fileBytes: 44, riffSize: 36, dataSize: 0 });
    const wav = readWav(fs.readFileSync(filePath));
    assert.equal(wav.sampleRate, 8000);
    assert.equal(wav.samples.length, 0);
    await recorder.close();
  });

  it("records 3.5 s of a sine that reads back sample for sample after close", async () => {
    const filePath = nextPath();
    const recorder = await WavRecorder.open(filePath);
    const written = writeSine(recorder, 3.5);
    assert.equal(recorder.seconds, 3.5);
    await recorder.close();

    const file = fs.readFileSync(filePath);
    assert.deepEqual(headerSizes(file), { fileBytes: 44 + 56_000, riffSize: 36 + 56_000, dataSize: 56_000 });
    const wav = readWav(file);
    assert.equal(wav.sampleRate, 8000);
    assert.deepEqual(wav.samples, written);
  });

  it("records at the rate it is opened with, in frames of any length", async () => {
    const filePath = nextPath();
    const recorder = await WavRecorder.open(filePath, () => {}, 16000);
    assert.equal(recorder.sampleRate, 16000);
    assert.equal(readWav(fs.readFileSync(filePath)).sampleRate, 16000, "the header at open");
    const wideband = writeSine(recorder, 1.5, 16000, 320);
    assert.equal(recorder.seconds, 1.5);
    // A second at 16 kHz has gathered: the periodic append has started.
    const deadline = Date.now() + 10_000;
    while (headerSizes(fs.readFileSync(filePath)).dataSize === 0) {
      assert.ok(Date.now() < deadline, "a second of 16 kHz audio was never appended");
      await sleep(20);
    }
    const odd = writeSine(recorder, 0.25, 16000, 333);
    assert.equal(recorder.seconds, 1.75);
    await recorder.close();

    const file = fs.readFileSync(filePath);
    assert.deepEqual(headerSizes(file), { fileBytes: 44 + 56_000, riffSize: 36 + 56_000, dataSize: 56_000 });
    assert.equal(file.readUInt32LE(28), 32_000, "bytes per second");
    const wav = readWav(file);
    assert.equal(wav.sampleRate, 16000);
    assert.deepEqual(wav.samples.subarray(0, wideband.length), wideband);
    assert.deepEqual(wav.samples.subarray(wideband.length), odd);
  });

  it("refuses a rate that is not a whole positive number of hertz", async () => {
    await assert.rejects(
      WavRecorder.open(nextPath(), () => {}, 0),
      RangeError,
    );
  });

  it("leaves a playable file of everything up to the last periodic append when the process dies", async () => {
    const filePath = nextPath();
    const recorder = await WavRecorder.open(filePath);
    try {
      const written = writeSine(recorder, 2.3);
      // No close and no flush: what the file holds now is what a crash would leave.
      const deadline = Date.now() + 10_000;
      let file = fs.readFileSync(filePath);
      while (headerSizes(file).dataSize < 2 * 16_000) {
        assert.ok(Date.now() < deadline, "the periodic append never covered 2 s");
        await sleep(20);
        file = fs.readFileSync(filePath);
      }
      const { fileBytes, riffSize, dataSize } = headerSizes(file);
      assert.equal(riffSize, 36 + dataSize);
      assert.ok(44 + dataSize <= fileBytes, "the header counts only samples already in the file");
      assert.equal(dataSize % 2, 0);
      const wav = readWav(file.subarray(0, 44 + dataSize));
      assert.ok(wav.samples.length >= 2 * SAMPLE_RATE);
      assert.deepEqual(wav.samples, written.subarray(0, wav.samples.length));
    } finally {
      await recorder.close();
    }
  });

  it("flush() writes a partial second and fixes the header", async () => {
    const filePath = nextPath();
    const recorder = await WavRecorder.open(filePath);
    const written = writeSine(recorder, 0.3);
    assert.deepEqual(headerSizes(fs.readFileSync(filePath)).dataSize, 0, "0.3 s is not yet due");
    await recorder.flush();
    const file = fs.readFileSync(filePath);
    assert.deepEqual(headerSizes(file), { fileBytes: 44 + 4800, riffSize: 36 + 4800, dataSize: 4800 });
    assert.deepEqual(readWav(file).samples, written);
    await recorder.close();
    assert.throws(() => recorder.write(new Int16Array(FRAME_SAMPLES)), /closed/);
  });

  it("never has two file writes in flight, however fast frames come", async () => {
    const probe = await open(nextPath(), "w");
    const prototype = Object.getPrototypeOf(probe) as FileHandle;
    await probe.close();
    const realWrite = prototype.write;
    let inFlight = 0;
    let mostInFlight = 0;
    let writes = 0;
    // A counting wrapper around the real write: the bytes still go to the file.
    prototype.write = function (this: FileHandle, ...args: unknown[]) {
      inFlight += 1;
      writes += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      return (realWrite as (...a: unknown[]) => Promise<unknown>).apply(this, args).finally(() => {
        inFlight -= 1;
      });
    } as FileHandle["write"];
    const filePath = nextPath();
    const all = new Int16Array(30 * SAMPLE_RATE);
    try {
      const recorder = await WavRecorder.open(filePath);
      const generator = new ToneGenerator(1000);
      const frame = new Int16Array(FRAME_SAMPLES);
      for (let offset = 0; offset < all.length; offset += FRAME_SAMPLES) {
        recorder.write(generator.fill(frame));
        all.set(frame, offset);
        // Let some appends start and finish in the middle of the burst.
        if (offset % (7 * FRAME_SAMPLES) === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      await Promise.all([recorder.flush(), recorder.flush(), recorder.close()]);
    } finally {
      prototype.write = realWrite;
    }
    assert.equal(mostInFlight, 1);
    // Appends gather at least a second each (2 writes: samples, then header), 30 s in at most 30.
    assert.ok(writes <= 1 + 2 * 30, `${writes} writes for 30 s`);
    const file = fs.readFileSync(filePath);
    assert.deepEqual(headerSizes(file), {
      fileBytes: 44 + 480_000,
      riffSize: 36 + 480_000,
      dataSize: 480_000,
    });
    assert.deepEqual(readWav(file).samples, all);
  });
});
