/**
 * Speech made at run time, for sentences only known then (names of people and conferences): espeak-ng
 * speaks the text when the machine has it, and the audio is resampled to 16 kHz (or 8 kHz when asked)
 * and normalized like the static prompts. Without espeak-ng, or when it fails, `speak` gives null and
 * the caller plays a generic static prompt instead. Results are cached by text and rate; the arrays
 * returned are shared: read them, do not change them.
 */

import { execFile } from "node:child_process";
import { readWav } from "./wav.js";

const DEFAULT_SAMPLE_RATE = 16000;
const DEFAULT_TIMEOUT_MS = 5000;
/** Longer text is cut here: a sentence naming a caller and a conference needs far less. */
const MAX_TEXT_LENGTH = 300;
const CACHE_ENTRIES = 64;
/** -3 dBFS, the level the static prompts are normalized to. */
const TARGET_PEAK = 32767 * 10 ** (-3 / 20);
/** espeak-ng writes about 44 kB a second of speech; this is room for several times the longest text. */
const MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
/** Passband edge and transition width, as fractions of the lower of the two sample rates. */
const CUTOFF_FRACTION = 0.45;
const TRANSITION_FRACTION = 0.1;
/** A Blackman window's transition width is about 5.5 / taps of the sample rate (stopband ~74 dB). */
const BLACKMAN_TRANSITION_TAPS = 5.5;

export interface SpeakOptions {
  /** How long espeak-ng may run before it is killed and null is returned; 5000 ms unless given. */
  timeoutMs?: number;
  /** The rate of the samples given: 16000 (wideband) unless 8000 is asked. */
  sampleRate?: 8000 | 16000;
}

/**
 * Keyed by rate and text. Most recently used last: Map keeps insertion order, so a hit is deleted and
 * set again.
 */
const cache = new Map<string, Promise<Int16Array | null>>();

function sinc(x: number): number {
  if (x === 0) return 1;
  const angle = Math.PI * x;
  return Math.sin(angle) / angle;
}

/** The Blackman window at `x` in [-halfWidth, halfWidth], zero outside. */
function blackman(x: number, halfWidth: number): number {
  if (Math.abs(x) >= halfWidth) return 0;
  const phase = (Math.PI * x) / halfWidth;
  return 0.42 + 0.5 * Math.cos(phase) + 0.08 * Math.cos(2 * phase);
}

/**
 * The samples at `toRate`, band-limited below 0.45 of the lower rate so nothing aliases: each output
 * sample is the input convolved with a Blackman-windowed sinc evaluated at the output instant's
 * fractional position among the input samples (samples outside the input count as silence).
 */
export function resample(samples: Int16Array, fromRate: number, toRate: number): Float32Array {
  if (!(fromRate > 0 && toRate > 0)) throw new RangeError(`resampling ${fromRate} Hz to ${toRate} Hz`);
  const lowerRate = Math.min(fromRate, toRate);
  const cutoff = (CUTOFF_FRACTION * lowerRate) / fromRate;
  const halfWidth = Math.ceil((BLACKMAN_TRANSITION_TAPS * fromRate) / (TRANSITION_FRACTION * lowerRate) / 2);
  const step = fromRate / toRate;
  const output = new Float32Array(Math.floor((samples.length * toRate) / fromRate));
  for (let n = 0; n < output.length; n++) {
    const position = n * step;
    const first = Math.max(0, Math.ceil(position - halfWidth));
    const last = Math.min(samples.length - 1, Math.floor(position + halfWidth));
    let sum = 0;
    for (let k = first; k <= last; k++) {
      const offset = position - k;
      sum += (samples[k] ?? 0) * 2 * cutoff * sinc(2 * cutoff * offset) * blackman(offset, halfWidth);
    }
    output[n] = sum;
  }
  return output;
}

/** The samples scaled so the loudest is at -3 dBFS, or null when they are all silence. */
function normalize(samples: Float32Array): Int16Array | null {
  let peak = 0;
  for (const sample of samples) peak = Math.max(peak, Math.abs(sample));
  if (peak === 0) return null;
  const gain = TARGET_PEAK / peak;
  const normalized = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) normalized[i] = Math.round((samples[i] ?? 0) * gain);
  return normalized;
}

/** espeak-ng's WAV output, or null if it is missing, fails or runs out of time. */
function runEspeak(text: string, timeoutMs: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    // The text goes on stdin (--stdin reads it whole), never in argv, so text starting with "-"
    // cannot be taken for an option.
    const child = execFile(
      "espeak-ng",
      ["-v", "en-us", "-s", "150", "--stdout", "--stdin"],
      { encoding: "buffer", timeout: timeoutMs, maxBuffer: MAX_OUTPUT_BYTES },
      (error, stdout) => resolve(error ? null : stdout),
    );
    // A missing or dead espeak-ng makes the write fail (EPIPE); the callback above reports that.
    child.stdin?.on("error", () => {});
    child.stdin?.end(text);
  });
}

async function synthesize(text: string, rate: number, timeoutMs: number): Promise<Int16Array | null> {
  const wav = await runEspeak(text, timeoutMs);
  if (!wav) return null;
  try {
    const { sampleRate, samples } = readWav(wav);
    return normalize(sampleRate === rate ? Float32Array.from(samples) : resample(samples, sampleRate, rate));
  } catch {
    return null;
  }
}

/**
 * `text` spoken in US English as 16-bit mono samples at `options.sampleRate` (16000 unless given)
 * peaking at -3 dBFS, or null (never a rejection) when espeak-ng is not installed, fails or times out,
 * or the text is blank. Text past 300 characters is left out. Successful results are cached by text and
 * rate, so speaking the same sentence again, even while the first is still being made, runs espeak-ng
 * once.
 */
export async function speak(text: string, options: SpeakOptions = {}): Promise<Int16Array | null> {
  const rate = options.sampleRate ?? DEFAULT_SAMPLE_RATE;
  const spoken = text.trim().slice(0, MAX_TEXT_LENGTH);
  if (spoken === "") return null;
  const key = `${rate} ${spoken}`;
  const cached = cache.get(key);
  if (cached) {
    cache.delete(key);
    cache.set(key, cached);
    return cached;
  }
  const pending = synthesize(spoken, rate, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  cache.set(key, pending);
  if (cache.size > CACHE_ENTRIES) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  const samples = await pending;
  // A failure may be passing (a timeout on a busy machine): let the next call try again.
  if (!samples && cache.get(key) === pending) cache.delete(key);
  return samples;
}
