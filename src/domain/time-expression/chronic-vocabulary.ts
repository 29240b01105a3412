/**
 * The words Chronic reads (weekdays, months, units, day portions, grabbers, zone names) and the
 * patterns built of them; and the words an expression may hold at all, the rest being skipped.
 */
import type { DurationUnit } from "luxon";
import type { PeriodUnit } from "./wall-clock.js";

export const WEEKDAYS: Record<string, number> = {
  sunday: 0,
  monday: 1,
  tuesday: 2,
  wednesday: 3,
  thursday: 4,
  friday: 5,
  saturday: 6,
};

/**
 * The spellings of day names Chronic's scanner accepts (its scan_for_day_names), and "weds",
 * rewritten to the full name. A lone "t" is left out: Chronic's scanner takes it for Tuesday,
 * but no handler of Chronic reads it.
 */
export const WEEKDAY_SPELLINGS: [RegExp, string][] = [
  [/\bm[ou]n(?:day)?\b/g, "monday"],
  [/\bt(?:(?:ue|eu|oo|u)s?|s)(?:day)?\b|\btday\b/g, "tuesday"],
  [/\bwe(?:d|dnes|nds|nns|ds)(?:day)?\b/g, "wednesday"],
  [/\bth(?:u|ur|urs|ers)(?:day)?\b/g, "thursday"],
  [/\bfr[iy](?:day)?\b/g, "friday"],
  [/\bsat(?:t?[ue]rday)?\b/g, "saturday"],
  [/\bsu[nm](?:day)?\b/g, "sunday"],
];

export const MONTHS: Record<string, number> = {
  january: 1,
  jan: 1,
  february: 2,
  feb: 2,
  march: 3,
  mar: 3,
  april: 4,
  apr: 4,
  may: 5,
  june: 6,
  jun: 6,
  july: 7,
  jul: 7,
  august: 8,
  aug: 8,
  september: 9,
  sept: 9,
  sep: 9,
  october: 10,
  oct: 10,
  november: 11,
  nov: 11,
  december: 12,
  dec: 12,
};

/** Units of "N units ago" and friends, as Luxon duration keys (a fortnight is two weeks). */
export const OFFSET_UNITS: Record<string, [DurationUnit, number]> = {
  second: ["seconds", 1],
  sec: ["seconds", 1],
  minute: ["minutes", 1],
  min: ["minutes", 1],
  hour: ["hours", 1],
  hr: ["hours", 1],
  day: ["days", 1],
  week: ["weeks", 1],
  fortnight: ["weeks", 2],
  month: ["months", 1],
  year: ["years", 1],
};

/**
 * Chronic's parts of the day: the span of each (its start and end hour) and the time it guesses,
 * the middle of that span. All but the morning read a clock hour as pm.
 */
export const DAY_PORTIONS = {
  morning: { from: 6, to: 12, hour: 9, minute: 0, afternoonClock: false },
  afternoon: { from: 13, to: 17, hour: 15, minute: 0, afternoonClock: true },
  evening: { from: 17, to: 20, hour: 18, minute: 30, afternoonClock: true },
  night: { from: 20, to: 24, hour: 22, minute: 0, afternoonClock: true },
} as const;
export type DayPortion = keyof typeof DAY_PORTIONS;

/** Units counted by Chronic's own rules rather than as a duration (business days, weekends, parts of the day). */
const COUNTED_UNITS = ["weekday", "businessday", "weekend", ...Object.keys(DAY_PORTIONS)];

/** "this/next/last <unit>" and a unit alone; abbreviations as Chronic's scanner reads them. */
export const PERIOD_UNITS: Record<string, PeriodUnit | "fortnight" | "weekend" | "weekday"> = {
  second: "second",
  sec: "second",
  minute: "minute",
  min: "minute",
  hour: "hour",
  hr: "hour",
  day: "day",
  week: "week",
  fortnight: "fortnight",
  weekend: "weekend",
  weekday: "weekday",
  businessday: "weekday",
  month: "month",
  year: "year",
};

/** A regular-expression alternation of the words (or a record's keys), longest first. */
export function alternation(words: Record<string, unknown> | string[]): string {
  return (Array.isArray(words) ? [...words] : Object.keys(words))
    .sort((a, b) => b.length - a.length)
    .join("|");
}

export const WEEKDAY = `(${alternation(WEEKDAYS)})`;
export const MONTH = `(${alternation(MONTHS)})`;
export const OFFSET_UNIT = `(${alternation([...Object.keys(OFFSET_UNITS), ...COUNTED_UNITS])})s?`;
/** One or more "N units", as in "2 hours and 15 minutes" or "1 hour 30 minutes". */
export const OFFSET_TERMS = `(\\d+ ${OFFSET_UNIT}(?: (?:and )?\\d+ ${OFFSET_UNIT})*)`;
export const OFFSET_TERM = new RegExp(`(\\d+) ${OFFSET_UNIT}`, "g");
export const PORTION = "(morning|afternoon|evening|night)";
export const GRABBER = "(this|next|last)";
export type Grabber = "this" | "next" | "last";

/** The zone names Chronic reads after a time (its TimeZone tag, and GMT), as UTC offsets in minutes. */
export const ZONE_OFFSETS: Record<string, number> = {
  utc: 0,
  gmt: 0,
  z: 0,
  est: -300,
  edt: -240,
  cst: -360,
  cdt: -300,
  mst: -420,
  mdt: -360,
  pst: -480,
  pdt: -420,
};
export const ZONE_AFTER_TIME = new RegExp(`^ (${alternation(ZONE_OFFSETS)})\\b`);
/** date(1)'s "17:00:00 pdt 2007": the year after the zone, moved before the time. */
export const YEAR_AFTER_ZONE = new RegExp(
  `\\b(\\d{1,2}:\\d{2}(?::\\d{2})? (?:${alternation(ZONE_OFFSETS)})) (\\d{4})$`,
);

/**
 * Words that name or qualify a time (after normalization): each one in an expression must be
 * part of its one reading. Seasons, time-zone names and large number words are here although no
 * form reads them, so that an expression holding one is refused rather than read without it.
 */
const TIME_WORDS = new Set([
  ...Object.keys(WEEKDAYS),
  ...Object.keys(MONTHS),
  ...[...Object.keys(PERIOD_UNITS), ...Object.keys(DAY_PORTIONS)].flatMap((unit) => [unit, `${unit}s`]),
  ...["am", "pm", "now", "today", "tonight", "tomorrow", "yesterday", "midnight"],
  ...["this", "next", "last", "ago", "hence", "later", "from", "after", "before", "past", "in"],
  ...["quarter", "half", "hundred", "thousand", "million"],
  ...["spring", "springs", "summer", "summers", "autumn", "autumns", "fall", "falls", "winter", "winters"],
  ...["season", "seasons", "utc", "gmt", "z", "pt", "mt", "ct", "et", "bst", "cet", "cest", "ist"],
  ...["pst", "pdt", "mst", "mdt", "cst", "cdt", "est", "edt", "akst", "akdt", "hst", "nst", "ndt"],
]);

/** Words that join the parts of a form ("22nd of june", "tomorrow at 9"): skipped outside a form. */
const JOINING_WORDS = new Set(["at", "on", "of", "the", "to", "till", "and"]);

export function isTimeWord(word: string): boolean {
  return /\d/.test(word) || TIME_WORDS.has(word);
}

/** The expression without the words it skips: those neither time words nor joining words. */
export function withoutSkippedWords(text: string): string {
  return text
    .split(" ")
    .filter((word) => isTimeWord(word) || JOINING_WORDS.has(word))
    .join(" ");
}
