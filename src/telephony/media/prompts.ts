/**
 * The spoken voice prompts: 16 kHz 16-bit mono WAV files in assets/prompts/, made from
 * assets/prompts/prompts.txt by scripts/make-prompts.sh (espeak-ng and sox) and committed, so running
 * the service needs neither tool. Each file is read on first use and cached; its 8 kHz version, for
 * narrowband rooms, is made from it once by low-pass decimation and cached too. The arrays returned are
 * shared: read them, do not change them.
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { PromptName } from "../../domain/prompt.js";
import { convertSampleRate } from "./resampler.js";
import { readWav } from "./wav.js";

/** The rate of the files. */
const FILE_RATE = 16000;
const PROMPT_DIRECTORY = new URL("../../../assets/prompts/", import.meta.url);

const wideband = new Map<PromptName, Int16Array>();
const narrowband = new Map<PromptName, Int16Array>();

function isMissingFile(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "ENOENT";
}

function readPrompt(name: PromptName): Int16Array {
  const path = fileURLToPath(new URL(`${name}.wav`, PROMPT_DIRECTORY));
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    if (isMissingFile(error)) {
      throw new Error(`voice prompt "${name}" is missing: ${path} (scripts/make-prompts.sh makes it)`);
    }
    throw error;
  }
  const { sampleRate, samples } = readWav(bytes);
  if (sampleRate !== FILE_RATE) {
    throw new Error(
      `voice prompt ${path} is at ${sampleRate} Hz, not ${FILE_RATE} (scripts/make-prompts.sh makes it)`,
    );
  }
  return samples;
}

/**
 * The samples of one prompt at `rate` Hz; throws naming the file if it is missing or is not 16 kHz
 * audio.
 */
export function prompt(name: PromptName, rate: 8000 | 16000 = 16000): Int16Array {
  if (rate !== 8000 && rate !== 16000) throw new RangeError(`voice prompts at ${rate} Hz`);
  const cache = rate === FILE_RATE ? wideband : narrowband;
  let samples = cache.get(name);
  if (samples) return samples;
  if (rate === FILE_RATE) samples = readPrompt(name);
  else samples = convertSampleRate(prompt(name, FILE_RATE), FILE_RATE, rate);
  cache.set(name, samples);
  return samples;
}

/** The prompts at `rate` one after another with `gapMs` of silence between each two, as one new array. */
export function concatPrompts(names: PromptName[], rate: 8000 | 16000 = 16000, gapMs = 150): Int16Array {
  if (!Number.isFinite(gapMs) || gapMs < 0) throw new RangeError(`gap of ${gapMs} ms`);
  const gap = Math.round((gapMs * rate) / 1000);
  const parts = names.map((name) => prompt(name, rate));
  let length = Math.max(0, parts.length - 1) * gap;
  for (const part of parts) length += part.length;
  const joined = new Int16Array(length);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length + gap;
  }
  return joined;
}
