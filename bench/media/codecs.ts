/**
 * What encoding and decoding one 20 ms frame costs, per codec: `node --import tsx bench/media/codecs.ts`.
 * Each codec (a row of CODECS: add one there) gets one encoder and one decoder, kept across frames as
 * a call keeps them, and a speech-like signal at its sampling rate (harmonics of a gliding 120-240 Hz
 * voice under a syllable envelope, with a little noise), 5 s long and cycled. After an unmeasured
 * warm-up the frames are coded in BENCH_ROUNDS rounds (default 20) of BENCH_FRAMES frames (default
 * 5,000) each way, the codecs taking turns, and each codec's best round is kept, the median round
 * printed beside it. A round's cost is the process's CPU time over it (process.cpuUsage()), not the
 * time on the clock: on a shared machine the clock also counts the time other processes held the
 * core, while CPU time does not (what they do to the caches still shows).
 *
 * Printed per codec: CPU µs per frame each way, frames per second one core could encode (or decode),
 * what one call costs (50 frames a second each way) in percent of a core, the garbage collections
 * during the measured rounds (the coders should allocate nothing per frame), and the round trip's
 * signal-to-noise ratio on the test signal: a check that the codec really coded it, not a measure of
 * its quality (the signal's harmonics reach 8 kHz at 1/k, far brighter than speech above 4 kHz,
 * where G.722 has 2 bits a sample).
 */
import { PerformanceObserver } from "node:perf_hooks";
import { decodeMulaw, encodeMulaw } from "../../src/telephony/media/codec/g711.js";
import { G722Decoder, G722Encoder } from "../../src/telephony/media/codec/g722.js";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const WARM_UP_FRAMES = 2000;
const FRAME_MS = 20;
const SIGNAL_SECONDS = 5;

/** One codec's coders for one call: each keeps whatever state the codec has between frames. */
interface Coders {
  /** Encodes one frame of samples into `payload`; returns the payload's length. */
  encode(frame: Int16Array, payload: Uint8Array): number;
  /** Decodes one payload into `frame`; returns the number of samples. */
  decode(payload: Uint8Array, frame: Int16Array): number;
}

interface Codec {
  name: string;
  sampleRate: number;
  /** The largest payload of a 20 ms frame. */
  maxPayload: number;
  coders(): Coders;
}

const CODECS: Codec[] = [
  {
    name: "G.711 μ-law (PCMU)",
    sampleRate: 8000,
    maxPayload: 160,
    coders: () => ({ encode: encodeMulaw, decode: decodeMulaw }),
  },
  {
    name: "G.722",
    sampleRate: 16000,
    maxPayload: 160,
    coders: () => {
      const encoder = new G722Encoder();
      const decoder = new G722Decoder();
      return {
        encode: (frame, payload) => encoder.encode(frame, payload),
        decode: (payload, frame) => decoder.decode(payload, frame),
      };
    },
  },
];

/** Speech-like test audio at `sampleRate`, peaking near -10 dBFS. */
function speechLike(sampleRate: number): Int16Array {
  const samples = new Int16Array(SIGNAL_SECONDS * sampleRate);
  let phase = 0;
  let noise = 12345;
  for (let n = 0; n < samples.length; n++) {
    const t = n / sampleRate;
    const pitch = 180 + 60 * Math.sin(2 * Math.PI * 0.7 * t);
    phase += pitch / sampleRate;
    const syllable = Math.sin(Math.PI * ((t * 4) % 1)) ** 2;
    let voice = 0;
    for (let k = 1; k * pitch < sampleRate / 2 && k <= 30; k++)
      voice += Math.sin(2 * Math.PI * k * phase) / k;
    noise = (noise * 1664525 + 1013904223) >>> 0;
    samples[n] = Math.round(6000 * syllable * voice + 300 * (noise / 2 ** 32 - 0.5));
  }
  return samples;
}

/** The round trip's signal-to-noise ratio in dB, at the codec delay (0-64 samples) that suits best. */
function roundTripSnr(input: Int16Array, output: Int16Array): number {
  let best = Number.NEGATIVE_INFINITY;
  for (let delay = 0; delay <= 64; delay++) {
    let signal = 0;
    let error = 0;
    for (let n = 0; n + delay < output.length; n++) {
      const x = input[n] as number;
      signal += x * x;
      error += (x - (output[n + delay] as number)) ** 2;
    }
    best = Math.max(best, 10 * Math.log10(signal / error));
  }
  return best;
}

let collections = 0;
new PerformanceObserver((list) => {
  collections += list.getEntries().length;
}).observe({ entryTypes: ["gc"] });

/** A codec under measurement: its coders, its signal in frames and their payloads, its rounds. */
class Run {
  readonly coders: Coders;
  readonly frames: Int16Array[];
  readonly payloads: Uint8Array[];
  readonly payloadLengths: number[];
  readonly payloadViews: Uint8Array[];
  readonly decoded: Int16Array;
  readonly snr: number;
  readonly encodeRounds: number[] = [];
  readonly decodeRounds: number[] = [];
  collections = 0;
  private next = 0;

