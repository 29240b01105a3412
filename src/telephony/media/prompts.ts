/**
 * The spoken voice prompts: 8 kHz 16-bit mono WAV files in assets/prompts/, made from
 * assets/prompts/prompts.txt by scripts/make-prompts.sh (espeak-ng and sox) and committed, so running
 * the service needs neither tool. Each file is read on first use and cached; the arrays returned are
 * shared: read them, do not change them.
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { PromptName } from "../../domain/prompt.js";
import { readWav } from "./wav.js";

const SAMPLE_RATE = 8000;
const PROMPT_DIRECTORY = new URL("../../../assets/prompts/", import.meta.url);

const cache = new Map<PromptName, Int16Array>();

function isMissingFile(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "ENOENT";
}

/** The samples of one prompt at 8000 Hz; throws naming the file if it is missing or not 8 kHz audio. */
export function prompt(name: PromptName): Int16Array {
  const cached = cache.get(name);
  if (cached) return cached;
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
  if (sampleRate !== SAMPLE_RATE) {
    throw new Error(`voice prompt ${path} is at ${sampleRate} Hz, not ${SAMPLE_RATE}`);
  }
  cache.set(name, samples);
  return samples;
}

/** The prompts one after another with `gapMs` of silence between each two, as one new array. */
export function concatPrompts(names: PromptName[], gapMs = 150): Int16Array {
  if (!Number.isFinite(gapMs) || gapMs < 0) throw new RangeError(`gap of ${gapMs} ms`);
  const gap = Math.round((gapMs * SAMPLE_RATE) / 1000);
  const parts = names.map(prompt);
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
