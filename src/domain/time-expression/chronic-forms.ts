/**
 * Chronic's reading of free-form time expressions, built on chrono-node. chrono-node supplies the
 * framework and its English date and clock-time parsers; this module adds, as chrono-node parsers
 * and refiners, the forms it lacks and the rules by which the Ruby library Chronic turns a form
 * into one instant (spans resolve to their middle, bare hours are read between 6 am and 6 pm,
 * clock times without a date lie in the future). docs/time-expressions.md lists the forms.
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
  sun: 0,
  monday: 1,
  mon: 1,
  tuesday: 2,
  tues: 2,
  tue: 2,
  wednesday: 3,
  wednes: 3,
  wed: 3,
  thursday: 4,
  thurs: 4,
  thur: 4,
  thu: 4,
  friday: 5,
  fri: 5,
  saturday: 6,
  sat: 6,
};

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
 * Chronic's parts of the day and the time each guesses, the middle of its span: morning 6-12,
 * afternoon 13-17, evening 17-20, night 20-24. All but the morning read a clock hour as pm.
 */
const DAY_PORTIONS = {
  morning: { hour: 9, minute: 0, afternoonClock: false },
  afternoon: { hour: 15, minute: 0, afternoonClock: true },
  evening: { hour: 18, minute: 30, afternoonClock: true },
  night: { hour: 22, minute: 0, afternoonClock: true },
} as const;
type DayPortion = keyof typeof DAY_PORTIONS;

function alternation(words: Record<string, unknown>): string {
  return Object.keys(words)
    .sort((a, b) => b.length - a.length)
    .join("|");
}

const WEEKDAY = `(${alternation(WEEKDAYS)})`;
const MONTH = `(${alternation(MONTHS)})`;
const OFFSET_UNIT = `(${alternation(OFFSET_UNITS)})s?`;
const PORTION = "(morning|afternoon|evening|night)";
const GRABBER = "(this|next|last)";
type Grabber = "this" | "next" | "last";

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

