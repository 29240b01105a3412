/**
 * Sample-rate conversion, each direction a wideband room needs, cost and quality:
 * `node --import tsx bench/media/resample.ts`.
 *
 * Cost: a converter is fed a stream of 20 ms frames of speech-like audio after an unmeasured warm-up;
 * BENCH_ROUNDS (default 15) rounds of BENCH_FRAMES (default 2000) frames are timed in CPU time of the
 * process, and the fastest and the median round are printed in µs per frame (the fastest is the one
 * least disturbed by other work on a shared machine).
 *
 * Quality, measured the same way for every converter from its output: the level of a tone at the
 * passband edge (3.4 kHz for 8 ↔ 16 kHz, 7 kHz for 16 ↔ 48 kHz); the worst leak, over tones every
 * 100 Hz, of what must not reach the output (decimating: any tone above the lower rate's Nyquist
 * frequency, which would fold into the band; interpolating: the images of any tone of the lower band
 * above its Nyquist frequency), relative to the tone; the delay (where an impulse comes out, counting
 * any samples the converter held back); whether every 20 ms frame in gave a whole frame out; and the
 * garbage collections during the timed rounds (the wrappers around the packages below make one view
 * of the WebAssembly memory per frame: a few collections there are the bench's).
 *
 * The registry packages measured against ours are not dependencies: install them first, without
 * saving, to have them in the table:
 * `npm install --no-save @echogarden/speex-resampler-wasm @alexanderolsen/libsamplerate-js`.
 */
import { PerformanceObserver } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { createResampler, type SampleRate } from "../../src/telephony/media/resampler.js";
import { toneAmplitude as amplitudeAt } from "../../test/helpers/audio.js";

// Typed-array loops run about a quarter slower in V8 once any ArrayBuffer of the isolate has been
// detached (the optimized code must then check for it). The media worker detaches one whenever it
// hands a caller's recorded voice to the main thread (record-voice), and a WebAssembly module does when
// its memory grows: measure in that state, production's, and the same whichever packages are loaded.
const detached = new ArrayBuffer(8);
structuredClone(detached, { transfer: [detached] });

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const FRAMES = Number(process.env.BENCH_FRAMES ?? 2000);
const WARM_UP_FRAMES = 2000;
/** Frames in the prepared stream, cycled through. */
const STREAM_FRAMES = 50;
const AMPLITUDE = 16000;

const DIRECTIONS: readonly [SampleRate, SampleRate][] = [
  [8000, 16000],
  [16000, 8000],
  [16000, 48000],
  [48000, 16000],
];

/** One stream's converter, whoever made it: writes what it has into `output` and says how much. */
interface Converter {
  process(input: Int16Array, output: Int16Array): number;
}

interface Candidate {
  name: string;
  create(from: SampleRate, to: SampleRate): Promise<Converter>;
}

function frameSamples(rate: number): number {
  return (rate * 20) / 1000;
}

function speechLike(rate: number, samples: number): Int16Array {
  return Int16Array.from({ length: samples }, (_, i) => {
    const t = i / rate;
    return Math.round(
      6000 * Math.sin(2 * Math.PI * 300 * t) +
        3000 * Math.sin(2 * Math.PI * 1100 * t) +
        1000 * Math.sin(2 * Math.PI * 2900 * t),
    );
  });
}

function tone(frequency: number, rate: number, samples: number): Int16Array {
  return Int16Array.from({ length: samples }, (_, i) =>
    Math.round(AMPLITUDE * Math.sin((2 * Math.PI * frequency * i) / rate)),
  );
}

function cpuMicroseconds(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

interface Timing {
  fastest: number;
  median: number;
  /** Garbage collections during the timed rounds: none when nothing is allocated per frame. */
  collections: number;
}

async function time(converter: Converter, from: number, to: number): Promise<Timing> {
  const frameIn = frameSamples(from);
  const stream = speechLike(from, frameIn * STREAM_FRAMES);
  const frames = Array.from({ length: STREAM_FRAMES }, (_, f) =>
    stream.subarray(f * frameIn, (f + 1) * frameIn),
  );
  // Room for more than a frame: a converter that holds samples back may give more out later.
  const output = new Int16Array(2 * frameSamples(to));
  let sink = 0;
  for (let f = 0; f < WARM_UP_FRAMES; f++) converter.process(frames[f % STREAM_FRAMES] as Int16Array, output);
  const rounds: number[] = [];
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  observer.observe({ entryTypes: ["gc"] });
  for (let r = 0; r < ROUNDS; r++) {
    const start = cpuMicroseconds();
    for (let f = 0; f < FRAMES; f++) {
      sink += converter.process(frames[f % STREAM_FRAMES] as Int16Array, output);
    }
    rounds.push((cpuMicroseconds() - start) / FRAMES);
  }
  await sleep(100); // garbage collection entries reach the observer a little later
  observer.disconnect();
  if (sink === 0) throw new Error("the converter gave nothing out");
  rounds.sort((a, b) => a - b);
  return { fastest: rounds[0] ?? 0, median: rounds[Math.floor(rounds.length / 2)] ?? 0, collections };
}

/** Everything a fresh converter gives for `input` fed in 20 ms frames, and whether each frame gave a whole frame. */
async function convert(candidate: Candidate, from: SampleRate, to: SampleRate, input: Int16Array) {
  const converter = await candidate.create(from, to);
  const frameIn = frameSamples(from);
  const frameOut = frameSamples(to);
  const output = new Int16Array((input.length / frameIn) * frameOut * 2);
  const scratch = new Int16Array(2 * frameOut);
  let written = 0;
  let wholeFrames = true;
  for (let i = 0; i + frameIn <= input.length; i += frameIn) {
    const count = converter.process(input.subarray(i, i + frameIn), scratch);
    wholeFrames &&= count === frameOut;
    output.set(scratch.subarray(0, count), written);
    written += count;
  }
  return { output: output.subarray(0, written), heldBack: (input.length * to) / from - written, wholeFrames };
}

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / samples.length);
}

