/**
 * Chronic's reading of free-form time expressions, built on chrono-node. chrono-node supplies the
 * framework and its English date and clock-time parsers; this module adds, as chrono-node parsers
 * and refiners, the forms it lacks and the rules by which the Ruby library Chronic turns a form
 * into one instant (spans resolve to their middle, bare hours are read between 6 am and 6 pm,
 * clock times without a date lie in the future). Before chrono-node sees an expression it is
 * normalized as Chronic's pre_normalize does, and the words that are not time words are dropped,
 * as Chronic drops the words it does not know. docs/time-expressions.md lists the forms.
 *
 * Calendar work happens on the owner's wall clock (see wall-clock.ts); a result becomes an
 * instant with the zone rules in force on its own date.
 */
// The English entry point: the package root would load every locale chrono-node ships.
import {
  Chrono,
  type Component,
  configuration as englishConfiguration,
  Meridiem,
  type Parser,
  type ParsingComponents,
  type ParsingResult,
  type Refiner,
} from "chrono-node/en";
import { DateTime, type DurationUnit, FixedOffsetZone } from "luxon";
import {
  type Clock,
  clockAt,
  instantOf,
  middleOf,
  nextOccurrence,
  type PeriodUnit,
  periodAround,
  type Span,
  startOfWeek,
  type WallTime,
  wallTimeOf,
} from "./wall-clock.js";

// ---------------------------------------------------------------------------------------------
// Vocabulary

