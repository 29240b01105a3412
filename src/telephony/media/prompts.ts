/**
 * The spoken voice prompts: 8 kHz 16-bit mono WAV files in assets/prompts/, made from
 * assets/prompts/prompts.txt by scripts/make-prompts.sh (espeak-ng and sox) and committed, so running
 * the service needs neither tool. Each file is read on first use and cached; the arrays returned are
 * shared: read them, do not change them.
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { readWav } from "./wav.js";

const SAMPLE_RATE = 8000;
/** The highest count with a prompt of its own; larger ones are spoken as "more than twenty". */
const HIGHEST_NUMBER_PROMPT = 20;
const PROMPT_DIRECTORY = new URL("../../../assets/prompts/", import.meta.url);

/** Every prompt, by file name (without .wav). */
export const PROMPT_NAMES = [
  "enter-pin",
  "invalid-pin",
  "goodbye",
  "conference-locked",
  "not-started",
  "you-are-moderator",
  "joining",
  "invitation",
  "no-response",
  "record-name",
  "muted",
  "unmuted",
  "muting-not-allowed",
  "hand-raised",
  "hand-lowered",
  "conference-locked-now",
  "conference-unlocked",
  "lecture-on",
  "lecture-off",
  "all-muted",
  "recording-started",
  "recording-stopped",
  "conference-ending",
  "participants",
  "number-0",
  "number-1",
  "number-2",
  "number-3",
  "number-4",
  "number-5",
  "number-6",
  "number-7",
  "number-8",
  "number-9",
  "number-10",
  "number-11",
  "number-12",
  "number-13",
  "number-14",
  "number-15",
  "number-16",
  "number-17",
  "number-18",
  "number-19",
  "number-20",
  "number-many",
  // The keys every caller has.
  "help-member",
  // Only the keys a moderator has besides a member's: play it after "help-member".
  "help-moderator",
] as const;

export type PromptName = (typeof PROMPT_NAMES)[number];

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

/** The prompt speaking a count: "number-0" to "number-20", then "number-many" ("more than twenty"). */
export function numberPrompt(n: number): PromptName {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`no number prompt for ${n}`);
  if (n > HIGHEST_NUMBER_PROMPT) return "number-many";
  return `number-${n}` as PromptName;
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