function decibels(ratio: number): number {
  return 20 * Math.log10(ratio);
}

/** 0.1 s of output from 0.15 s on: past any converter's start, a whole number of cycles of every tone used. */
function steady(output: Int16Array, rate: number): Int16Array {
  return output.subarray(0.15 * rate, 0.25 * rate);
}

const TONE_SAMPLES_SECONDS = 0.3;

async function edgeLevel(candidate: Candidate, from: SampleRate, to: SampleRate): Promise<number> {
  const edge = Math.min(from, to) === 8000 ? 3400 : 7000;
  const { output } = await convert(candidate, from, to, tone(edge, from, TONE_SAMPLES_SECONDS * from));
  return decibels(rms(steady(output, to)) / (AMPLITUDE / Math.SQRT2));
}

/** The loudest thing that should not be there, in dB relative to the tone that made it. */
async function worstLeak(candidate: Candidate, from: SampleRate, to: SampleRate): Promise<number> {
  let worst = 0;
  if (from > to) {
    // Every tone between the output's Nyquist frequency and the input's would fold into the output.
    for (let frequency = to / 2 + 50; frequency < from / 2; frequency += 100) {
      const { output } = await convert(
        candidate,
        from,
        to,
        tone(frequency, from, TONE_SAMPLES_SECONDS * from),
      );
      worst = Math.max(worst, rms(steady(output, to)) / (AMPLITUDE / Math.SQRT2));
    }
  } else {
    // A tone f of the input comes back at k·from ± f; those above the input's Nyquist frequency are images.
    for (let frequency = 50; frequency < from / 2; frequency += 100) {
      const { output } = await convert(
        candidate,
        from,
        to,
        tone(frequency, from, TONE_SAMPLES_SECONDS * from),
      );
      const window = steady(output, to);
      for (let k = from; k - frequency < to / 2; k += from) {
        for (const image of [k - frequency, k + frequency]) {
          if (image < to / 2) worst = Math.max(worst, amplitudeAt(window, image, to) / AMPLITUDE);
        }
      }
    }
  }
  return decibels(worst);
}

async function delayMs(candidate: Candidate, from: SampleRate, to: SampleRate): Promise<number> {
  const impulse = new Int16Array(from / 5);
  impulse[0] = AMPLITUDE;
  const { output, heldBack } = await convert(candidate, from, to, impulse);
  let peak = 0;
  for (let i = 0; i < output.length; i++) {
    if (Math.abs(output[i] as number) > Math.abs(output[peak] as number)) peak = i;
  }
  return ((peak + heldBack) * 1000) / to;
}

const ours: Candidate = {
  name: "Bridgeline (polyphase FIR, JS)",
  async create(from, to) {
    const resampler = createResampler(from, to);
    const length = frameSamples(to);
    // Ours takes an output of exactly one frame: a view of the caller's buffer, made when it changes.
    let buffer: Int16Array | undefined;
    let view: Int16Array = new Int16Array(0);
    return {
      process(input, output) {
        if (output !== buffer) {
          buffer = output;
          view = output.subarray(0, length);
        }
        resampler.process(input, view);
        return length;
      },
    };
  },
};

/** The parts of the Emscripten module of @echogarden/speex-resampler-wasm used here (SpeexDSP's API). */
interface SpeexModule {
  HEAP16: Int16Array;
  HEAPU32: Uint32Array;
  _malloc(bytes: number): number;
  _speex_resampler_init(
    channels: number,
    inRate: number,
    outRate: number,
    quality: number,
    error: number,
  ): number;
  _speex_resampler_process_int(
    state: number,
    channel: number,
    input: number,
    inputLength: number,
    output: number,
    outputLength: number,
  ): number;
}