const WEEKDAYS: Record<string, number> = {
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
const WEEKDAY_SPELLINGS: [RegExp, string][] = [
  [/\bm[ou]n(?:day)?\b/g, "monday"],
  [/\bt(?:(?:ue|eu|oo|u)s?|s)(?:day)?\b|\btday\b/g, "tuesday"],
  [/\bwe(?:d|dnes|nds|nns|ds)(?:day)?\b/g, "wednesday"],
  [/\bth(?:u|ur|urs|ers)(?:day)?\b/g, "thursday"],
  [/\bfr[iy](?:day)?\b/g, "friday"],
  [/\bsat(?:t?[ue]rday)?\b/g, "saturday"],
  [/\bsu[nm](?:day)?\b/g, "sunday"],
];

const MONTHS: Record<string, number> = {
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
const OFFSET_UNITS: Record<string, [DurationUnit, number]> = {
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
const DAY_PORTIONS = {
  morning: { from: 6, to: 12, hour: 9, minute: 0, afternoonClock: false },
  afternoon: { from: 13, to: 17, hour: 15, minute: 0, afternoonClock: true },
  evening: { from: 17, to: 20, hour: 18, minute: 30, afternoonClock: true },
  night: { from: 20, to: 24, hour: 22, minute: 0, afternoonClock: true },
} as const;
type DayPortion = keyof typeof DAY_PORTIONS;

/** Units counted by Chronic's own rules rather than as a duration (business days, weekends, parts of the day). */
const COUNTED_UNITS = ["weekday", "businessday", "weekend", ...Object.keys(DAY_PORTIONS)];

/** "this/next/last <unit>" and a unit alone; abbreviations as Chronic's scanner reads them. */
const PERIOD_UNITS: Record<string, PeriodUnit | "fortnight" | "weekend" | "weekday"> = {
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
function alternation(words: Record<string, unknown> | string[]): string {
  return (Array.isArray(words) ? [...words] : Object.keys(words))
    .sort((a, b) => b.length - a.length)
    .join("|");
}

const WEEKDAY = `(${alternation(WEEKDAYS)})`;
const MONTH = `(${alternation(MONTHS)})`;
const OFFSET_UNIT = `(${alternation([...Object.keys(OFFSET_UNITS), ...COUNTED_UNITS])})s?`;
/** One or more "N units", as in "2 hours and 15 minutes" or "1 hour 30 minutes". */
const OFFSET_TERMS = `(\\d+ ${OFFSET_UNIT}(?: (?:and )?\\d+ ${OFFSET_UNIT})*)`;
const OFFSET_TERM = new RegExp(`(\\d+) ${OFFSET_UNIT}`, "g");
const PORTION = "(morning|afternoon|evening|night)";
const GRABBER = "(this|next|last)";
type Grabber = "this" | "next" | "last";

// ---------------------------------------------------------------------------------------------
// Vocabulary: the words an expression is read from, and those it skips

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

function isTimeWord(word: string): boolean {
  return /\d/.test(word) || TIME_WORDS.has(word);
}

/** The expression without the words it skips: those neither time words nor joining words. */
function withoutSkippedWords(text: string): string {
  return text
    .split(" ")
    .filter((word) => isTimeWord(word) || JOINING_WORDS.has(word))
    .join(" ");
}

// ---------------------------------------------------------------------------------------------
// Normalization: Chronic's pre_normalize, for the spellings this module reads

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
function normalizeExpression(expression: string, year: number): string {
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

// ---------------------------------------------------------------------------------------------
// Results: tags that carry Chronic's meaning from the parsers to the refiners

/** A clock hour written 1-12 without am/pm (Chronic's "ambiguous" time). */
const AMBIGUOUS_HOUR = "chronic/ambiguous-hour";
/** A clock phrase ("10 to 8"): without a date, the next of its am and pm readings. */
const EITHER_HALF_OF_DAY = "chronic/either-half-of-day";
/** "today": Chronic's span runs from the current hour to midnight. */
const TODAY = "chronic/today";
/** "midnight" is 24:00, the end of its day. */
const MIDNIGHT = "chronic/midnight";
const PORTION_TAG = "chronic/portion:";
/** A weekday name alone: let go when a calendar date follows it ("fri sep 4"). */
const WEEKDAY_NAME = "chronic/weekday-name";
/** A point this module has already fixed (an instant, or a span's guess): no refiner changes it. */
const FIXED = "chronic/fixed";

type ParsingContext = Parameters<Parser["extract"]>[0];

const clocks = new WeakMap<Date, Clock>();

function clockOf(context: ParsingContext): Clock {
  const clock = clocks.get(context.refDate);
  if (!clock) throw new Error("time expression parsed without a clock");
  return clock;
}

function portionOf(components: ParsingComponents): DayPortion | undefined {
  for (const tag of components.tags()) {
    if (tag.startsWith(PORTION_TAG)) return tag.slice(PORTION_TAG.length) as DayPortion;
  }
  return undefined;
}

function assignDate(components: ParsingComponents, wall: WallTime): ParsingComponents {
  return components
    .assign("year", wall.year)
    .assign("month", wall.month)
    .assign("day", wall.day)
    .assign("weekday", wall.weekday % 7);
}

/** A date without a time: chrono-node merges it with a following time, else it is guessed. */
function dateResult(context: ParsingContext, wall: WallTime, tags: string[] = []): ParsingComponents {
  return assignDate(context.createParsingComponents(), wall).addTags(tags);
}

/** A point already chosen on the wall clock (a span's guess); the zone turns it into an instant. */
function wallPointResult(context: ParsingContext, wall: WallTime): ParsingComponents {
  return assignDate(context.createParsingComponents(), wall)
    .addTag(FIXED)
    .assign("hour", wall.hour)
    .assign("minute", wall.minute)
    .assign("second", wall.second)
    .assign("millisecond", wall.millisecond);
}

/** An exact instant (now, or an offset from an anchor), pinned with its UTC offset. */
function instantResult(context: ParsingContext, instant: DateTime): ParsingComponents {
  return wallPointResult(context, wallTimeOf(instant)).assign("timezoneOffset", instant.offset);
}

function spanGuessResult(context: ParsingContext, span: Span): ParsingComponents {
  return wallPointResult(context, middleOf(span));
}

/** Hours 1-12 without am/pm fall between 6 am and 6 pm (Chronic's ambiguous_time_range 6). */
function dayTimeHour(hour: number): number {
  const twelveHour = hour % 12;
  if (twelveHour === 0) return 12;
  return twelveHour < 6 ? twelveHour + 12 : twelveHour;
}

function portionHour(hour: number, portion: DayPortion): number {
  return (hour % 12) + (DAY_PORTIONS[portion].afternoonClock ? 12 : 0);
}

// ---------------------------------------------------------------------------------------------
// Calendar rules of Chronic's repeaters

/** The first day strictly after (direction 1) or before (-1) `day` that falls on the weekday. */
function weekdayAfter(day: WallTime, weekday: number, direction: 1 | -1): WallTime {
  let candidate = day.startOf("day");
  do candidate = candidate.plus({ days: direction });
  while (candidate.weekday % 7 !== weekday);
  return candidate;
}

/** A weekday: the next one after today, or the last one before it; never today. */
function weekdayFrom(clock: Clock, weekday: number, direction: 1 | -1): WallTime {
  return weekdayAfter(clock.wallNow, weekday, direction);
}

const SUNDAY = 0;
const SATURDAY = 6;

function isBusinessDay(wall: DateTime): boolean {
  return wall.weekday < 6;
}

/** A business day (Chronic's "weekday"): the next one after today, or the last one before it. */
function businessDayFrom(clock: Clock, direction: 1 | -1): WallTime {
  let day = clock.wallNow.startOf("day");
  do day = day.plus({ days: direction });
  while (!isBusinessDay(day));
  return day;
}

/**
 * Chronic's weekend, Saturday 00:00 to Monday 00:00: "this" and "next" are the first one after
 * today, "last" the latest one starting on or before today.
 */
function weekendSpan(clock: Clock, grabber: Grabber): Span {
  const today = clock.wallNow.startOf("day");
  const saturday =
    grabber === "last"
      ? weekdayAfter(today.plus({ days: 1 }), SATURDAY, -1)
      : weekdayAfter(today, SATURDAY, 1);
  return { start: saturday, end: saturday.plus({ days: 2 }) };
}

/**
 * Chronic's fortnights start on a Sunday: "next" is the one from the coming Sunday, "last" the
 * one that ended a week before the latest Sunday (on or before today), and "this" runs from the
 * next hour to the second Sunday to come.
 */
function fortnightSpan(clock: Clock, grabber: Grabber): Span {
  const today = clock.wallNow.startOf("day");
  const comingSunday = weekdayAfter(today, SUNDAY, 1);
  if (grabber === "this") {
    return { start: clock.wallNow.startOf("hour").plus({ hours: 1 }), end: comingSunday.plus({ weeks: 1 }) };
  }
  const start =
    grabber === "next" ? comingSunday : weekdayAfter(today.plus({ days: 1 }), SUNDAY, -1).minus({ weeks: 2 });
  return { start, end: start.plus({ weeks: 2 }) };
}

/** "2 weekends from now": the start of the Nth Saturday after today (ago: on or before today). */
function nthWeekend(clock: Clock, count: number, direction: 1 | -1): WallTime {
  return weekendSpan(clock, direction > 0 ? "next" : "last").start.plus({ weeks: direction * (count - 1) });
}

/**
 * "3 mornings from now": the Nth such part of a day after now, guessed at its middle. The first
 * is today's when it has not begun, else tomorrow's (ago: today's when it is over, else
 * yesterday's), as Chronic counts them.
 */
function nthPortion(clock: Clock, portion: DayPortion, count: number, direction: 1 | -1): WallTime {
  const { from, to, hour, minute } = DAY_PORTIONS[portion];
  const today = clock.wallNow.startOf("day");
  const hours = clock.wallNow.diff(today).as("hours");
  let first = today.plus({ days: direction });
  if (hours < from && direction > 0) first = today;
  if (hours > to && direction < 0) first = today;
  return first.plus({ days: direction * (count - 1) }).set({ hour, minute });
}

/** Business days from an instant, keeping its wall-clock time. */
function plusBusinessDays(instant: DateTime, count: number): DateTime {
  let day = instant;
  for (let left = Math.abs(count); left > 0; ) {
    day = day.plus({ days: Math.sign(count) });
    if (isBusinessDay(day)) left -= 1;
  }
  return day;
}

/** A named month: this one while it lasts, else the next; "next"/"last" skip the current one. */
function monthSpan(clock: Clock, month: number, grabber: Grabber | undefined): Span {
  const current = clock.wallNow.startOf("month");
  let year = current.year;
  if (grabber === "last") {
    if (month >= current.month) year -= 1;
  } else if (grabber === "next" ? month <= current.month : month < current.month) {
    year += 1;
  }
  return periodAround(current.set({ year, month }), "month");
}

/**
 * "this/next/last <unit>". next and last are whole periods; "this" is what is left of the current
 * one, from the next smaller unit on (Chronic's this(:future)); this minute and second are now.
 */
function periodSpan(clock: Clock, unit: PeriodUnit, grabber: Grabber): Span {
  const around = periodAround(clock.wallNow, unit);
  if (grabber !== "this") {
    const shift = grabber === "next" ? 1 : -1;
    return periodAround(around.start.plus({ [`${unit}s`]: shift }), unit);
  }
  const now = clock.wallNow;
  const restFrom: Record<PeriodUnit, WallTime> = {
    second: now,
    minute: now,
    hour: now.startOf("minute").plus({ minutes: 1 }),
    day: now.startOf("hour"),
    week: now.startOf("hour").plus({ hours: 1 }),
    month: now.startOf("day").plus({ days: 1 }),
    year: now.startOf("day").plus({ days: 1 }),
  };
  const start = restFrom[unit];
  return { start, end: unit === "second" || unit === "minute" ? start : around.end };
}

/** The first start of a day at or after the given wall time. */
function firstDayFrom(wall: WallTime): WallTime {
  const day = wall.startOf("day");
  return day < wall ? day.plus({ days: 1 }) : day;
}

// ---------------------------------------------------------------------------------------------
// Parsers for the forms chrono-node lacks or reads otherwise than Chronic

function parser(pattern: RegExp, extract: Parser["extract"]): Parser {
  return { pattern: () => pattern, extract };
}

const nowParser = parser(/\b(?:now|this second)\b/, (context) =>
  instantResult(context, clockOf(context).now),
);

const casualDayParser = parser(/\b(today|tomorrow|yesterday|tonight)\b/, (context, match) => {
  const today = clockOf(context).wallNow.startOf("day");
  const word = match[1];
  if (word === "today") return dateResult(context, today, [TODAY]);
  if (word === "tonight") return dateResult(context, today, [`${PORTION_TAG}night`]);
  return dateResult(context, today.plus({ days: word === "tomorrow" ? 1 : -1 }));
});

/** The day named by "this", "last", "today", "tomorrow", "yesterday" or a weekday before a portion. */
function portionDay(clock: Clock, word: string): WallTime {
  const today = clock.wallNow.startOf("day");
  if (word === "tomorrow") return today.plus({ days: 1 });
  if (word === "yesterday" || word === "last") return today.minus({ days: 1 });
  const weekday = WEEKDAYS[word];
  return weekday === undefined ? today : weekdayFrom(clock, weekday, 1);
}

const dayThenPortionParser = parser(
  new RegExp(`\\b(this|last|today|tomorrow|yesterday|${alternation(WEEKDAYS)}) ${PORTION}\\b`),
  (context, match) =>
    dateResult(context, portionDay(clockOf(context), match[1] ?? ""), [`${PORTION_TAG}${match[2]}`]),
);

const portionThenDayParser = parser(
  new RegExp(`\\b${PORTION} (today|tomorrow|yesterday|${alternation(WEEKDAYS)})\\b`),
  (context, match) =>
    dateResult(context, portionDay(clockOf(context), match[2] ?? ""), [`${PORTION_TAG}${match[1]}`]),
);

/** "friday", "this friday", "next friday", "last friday": the next (or last) one, never today. */
const weekdayParser = parser(new RegExp(`\\b(?:${GRABBER} )?${WEEKDAY}\\b`), (context, match) => {
  const weekday = WEEKDAYS[match[2] ?? ""] ?? 0;
  const day = weekdayFrom(clockOf(context), weekday, match[1] === "last" ? -1 : 1);
  return dateResult(context, day, match[1] ? [] : [WEEKDAY_NAME]);
});

/**
 * "fri 4th", "friday the 13th": that day of this month, or of the next once it has passed (the
 * weekday name is let go, as Chronic does).
 */
const weekdayOrdinalDayParser = parser(
  new RegExp(`\\b${WEEKDAY} (?:the )?(\\d{1,2})(?:st|nd|rd|th)\\b(?! (?:of )?(?:${alternation(MONTHS)})\\b)`),
  (context, match) => {
    const today = clockOf(context).wallNow.startOf("day");
    const day = Number(match[2]);
    const month = today.startOf("month").plus({ months: today.day > day ? 1 : 0 });
    if (day < 1 || day > (month.daysInMonth ?? 0)) return null;
    return dateResult(context, month.set({ day }));
  },
);

/** "thursday last week", "last week tuesday": that weekday in that Sunday-to-Saturday week. */
function weekdayInWeek(context: ParsingContext, weekdayWord: string, grabber: string): ParsingComponents {
  const clock = clockOf(context);
  const week = startOfWeek(clock.wallNow).plus({
    weeks: grabber === "next" ? 1 : grabber === "last" ? -1 : 0,
  });
  return dateResult(context, week.plus({ days: WEEKDAYS[weekdayWord] ?? 0 }));
}

const weekdayThenWeekParser = parser(new RegExp(`\\b${WEEKDAY} ${GRABBER} week\\b`), (context, match) =>
  weekdayInWeek(context, match[1] ?? "", match[2] ?? ""),
);

const weekThenWeekdayParser = parser(new RegExp(`\\b${GRABBER} week ${WEEKDAY}\\b`), (context, match) =>
  weekdayInWeek(context, match[2] ?? "", match[1] ?? ""),
);

/** "next may", "last november": a month, guessed at its middle. */
const monthWithGrabberParser = parser(new RegExp(`\\b${GRABBER} ${MONTH}\\b`), (context, match) =>
  spanGuessResult(context, monthSpan(clockOf(context), MONTHS[match[2] ?? ""] ?? 1, match[1] as Grabber)),
);

/** "next month", "this week", "last year", "next hour": the period, guessed at its middle. */
const periodParser = parser(
  new RegExp(`\\b(?:${GRABBER} )?(${alternation(PERIOD_UNITS)})\\b`),
  (context, match) => {
    const clock = clockOf(context);
    const grabber = (match[1] ?? "this") as Grabber;
    const unit = PERIOD_UNITS[match[2] ?? ""] ?? "day";
    if (grabber === "this" && unit === "day") {
      return dateResult(context, clock.wallNow.startOf("day"), [TODAY]);
    }
    if (unit === "weekday") return dateResult(context, businessDayFrom(clock, grabber === "last" ? -1 : 1));
    if (unit === "weekend") return spanGuessResult(context, weekendSpan(clock, grabber));
    if (unit === "fortnight") return spanGuessResult(context, fortnightSpan(clock, grabber));
    return spanGuessResult(context, periodSpan(clock, unit, grabber));
  },
);

/** "6 in the morning", "7 in the evening", "11 at night", "9 tonight". */
const portionTimeParser = parser(
  /\b(\d{1,2})(?::(\d{2}))? (in the morning|in the afternoon|in the evening|at night|tonight|this morning|this afternoon|this evening)\b/,
  (context, match) => {
    const hour = Number(match[1]);
    const minute = Number(match[2] ?? 0);
    if (hour < 1 || hour > 12 || minute > 59) return null;
    const phrase = match[3] ?? "";
    const portion = (phrase.split(" ").pop() === "tonight" ? "night" : phrase.split(" ").pop()) as DayPortion;
    const components = context
      .createParsingComponents()
      .assign("hour", portionHour(hour, portion))
      .assign("minute", minute)
      .assign("meridiem", DAY_PORTIONS[portion].afternoonClock ? Meridiem.PM : Meridiem.AM);
    if (phrase === "tonight" || phrase.startsWith("this ")) {
      assignDate(components, clockOf(context).wallNow.startOf("day"));
    }
    return components;
  },
);

/** "5", "17", "0800", "230", "1130": an hour, or hours and minutes run together (H:MM, HH:MM). */
const bareTimeParser = parser(/(?<![\w/:.-])(\d{1,4})(?![\w/:.-])/, (context, match) => {
  const digits = match[1] ?? "";
  const hour = Number(digits.length <= 2 ? digits : digits.slice(0, -2));
  const minute = digits.length <= 2 ? 0 : Number(digits.slice(-2));
  if (hour > 23 || minute > 59) return null;
  return context.createParsingComponents().assign("hour", hour).assign("minute", minute);
});

const CLOCK_PHRASE_MINUTES: Record<string, number> = { quarter: 15, half: 30 };
const MINUTES_BEFORE = new Set(["to", "till", "before"]);

function clockPhraseMinutes(written: string): number | null {
  const minutes = CLOCK_PHRASE_MINUTES[written] ?? Number(written);
  return minutes >= 1 && minutes <= 59 ? minutes : null;
}

/**
 * "10 to 8", "half past 2", "quarter after 3", "5 before 3", "10 to 8pm", "10 to 8 in the
 * evening": minutes before or after an hour. An hour 1-12 without am/pm or a part of the day is
 * either half of the day (Chronic's reading of it).
 */
const clockPhraseParser = parser(
  /\b(\d{1,2}|quarter|half) (past|after|to|till|before) (\d{1,2})(?: ?([ap]m)| (in the morning|in the afternoon|in the evening|at night))?\b/,
  (context, match) => {
    const minutes = clockPhraseMinutes(match[1] ?? "");
    const portion = match[5];
    const meridiem = match[4] ?? (portion && (portion === "in the morning" ? "am" : "pm"));
    let hour = Number(match[3]);
    if (minutes === null || hour > (meridiem ? 12 : 23)) return null;
    if (meridiem) hour = (hour % 12) + (meridiem === "pm" ? 12 : 0);
    const eitherHalf = hour <= 12 && !meridiem;
    const dayMinutes = eitherHalf ? 12 * 60 : 24 * 60;
    const offset = MINUTES_BEFORE.has(match[2] ?? "") ? -minutes : minutes;
    const total = (((hour * 60) % dayMinutes) + offset + dayMinutes) % dayMinutes;
    const components = context
      .createParsingComponents()
      .assign("hour", Math.floor(total / 60))
      .assign("minute", total % 60);
    if (meridiem) return components.assign("meridiem", total >= 12 * 60 ? Meridiem.PM : Meridiem.AM);
    return eitherHalf ? components.addTags([AMBIGUOUS_HOUR, EITHER_HALF_OF_DAY]) : components;
  },
);

/**
 * "10 to", "quarter past" without an hour: minutes before or after the coming hour, that is
 * the next time from now at that minute ("10 to" at 14:00 is 14:50, at 14:55 it is 15:50).
 */
const hourlessClockPhraseParser = parser(
  /\b(\d{1,2}|quarter|half) (past|after|to|till|before)$/,
  (context, match) => {
    const minutes = clockPhraseMinutes(match[1] ?? "");
    if (minutes === null) return null;
    const { now } = clockOf(context);
    const minute = MINUTES_BEFORE.has(match[2] ?? "") ? 60 - minutes : minutes;
    const thisHour = now.startOf("hour").set({ minute });
    return instantResult(context, thisHour < now ? thisHour.plus({ hours: 1 }) : thisHour);
  },
);

const midnightParser = parser(/\bmidnight\b/, (context) =>
  context.createParsingComponents().assign("hour", 0).assign("minute", 0).addTag(MIDNIGHT),
);

/** "in 3 hours", "in 5 mins", "in 2 hours and 15 minutes": an offset from now. */
const inOffsetParser = parser(new RegExp(`\\bin ${OFFSET_TERMS}\\b`), (context, match) => {
  const instant = offsetFrom(clockOf(context), clockOf(context).now, match[1] ?? "", 1);
  return instant ? instantResult(context, instant) : null;
});

/**
 * "7 days from now", "1 week hence", "3 years ago", "2 hours and 15 minutes from now",
 * "7 hours before tomorrow at noon", "1 year ago tomorrow": an offset from an anchor, which is
 * any readable expression (now when none follows "ago", "hence" or "later").
 */
const anchoredOffsetParser = parser(
  new RegExp(`\\b${OFFSET_TERMS} (?<pointer>ago|hence|later|before|after|from)(?: (?<anchor>.+))?$`),
  (context, match) => {
    const clock = clockOf(context);
    const pointer = match.groups?.pointer ?? "";
    const anchorText = match.groups?.anchor;
    const needsAnchor = pointer === "before" || pointer === "after" || pointer === "from";
    if (needsAnchor && anchorText === undefined) return null;
    const anchor = anchorText === undefined ? clock.now : readChronicExpression(anchorText, clock.now);
    if (!anchor) return null;
    const instant = offsetFrom(
      clock,
      anchor,
      match[1] ?? "",
      pointer === "ago" || pointer === "before" ? -1 : 1,
    );
    return instant ? instantResult(context, instant) : null;
  },
);

/**
 * An offset ("2 hours and 15 minutes") applied to its anchor, term by term as written. Days and
 * longer move on the calendar (same wall-clock time), hours and shorter are elapsed, business
 * days skip Saturdays and Sundays. Weekends and parts of the day are counted from now only, and
 * alone ("2 weekends from now", "3 mornings ago"). Null for other uses of them.
 */
function offsetFrom(clock: Clock, anchor: DateTime, terms: string, direction: 1 | -1): DateTime | null {
  const counted = [...terms.matchAll(OFFSET_TERM)].map(
    ([, count, unit]) => [Number(count), unit ?? ""] as const,
  );
  const [first] = counted;
  if (!first) return null;
  const [count, unit] = first;
  if (unit === "weekend" || unit in DAY_PORTIONS) {
    if (counted.length > 1 || count < 1 || anchor.toMillis() !== clock.now.toMillis()) return null;
    const wall =
      unit === "weekend"
        ? nthWeekend(clock, count, direction)
        : nthPortion(clock, unit as DayPortion, count, direction);
    return instantOf(wall, clock.zone);
  }
  let instant = anchor;
  for (const [amount, word] of counted) {
    const duration = OFFSET_UNITS[word];
    if (duration) instant = instant.plus({ [duration[0]]: direction * amount * duration[1] });
    else if (word === "weekday" || word === "businessday")
      instant = plusBusinessDays(instant, direction * amount);
    else return null;
  }
  return instant;
}

const ORDINAL_OUTER = `(?:(?:in|of) )?(?:${GRABBER} )?(${alternation(MONTHS)}|week|month|year)(?: (\\d{4}))?`;

/**
 * "3rd wednesday in november", "3rd month next year", "4th day last week", "1st week next month":
 * the Nth weekday (day, week, month) that starts within the outer span.
 */
const ordinalInPeriodParser = parser(
  new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th) (${alternation(WEEKDAYS)}|day|week|month) ${ORDINAL_OUTER}\\b`),
  (context, match) => {
    const clock = clockOf(context);
    const nth = Number(match[1]);
    const inner = match[2] ?? "";
    const grabber = match[3] as Grabber | undefined;
    const outerWord = match[4] ?? "";
    const year = match[5];
    const outerMonth = MONTHS[outerWord];
    let outer: Span;
    if (outerMonth !== undefined) {
      if (grabber && year) return null;
      outer = year
        ? periodAround(clock.wallNow.set({ year: Number(year), month: outerMonth, day: 1 }), "month")
        : monthSpan(clock, outerMonth, grabber);
    } else {
      if (!grabber || year) return null;
      outer = periodSpan(clock, outerWord as PeriodUnit, grabber);
    }
    if (nth < 1) return null;
    const firstDay = firstDayFrom(outer.start);
    let occurrence: Span;
    if (inner === "month") {
      const firstMonth = firstDay.day === 1 ? firstDay : firstDay.startOf("month").plus({ months: 1 });
      occurrence = periodAround(firstMonth.plus({ months: nth - 1 }), "month");
    } else if (inner === "week") {
      const sunday = startOfWeek(firstDay);
      const firstWeek = sunday < firstDay ? sunday.plus({ weeks: 1 }) : sunday;
      occurrence = periodAround(firstWeek.plus({ weeks: nth - 1 }), "week");
    } else {
      const weekday = WEEKDAYS[inner];
      let day = firstDay;
      if (weekday !== undefined) {
        while (day.weekday % 7 !== weekday) day = day.plus({ days: 1 });
        day = day.plus({ weeks: nth - 1 });
      } else {
        day = day.plus({ days: nth - 1 });
      }
      occurrence = periodAround(day, "day");
    }
    if (occurrence.start >= outer.end) return null;
    return inner === "day" || WEEKDAYS[inner] !== undefined
      ? dateResult(context, occurrence.start)
      : spanGuessResult(context, occurrence);
  },
);

/** "1979-05", "2026/11": a month of a year. */
const yearMonthParser = parser(/\b(\d{4})[-/](\d{1,2})\b(?![-/:\d])/, (context, match) => {
  const month = Number(match[2]);
  if (month < 1 || month > 12) return null;
  return context.createParsingComponents().assign("year", Number(match[1])).assign("month", month);
});

/** "2027 march 3rd", "2009 may 22nd": a date written year first. */
const yearMonthNameDayParser = parser(
  new RegExp(`\\b(\\d{4}) ${MONTH} (\\d{1,2})(?:st|nd|rd|th)?\\b(?!:)`),
  (context, match) => {
    const date = DateTime.fromObject(
      { year: Number(match[1]), month: MONTHS[match[2] ?? ""], day: Number(match[3]) },
      { zone: "utc" },
    );
    return date.isValid ? dateResult(context, date) : null;
  },
);

// ---------------------------------------------------------------------------------------------
// Refiners: Chronic's rules applied to what the parsers found

function refiner(refine: Refiner["refine"]): Refiner {
  return { refine };
}

/** A start time is one time: ranges ("5-7pm", chrono-node's reading of "10 to 8") are dropped. */
const dropRangesRefiner = refiner((_context, results) => results.filter((result) => !result.end));

/**
 * A weekday name before a calendar date ("fri sep 4", "friday 4 september 2026 at 3pm") adds
 * nothing to it: the date is read and the name let go, as Chronic does.
 */
const weekdayBeforeDateRefiner = refiner((context, results) =>
  results.filter((result, index) => {
    const date = results[index + 1];
    if (!date || !result.start.tags().has(WEEKDAY_NAME)) return true;
    const between = context.text.slice(result.index + result.text.length, date.index);
    if (!/^ (?:the )?$/.test(between) || !date.start.isCertain("month") || !date.start.isCertain("day")) {
      return true;
    }
    date.text = context.text.slice(result.index, date.index + date.text.length);
    date.index = result.index;
    return false;
  }),
);

/** The zone names Chronic reads after a time (its TimeZone tag, and GMT), as UTC offsets in minutes. */
const ZONE_OFFSETS: Record<string, number> = {
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
const ZONE_AFTER_TIME = new RegExp(`^ (${alternation(ZONE_OFFSETS)})\\b`);
/** date(1)'s "17:00:00 pdt 2007": the year after the zone, moved before the time. */
const YEAR_AFTER_ZONE = new RegExp(
  `\\b(\\d{1,2}:\\d{2}(?::\\d{2})? (?:${alternation(ZONE_OFFSETS)})) (\\d{4})$`,
);

/** A zone name after a time ("2011-07-03 21:11:35 utc", "5pm est") fixes its UTC offset. */
const zoneNameRefiner = refiner((context, results) => {
  for (const result of results) {
    if (!result.start.isCertain("hour") || result.start.isCertain("timezoneOffset")) continue;
    const zone = ZONE_AFTER_TIME.exec(context.text.slice(result.index + result.text.length))?.[1];
    if (zone === undefined) continue;
    result.start.assign("timezoneOffset", ZONE_OFFSETS[zone] ?? 0);
    result.text += ` ${zone}`;
  }
  return results;
});

function isTimeOnly(components: ParsingComponents): boolean {
  return components.isCertain("hour") && !components.isCertain("day");
}

/**
 * Chronic reads an hour written 1-12 without am/pm and without a leading zero as ambiguous
 * ("5", "4:00", "11:30"; not "08:00", "0800" or "17:00").
 */
const markAmbiguousHoursRefiner = refiner((_context, results) => {
  for (const result of results) {
    const start = result.start;
    if (!isTimeOnly(start) || start.isCertain("meridiem")) continue;
    const hour = start.get("hour") ?? 0;
    const digits = /\d+/.exec(result.text)?.[0] ?? "";
    if (hour >= 1 && hour <= 12 && !digits.startsWith("0")) start.addTag(AMBIGUOUS_HOUR);
  }
  return results;
});

/** An ambiguous hour on a known day: am or pm from a part of the day, else 6 am to 6 pm. */
const resolveDatedHoursRefiner = refiner((_context, results) => {
  for (const { start } of results) {
    if (!start.tags().has(AMBIGUOUS_HOUR) || !start.isCertain("day")) continue;
    const hour = start.get("hour") ?? 0;
    const portion = portionOf(start);
    start.assign("hour", portion ? portionHour(hour, portion) : dayTimeHour(hour));
  }
  return results;
});

/** Midnight is 24:00: the end of the day it is attached to, by default of today. */
const midnightRefiner = refiner((context, results) => {
  const clock = clockOf(context);
  for (const { start } of results) {
    if (!start.tags().has(MIDNIGHT)) continue;
    const day = start.isCertain("day")
      ? clock.wallNow.set({
          year: start.get("year") ?? 0,
          month: start.get("month") ?? 1,
          day: start.get("day") ?? 1,
        })
      : clock.wallNow;
    assignDate(start, day.startOf("day").plus({ days: 1 }));
  }
  return results;
});

/**
 * A month (and day) without a year: this year unless that day (month) is already over, else next
 * year. A two-digit year lies within 50 years of now (Chronic's ambiguous_year_future_bias).
 */
const yearRefiner = refiner((context, results) => {
  const now = clockOf(context).wallNow;
  for (const result of results) {
    const start = result.start;
    if (start.tags().has(FIXED)) continue;
    const year = start.get("year") ?? now.year;
    if (start.isCertain("year")) {
      if (writtenWithTwoDigits(result.text, year)) start.assign("year", nearbyYear(year % 100, now.year));
      continue;
    }
    if (!start.isCertain("month")) continue;
    const month = start.get("month") ?? 1;
    let candidate = now.year;
    if (start.isCertain("day")) {
      const date = DateTime.fromObject(
        { year: now.year, month, day: start.get("day") ?? 1 },
        { zone: "utc" },
      );
      if (date.isValid && date < now.startOf("day")) candidate += 1;
    } else if (month < now.month) {
      candidate += 1;
    }
    start.assign("year", candidate);
  }
  return results;
});

function writtenWithTwoDigits(text: string, year: number): boolean {
  const twoDigits = String(year % 100).padStart(2, "0");
  return !text.includes(String(year)) && new RegExp(`(?:^|\\D)${twoDigits}(?:\\D|$)`).test(text);
}

function nearbyYear(twoDigits: number, currentYear: number): number {
  const earliest = currentYear - 50;
  const year = Math.floor(earliest / 100) * 100 + twoDigits;
  return year < earliest ? year + 100 : year;
}

/**
 * A clock time without a date is its next occurrence: today's if it has not passed, else
 * tomorrow's. An ambiguous hour is read between 6 am and 6 pm; a clock phrase ("half past 2")
 * takes whichever of its am and pm readings comes first.
 */
const futureTimeRefiner = refiner((context, results) => {
  for (const { start } of results) {
    if (!isTimeOnly(start)) continue;
    // A time written with a UTC offset ("5pm -0700") counts its days in that offset.
    const offset = start.get("timezoneOffset");
    const clock = start.isCertain("timezoneOffset")
      ? clockAt(clockOf(context).now.setZone(FixedOffsetZone.instance(offset ?? 0)))
      : clockOf(context);
    const hour = start.get("hour") ?? 0;
    const tags = start.tags();
    let hours = [hour];
    if (tags.has(EITHER_HALF_OF_DAY)) hours = [hour % 12, (hour % 12) + 12];
    else if (tags.has(AMBIGUOUS_HOUR)) hours = [dayTimeHour(hour)];
    const instant = nextOccurrence(
      clock,
      hours,
      start.get("minute") ?? 0,
      start.get("second") ?? 0,
      start.get("millisecond") ?? 0,
    );
    const wall = wallTimeOf(instant);
    assignDate(start, wall).assign("hour", wall.hour).assign("timezoneOffset", instant.offset);
  }
  return results;
});

/**
 * A result without a time is a span; Chronic's guess is its middle: noon of a day, the middle of
 * a month or year, the middle of a part of the day, and for "today" the middle of what is left of
 * it from the current hour on.
 */
const guessRefiner = refiner((context, results) => {
  const clock = clockOf(context);
  for (const { start } of results) {
    if (start.isCertain("hour") || !start.isCertain("year")) continue;
    const anchor = clock.wallNow.set({
      year: start.get("year") ?? clock.wallNow.year,
      month: start.get("month") ?? 1,
      day: start.isCertain("day") ? (start.get("day") ?? 1) : 1,
    });
    const portion = portionOf(start);
    let guess: WallTime;
    if (portion) {
      const { hour, minute } = DAY_PORTIONS[portion];
      guess = anchor.startOf("day").set({ hour, minute });
    } else if (start.tags().has(TODAY)) {
      guess = middleOf({
        start: clock.wallNow.startOf("hour"),
        end: anchor.startOf("day").plus({ days: 1 }),
      });
    } else {
      const unit = start.isCertain("day") ? "day" : start.isCertain("month") ? "month" : "year";
      guess = middleOf(periodAround(anchor, unit));
    }
    for (const component of ["day", "hour", "minute", "second", "millisecond"] as const) {
      start.imply(component, guess.get(component));
    }
  }
  return results;
});

// ---------------------------------------------------------------------------------------------
// The configured reader

/** chrono-node's own parsers and refiners this reader keeps (by class name). */
const CHRONO_PARSERS = [
  "ENYearMonthDayParser",
  "SlashDateFormatParser",
  "ENMonthNameLittleEndianParser",
  "ENMonthNameMiddleEndianParser",
  "ENSlashMonthFormatParser",
  "ENTimeExpressionParser",
];
const CHRONO_REFINERS = ["OverlapRemovalRefiner", "ExtractTimezoneOffsetRefiner", "ENMergeDateTimeRefiner"];

function chronoPart<T extends object>(parts: T[], name: string): T {
  const part = parts.find((candidate) => candidate.constructor.name === name);
  if (!part) throw new Error(`chrono-node no longer provides ${name}`);
  return part;
}

function createReader(): Chrono {
  const strict = englishConfiguration.createConfiguration(true, false);
  const casual = englishConfiguration.createCasualConfiguration(false);
  const [overlapRemoval, timezoneOffset, mergeDateTime] = CHRONO_REFINERS.map((name) =>
    chronoPart(strict.refiners, name),
  ) as [Refiner, Refiner, Refiner];
  return new Chrono({
    // Ours come first: on a tie in length, chrono-node keeps the earlier parser's reading.
    parsers: [
      nowParser,
      casualDayParser,
      dayThenPortionParser,
      portionThenDayParser,
      weekdayThenWeekParser,
      weekThenWeekdayParser,
      weekdayOrdinalDayParser,
      weekdayParser,
      monthWithGrabberParser,
      periodParser,
      portionTimeParser,
      clockPhraseParser,
      hourlessClockPhraseParser,
      midnightParser,
      inOffsetParser,
      anchoredOffsetParser,
      ordinalInPeriodParser,
      yearMonthParser,
      yearMonthNameDayParser,
      bareTimeParser,
      ...CHRONO_PARSERS.map((name) => chronoPart(strict.parsers, name)),
      chronoPart(casual.parsers, "ENMonthNameParser"),
    ],
    refiners: [
      dropRangesRefiner,
      markAmbiguousHoursRefiner,
      // Before overlap removal, so that the offset ("+05:30") no longer stands as a time of its own.
      timezoneOffset,
      overlapRemoval,
      mergeDateTime,
      zoneNameRefiner,
      weekdayBeforeDateRefiner,
      resolveDatedHoursRefiner,
      midnightRefiner,
      yearRefiner,
      futureTimeRefiner,
      guessRefiner,
    ],
  });
}

const reader = createReader();

function instantFrom(components: ParsingComponents, clock: Clock): DateTime | null {
  const field = (component: Component) => components.get(component) ?? 0;
  const wall = DateTime.fromObject(
    {
      year: field("year"),
      month: field("month"),
      day: field("day"),
      hour: field("hour"),
      minute: field("minute"),
      second: field("second"),
      millisecond: field("millisecond"),
    },
    { zone: "utc" },
  );
  if (!wall.isValid) return null;
  if (!components.isCertain("timezoneOffset")) return instantOf(wall, clock.zone);
  const pinned = wall.setZone(FixedOffsetZone.instance(field("timezoneOffset")), { keepLocalTime: true });
  return pinned.setZone(clock.zone);
}

/**
 * Reads a free-form expression as Chronic would, on the wall clock of `now`'s zone. Words that
 * are not time words are skipped; the time words must make one reading, and joining words ("at",
 * "of") outside it are skipped too. Null when no such reading exists (or it names no valid date).
 */
export function readChronicExpression(expression: string, now: DateTime): DateTime | null {
  const text = withoutSkippedWords(normalizeExpression(expression, now.year));
  if (!text.split(" ").some(isTimeWord)) return null;
  const clock = clockAt(now);
  const reference = now.toJSDate();
  clocks.set(reference, clock);
  const results = reader.parse(text, reference) as ParsingResult[];
  const [result] = results;
  if (results.length !== 1 || !result) return null;
  const outside = `${text.slice(0, result.index)} ${text.slice(result.index + result.text.length)}`;
  if (outside.split(" ").some(isTimeWord)) return null;
  return instantFrom(result.start, clock);
}
