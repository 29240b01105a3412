/**
 * Chronic's pre_normalize, for the spellings this module reads (number words, ordinals, month
 * abbreviations), applied before chrono-node sees an expression.
 */
import { nearbyYear } from "./chronic-calendar.js";
import {
  alternation,
  MONTHS,
  OFFSET_UNIT,
  WEEKDAY_SPELLINGS,
  WEEKDAYS,
  YEAR_AFTER_ZONE,
} from "./chronic-vocabulary.js";

const SMALL_NUMBERS = [
  "zero",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
  "ten",
  "eleven",
  "twelve",
  "thirteen",
  "fourteen",
  "fifteen",
  "sixteen",
  "seventeen",
  "eighteen",
  "nineteen",
];
const TENS: Record<string, number> = { twenty: 20, thirty: 30, forty: 40, fifty: 50 };
const ORDINAL_WORDS: Record<string, number> = {
  first: 1,
  third: 3,
  fourth: 4,
  fifth: 5,
  sixth: 6,
  seventh: 7,
  eighth: 8,
  ninth: 9,
  tenth: 10,
  eleventh: 11,
  twelfth: 12,
  thirteenth: 13,
  fourteenth: 14,
  fifteenth: 15,
  sixteenth: 16,
  seventeenth: 17,
  eighteenth: 18,
  nineteenth: 19,
  twentieth: 20,
  thirtieth: 30,
};
const DIGIT_ORDINALS: Record<string, number> = { ...ORDINAL_WORDS, second: 2 };
const DIGIT_WORDS: Record<string, number> = Object.fromEntries(
  SMALL_NUMBERS.slice(1, 10).map((word, index) => [word, index + 1]),
);

function ordinal(n: number): string {
  const lastTwo = n % 100;
  if (lastTwo >= 11 && lastTwo <= 13) return `${n}th`;
  return `${n}${{ 1: "st", 2: "nd", 3: "rd" }[n % 10] ?? "th"}`;
}

const COMPOUND_ORDINAL = new RegExp(`\\b(${alternation(TENS)})[ -](${alternation(DIGIT_ORDINALS)})\\b`, "g");
const COMPOUND_NUMBER = new RegExp(`\\b(${alternation(TENS)})[ -](${alternation(DIGIT_WORDS)})\\b`, "g");
const ORDINAL_WORD = new RegExp(`\\b(${alternation(ORDINAL_WORDS)})\\b`, "g");
/** "second" is an ordinal only where Chronic reads it as one (it is also a unit). */
const SECOND_AS_ORDINAL = new RegExp(
  `^second\\b(?= )|\\bsecond(?= (?:of|day|week|month|year|${alternation(WEEKDAYS)}|${alternation(MONTHS)})\\b)`,
  "g",
);
const NUMBER_WORD = new RegExp(`\\b(${SMALL_NUMBERS.join("|")}|${alternation(TENS)})\\b`, "g");
const ARTICLE_BEFORE_UNIT = new RegExp(`\\ban? (?=${OFFSET_UNIT}\\b)`, "g");

/** Number words to digits and ordinal words to "Nth", as Chronic's Numerizer does. */
function numerize(text: string): string {
  return text
    .replace(COMPOUND_ORDINAL, (_, tens: string, unit: string) =>
      ordinal((TENS[tens] ?? 0) + (DIGIT_ORDINALS[unit] ?? 0)),
    )
    .replace(COMPOUND_NUMBER, (_, tens: string, unit: string) =>
      String((TENS[tens] ?? 0) + (DIGIT_WORDS[unit] ?? 0)),
    )
    .replace(ORDINAL_WORD, (word: string) => ordinal(ORDINAL_WORDS[word] ?? 0))
    .replace(SECOND_AS_ORDINAL, "2nd")
    .replace(NUMBER_WORD, (word: string) => String(TENS[word] ?? SMALL_NUMBERS.indexOf(word)))
    .replace(ARTICLE_BEFORE_UNIT, "1 ");
}

const MONTH_ABBREVIATIONS = Object.keys(MONTHS).filter((name) => name.length === 3);

/**
 * Dates and clock times written with dots, as Chronic reads them: a date is day first
 * ("20.11.2026", "4.9.2026"); a dot between other digits is a colon ("5.30pm", "15:30.30");
 * "2026:11:20" (the EXIF form) is a date; a fourth clock group is a fraction of a second
 * ("15:30:30.25", "15:30:30:000250"), kept to the millisecond.
 */
function normalizeNumerals(text: string): string {
  return text
    .replace(
      /\b(\d{1,2})\.(\d{1,2})\.(\d{4}|\d{2})\b/g,
      (written, day: string, month: string, year: string) =>
        Number(day) >= 1 && Number(day) <= 31 && Number(month) >= 1 && Number(month) <= 12
          ? `${Number(day)} ${MONTH_ABBREVIATIONS[Number(month) - 1]} ${year}`
          : written,
    )
    .replace(/(\d)\.(?=\d)/g, "$1:")
    .replace(/\b(\d{4}):(\d{2}):(\d{2})\b/g, "$1-$2-$3")
    .replace(
      /\b(\d{1,2}:\d{2}:\d{2}):(\d{1,6})\b/g,
      (_, clock: string, fraction: string) => `${clock}.${fraction.padEnd(3, "0").slice(0, 3)}`,
    );
}

/**
 * Lower case, single spaces, Chronic's idioms and spellings in canonical form. `year` is the
 * current year, for a year written with an apostrophe ("jan '27").
 */
export function normalizeExpression(expression: string, year: number): string {
  let text = normalizeNumerals(
    expression
      .toLowerCase()
      .replace(/(?<![a-z])([ap])\.m\.?/g, "$1m")
      .replace(
        /(^|\s)['\u2018\u2019](\d{2})(?![\w'])/g,
        (_, space: string, digits: string) => `${space}${nearbyYear(Number(digits), year)}`,
      ),
  )
    .replace(/@/g, " at ")
    .replace(/['"\u2018\u2019\u201c\u201d]/g, "")
    .replace(/[^a-z0-9:/+\-.\s]|\.(?!\d)/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  for (const [spelling, name] of WEEKDAY_SPELLINGS) text = text.replace(spelling, name);
  return numerize(text)
    .replace(/\b(?:tomm?orr?ow|tmrw)\b/g, "tomorrow")
    .replace(/\b(?:noon|midday)\b/g, "12pm")
    .replace(/\btonite\b/g, "tonight")
    .replace(/\bnite(s?)\b/g, "night$1")
    .replace(/\bbusiness (days?)\b/g, "business$1")
    .replace(/\bthis (?:last|past)\b/g, "last")
    .replace(/\ba quarter\b/g, "quarter")
    .replace(/\b(\d{1,2}|quarter|half) prior to\b/g, "$1 to")
    .replace(/ ?\bo ?clock\b/g, "")
    .replace(/\b(\d{1,2})(\d{2}) ?([ap])m?\b/g, "$1:$2$3m")
    .replace(/\b(\d{1,2}(?::\d{2})?) ?([ap])\b/g, "$1$2m")
    .replace(YEAR_AFTER_ZONE, "$2 $1");
}