/** Lower case, single spaces, Chronic's idioms in canonical form. */
function normalizeExpression(expression: string): string {
  const text = expression
    .toLowerCase()
    .replace(/\b([ap])\.m\.?/g, "$1m")
    .replace(/['"]/g, "")
    .replace(/,/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return numerize(text)
    .replace(/\b(?:tomm?orr?ow|tmrw)\b/g, "tomorrow")
    .replace(/\b(?:noon|midday)\b/g, "12pm")
    .replace(/\bthis (?:last|past)\b/g, "last")
    .replace(/\ba quarter\b/g, "quarter")
    .replace(/ ?\bo ?clock\b/g, "")
    .replace(/\b(\d{1,2}(?::\d{2})?) ?([ap])\b/g, "$1$2m")
    .replace(/^(?:at|on|the) /, "");
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

/** A weekday: the next one after today, or the last one before it; never today. */
function weekdayFrom(clock: Clock, weekday: number, direction: 1 | -1): WallTime {
  let day = clock.wallNow.startOf("day");
  do day = day.plus({ days: direction });
  while (day.weekday % 7 !== weekday);
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

const nowParser = parser(/\b(?:right now|now|this second)\b/, (context) =>
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
  return dateResult(context, weekdayFrom(clockOf(context), weekday, match[1] === "last" ? -1 : 1));
});

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
  new RegExp(`\\b${GRABBER} (second|minute|hour|day|week|month|year)\\b`),
  (context, match) => {
    const grabber = match[1] as Grabber;
    const unit = match[2] as PeriodUnit;
    if (grabber === "this" && unit === "day") {
      return dateResult(context, clockOf(context).wallNow.startOf("day"), [TODAY]);
    }
    return spanGuessResult(context, periodSpan(clockOf(context), unit, grabber));
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

/** "10 to 8", "half past 2", "quarter after 3", "5 before 3": minutes before or after an hour. */
const clockPhraseParser = parser(
  /\b(\d{1,2}|quarter|half) (past|after|to|till|before) (\d{1,2})\b/,
  (context, match) => {
    const minutes = CLOCK_PHRASE_MINUTES[match[1] ?? ""] ?? Number(match[1]);
    const hour = Number(match[3]);
    if (minutes < 1 || minutes > 59 || hour > 23) return null;
    const before = ["to", "till", "before"].includes(match[2] ?? "");
    const dayMinutes = hour <= 12 ? 12 * 60 : 24 * 60;
    const total = ((hour % (dayMinutes / 60)) * 60 + (before ? -minutes : minutes) + dayMinutes) % dayMinutes;
    const components = context
      .createParsingComponents()
      .assign("hour", Math.floor(total / 60))
      .assign("minute", total % 60);
    return hour <= 12 ? components.addTags([AMBIGUOUS_HOUR, EITHER_HALF_OF_DAY]) : components;
  },
);

const midnightParser = parser(/\bmidnight\b/, (context) =>
  context.createParsingComponents().assign("hour", 0).assign("minute", 0).addTag(MIDNIGHT),
);

/** "in 3 hours": an offset from now. */
const inOffsetParser = parser(new RegExp(`\\bin (\\d+) ${OFFSET_UNIT}\\b`), (context, match) => {
  const clock = clockOf(context);
  return instantResult(context, offsetFrom(clock.now, match[2] ?? "", Number(match[1])));
});

/**
 * "7 days from now", "1 week hence", "3 years ago", "7 hours before tomorrow at noon",
 * "1 year ago tomorrow": an offset from an anchor, which is any readable expression (now when
 * none follows "ago", "hence" or "later").
 */
const anchoredOffsetParser = parser(
  new RegExp(`\\b(\\d+) ${OFFSET_UNIT} (ago|hence|later|before|after|from)(?: (.+))?$`),
  (context, match) => {
    const clock = clockOf(context);
    const pointer = match[3] ?? "";
    const anchorText = match[4];
    const needsAnchor = pointer === "before" || pointer === "after" || pointer === "from";
    if (needsAnchor && anchorText === undefined) return null;
    const anchor = anchorText === undefined ? clock.now : readChronicExpression(anchorText, clock.now);
    if (!anchor) return null;
    const sign = pointer === "ago" || pointer === "before" ? -1 : 1;
    return instantResult(context, offsetFrom(anchor, match[2] ?? "", sign * Number(match[1])));
  },
);

/** Days and longer move on the calendar (same wall-clock time); hours and shorter are elapsed. */
function offsetFrom(anchor: DateTime, unitWord: string, amount: number): DateTime {
  const [unit, multiple] = OFFSET_UNITS[unitWord] ?? ["days", 1];
  return anchor.plus({ [unit]: amount * multiple });
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

/** "1979-05": a month of a year. */
const yearMonthParser = parser(/\b(\d{4})-(\d{1,2})\b(?![-/:\d])/, (context, match) => {
  const month = Number(match[2]);
  if (month < 1 || month > 12) return null;
  return context.createParsingComponents().assign("year", Number(match[1])).assign("month", month);
});

// ---------------------------------------------------------------------------------------------
// Refiners: Chronic's rules applied to what the parsers found

function refiner(refine: Refiner["refine"]): Refiner {
  return { refine };
}

/** A start time is one time: ranges ("5-7pm", chrono-node's reading of "10 to 8") are dropped. */
const dropRangesRefiner = refiner((_context, results) => results.filter((result) => !result.end));

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
      weekdayParser,
      monthWithGrabberParser,
      periodParser,
      portionTimeParser,
      clockPhraseParser,
      midnightParser,
      inOffsetParser,
      anchoredOffsetParser,
      ordinalInPeriodParser,
      yearMonthParser,
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
 * Reads a free-form expression as Chronic would, on the wall clock of `now`'s zone. The whole
 * expression must be understood: null when it is not (or names no valid date).
 */
export function readChronicExpression(expression: string, now: DateTime): DateTime | null {
  const text = normalizeExpression(expression);
  if (text === "") return null;
  const clock = clockAt(now);
  const reference = now.toJSDate();
  clocks.set(reference, clock);
  const results = reader.parse(text, reference) as ParsingResult[];
  const [result] = results;
  if (results.length !== 1 || !result || result.index !== 0 || result.text.length !== text.length) {
    return null;
  }
  return instantFrom(result.start, clock);
}
