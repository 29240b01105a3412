/**
 * The voice prompts callers hear, by name: what the conference says is a rule of the conference; how
 * each name sounds is a file in assets/prompts/ (telephony/media/prompts.ts reads them).
 */

/** The highest count with a prompt of its own; larger ones are spoken as "more than twenty". */
const HIGHEST_NUMBER_PROMPT = 20;

/** Every prompt, by file name (without .wav). */
export const PROMPT_NAMES = [
  "enter-pin",
  "invalid-pin",
  "goodbye",
  "conference-locked",
  "encrypted-only",
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
  "reconnecting",
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

/** The prompt speaking a count: "number-0" to "number-20", then "number-many" ("more than twenty"). */
export function numberPrompt(n: number): PromptName {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`no number prompt for ${n}`);
  if (n > HIGHEST_NUMBER_PROMPT) return "number-many";
  return `number-${n}` as PromptName;
}