  constructor(readonly codec: Codec) {
    this.coders = codec.coders();
    const frameSamples = (codec.sampleRate * FRAME_MS) / 1000;
    const signal = speechLike(codec.sampleRate);
    this.frames = Array.from({ length: signal.length / frameSamples }, (_, i) =>
      signal.subarray(i * frameSamples, (i + 1) * frameSamples),
    );
    this.payloads = this.frames.map(() => new Uint8Array(codec.maxPayload));
    this.payloadLengths = this.frames.map(() => 0);
    this.payloadViews = this.payloads.map((payload) => payload.subarray(0, 0));
    this.decoded = new Int16Array(frameSamples);
    // One pass over the signal, with coders of its own, to measure the round trip.
    const check = codec.coders();
    const output = new Int16Array(signal.length);
    for (const [i, frame] of this.frames.entries()) {
      const payload = this.payloads[i] as Uint8Array;
      const length = check.encode(frame, payload);
      check.decode(payload.subarray(0, length), output.subarray(i * frameSamples));
    }
    this.snr = roundTripSnr(signal, output);
  }

  /** Encodes the next `count` frames; the mean time of one, in µs. */
  encode(count: number): number {
    const { coders, frames, payloads, payloadLengths } = this;
    let index = this.next;
    const start = process.cpuUsage();
    for (let n = 0; n < count; n++) {
      payloadLengths[index] = coders.encode(frames[index] as Int16Array, payloads[index] as Uint8Array);
      index = index + 1 === frames.length ? 0 : index + 1;
    }
    return cpuMicroseconds(start) / count;
  }

  /** Decodes the payloads of the same frames; the mean time of one, in µs. */
  decode(count: number): number {
    const { coders, payloads, payloadLengths, payloadViews, decoded } = this;
    let index = this.next;
    const start = process.cpuUsage();
    for (let n = 0; n < count; n++) {
      const length = payloadLengths[index] as number;
      let view = payloadViews[index] as Uint8Array;
      // A new view only when the length changes (a variable-rate codec), so that the loop allocates
      // nothing the codec does not.
      if (view.length !== length)
        view = payloadViews[index] = (payloads[index] as Uint8Array).subarray(0, length);
      coders.decode(view, decoded);
      index = index + 1 === payloads.length ? 0 : index + 1;
    }
    this.next = index;
    return cpuMicroseconds(start) / count;
  }
}

/** The process's CPU time since `start`, user and system, in µs. */
function cpuMicroseconds(start: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(start);
  return user + system;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const runs = CODECS.map((codec) => new Run(codec));
for (const run of runs) {
  run.encode(WARM_UP_FRAMES);
  run.decode(WARM_UP_FRAMES);
}
// The warm-up's collections are reported after it: let them arrive before counting.
await new Promise((resolve) => setTimeout(resolve, 100));
for (let round = 0; round < ROUNDS; round++) {
  for (const run of runs) {
    const before = collections;
    run.encodeRounds.push(run.encode(FRAMES));
    run.decodeRounds.push(run.decode(FRAMES));
    // The collector's entries arrive after the synchronous loop: give them a moment.
    await new Promise((resolve) => setTimeout(resolve, 20));
    run.collections += collections - before;
  }
}

console.log(
  `Codecs, 20 ms frames: ${ROUNDS} rounds of ${FRAMES} frames each way per codec (CPU time, best round, median in brackets), Node ${process.version}`,
);
const header = [
  "codec",
  "rate Hz",
  "encode µs",
  "decode µs",
  "encodes/s, one core",
  "decodes/s, one core",
  "one call, % of a core",
  "GCs",
  "round trip SNR dB",
];
console.log(`| ${header.join(" | ")} |`);
console.log(`| ${header.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`);
for (const run of runs) {
  const encodeUs = Math.min(...run.encodeRounds);
  const decodeUs = Math.min(...run.decodeRounds);
  const framesPerSecond = 1000 / FRAME_MS;
  const cells = [
    run.codec.name,
    run.codec.sampleRate,
    `${encodeUs.toFixed(2)} (${median(run.encodeRounds).toFixed(2)})`,
    `${decodeUs.toFixed(2)} (${median(run.decodeRounds).toFixed(2)})`,
    Math.round(1e6 / encodeUs).toLocaleString("en"),
    Math.round(1e6 / decodeUs).toLocaleString("en"),
    // A call encodes and decodes 50 frames a second: (encode + decode) × 50 µs per second of call.
    (((encodeUs + decodeUs) * framesPerSecond) / 1e4).toFixed(4),
    run.collections,
    run.snr.toFixed(1),
  ];
  console.log(`| ${cells.join(" | ")} |`);
}