function speex(name: string, module: SpeexModule, quality: number): Candidate {
  return {
    name,
    async create(from, to) {
      const state = module._speex_resampler_init(1, from, to, quality, module._malloc(4));
      const input = module._malloc(2 * frameSamples(48000));
      const output = module._malloc(2 * 2 * frameSamples(48000));
      const inputLength = module._malloc(4);
      const outputLength = module._malloc(4);
      return {
        process(samples, out) {
          module.HEAP16.set(samples, input >> 1);
          module.HEAPU32[inputLength >> 2] = samples.length;
          module.HEAPU32[outputLength >> 2] = out.length;
          module._speex_resampler_process_int(state, 0, input, inputLength, output, outputLength);
          const count = module.HEAPU32[outputLength >> 2] as number;
          out.set(module.HEAP16.subarray(output >> 1, (output >> 1) + count));
          return count;
        },
      };
    },
  };
}

/** The parts of @alexanderolsen/libsamplerate-js used here. */
interface LibsamplerateModule {
  ConverterType: Record<string, number>;
  create(
    channels: number,
    inRate: number,
    outRate: number,
    options: { converterType: number },
  ): Promise<{ full(input: Float32Array, output: Float32Array, length: { frames: number }): Float32Array }>;
}

function libsamplerate(name: string, module: LibsamplerateModule, type: string): Candidate {
  const converterType = module.ConverterType[type] as number;
  return {
    name,
    async create(from, to) {
      const converter = await module.create(1, from, to, { converterType });
      const floatIn = new Float32Array(frameSamples(48000));
      const floatOut = new Float32Array(2 * frameSamples(48000));
      const written = { frames: 0 };
      return {
        process(samples, out) {
          const input = floatIn.subarray(0, samples.length);
          for (let i = 0; i < samples.length; i++) input[i] = (samples[i] as number) / 32768;
          converter.full(input, floatOut, written);
          const count = Math.min(written.frames, out.length);
          for (let i = 0; i < count; i++) {
            out[i] = Math.min(32767, Math.max(-32768, Math.round((floatOut[i] as number) * 32768)));
          }
          return count;
        },
      };
    },
  };
}

/** A package that is not installed is left out of the table, with a word saying so. */
async function optional<T>(specifier: string): Promise<T | undefined> {
  try {
    return (await import(specifier)) as T;
  } catch {
    console.log(`(${specifier} is not installed: left out)`);
    return undefined;
  }
}

async function candidates(): Promise<Candidate[]> {
  const list = [ours];
  const speexSimd = await optional<{ default: () => Promise<SpeexModule> }>(
    "@echogarden/speex-resampler-wasm/simd",
  );
  const speexPlain = await optional<{ default: () => Promise<SpeexModule> }>(
    "@echogarden/speex-resampler-wasm",
  );
  if (speexSimd && speexPlain) {
    const simd = await speexSimd.default();
    const plain = await speexPlain.default();
    list.push(speex("SpeexDSP q3 (WASM SIMD)", simd, 3));
    list.push(speex("SpeexDSP q5 (WASM SIMD)", simd, 5));
    list.push(speex("SpeexDSP q5 (WASM)", plain, 5));
  }
  // A CommonJS package: its exports are the module's own under tsx, its default export under plain Node.
  const imported = await optional<LibsamplerateModule | { default: LibsamplerateModule }>(
    "@alexanderolsen/libsamplerate-js",
  );
  if (imported) {
    const src = "default" in imported ? imported.default : imported;
    list.push(libsamplerate("libsamplerate sinc fastest (WASM)", src, "SRC_SINC_FASTEST"));
    list.push(libsamplerate("libsamplerate sinc medium (WASM)", src, "SRC_SINC_MEDIUM_QUALITY"));
  }
  return list;
}

const list = await candidates();
console.log(
  `Sample-rate conversion per 20 ms frame, ${ROUNDS} rounds of ${FRAMES} frames, Node ${process.version}`,
);
const header = [
  "converter",
  "direction",
  "fastest µs",
  "median µs",
  "edge level dB",
  "worst alias/image dB",
  "delay ms",
  "whole frames",
  "GCs",
];
console.log(`| ${header.join(" | ")} |`);
console.log(`|${header.map((_, i) => (i < 2 ? " --- " : " ---: ")).join("|")}|`);
for (const [from, to] of DIRECTIONS) {
  for (const candidate of list) {
    const timing = await time(await candidate.create(from, to), from, to);
    const { wholeFrames } = await convert(candidate, from, to, speechLike(from, from));
    const cells = [
      candidate.name,
      `${from / 1000} → ${to / 1000} kHz`,
      timing.fastest.toFixed(2),
      timing.median.toFixed(2),
      (await edgeLevel(candidate, from, to)).toFixed(2),
      (await worstLeak(candidate, from, to)).toFixed(1),
      (await delayMs(candidate, from, to)).toFixed(2),
      wholeFrames ? "yes" : "no",
      timing.collections,
    ];
    console.log(`| ${cells.join(" | ")} |`);
  }
}
