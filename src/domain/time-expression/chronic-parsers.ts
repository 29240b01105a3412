/** chrono-node parsers for the forms chrono-node lacks or reads otherwise than Chronic. */
// The English entry point: the package root would load every locale chrono-node ships.
import { Meridiem, type Parser, type ParsingComponents } from "chrono-node/en";
import { DateTime } from "luxon";
import {
  businessDayFrom,
  firstDayFrom,
  fortnightSpan,
  monthSpan,
  nthPortion,
  nthWeekend,
  periodSpan,
  plusBusinessDays,
  weekdayFrom,
  weekendSpan,
} from "./chronic-calendar.js";
import {
  AMBIGUOUS_HOUR,
  assignDate,
  clockOf,
  dateResult,
  EITHER_HALF_OF_DAY,
  instantResult,
  MIDNIGHT,
  type ParsingContext,
  PORTION_TAG,
  portionHour,
  spanGuessResult,
  TODAY,
  WEEKDAY_NAME,
} from "./chronic-results.js";
import {
  alternation,
  DAY_PORTIONS,
  type DayPortion,
  GRABBER,
  type Grabber,
  MONTH,
  MONTHS,
  OFFSET_TERM,
  OFFSET_TERMS,
  OFFSET_UNITS,
  PERIOD_UNITS,
  PORTION,
  WEEKDAY,
  WEEKDAYS,
} from "./chronic-vocabulary.js";
import {
  type Clock,
  instantOf,
  type PeriodUnit,
  periodAround,
  type Span,
  startOfWeek,
  type WallTime,
} from "./wall-clock.js";

export function parser(pattern: RegExp, extract: Parser["extract"]): Parser {
  return { pattern: () => pattern, extract };
}

export const nowParser = parser(/\b(?:now|this second)\b/, (context) =>
  instantResult(context, clockOf(context).now),
);

export const casualDayParser = parser(/\b(today|tomorrow|yesterday|tonight)\b/, (context, match) => {
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

export const dayThenPortionParser = parser(
  new RegExp(`\\b(this|last|today|tomorrow|yesterday|${alternation(WEEKDAYS)}) ${PORTION}\\b`),
  (context, match) =>
    dateResult(context, portionDay(clockOf(context), match[1] ?? ""), [`${PORTION_TAG}${match[2]}`]),
);

export const portionThenDayParser = parser(
  new RegExp(`\\b${PORTION} (today|tomorrow|yesterday|${alternation(WEEKDAYS)})\\b`),
  (context, match) =>
    dateResult(context, portionDay(clockOf(context), match[2] ?? ""), [`${PORTION_TAG}${match[1]}`]),
);

/** "friday", "this friday", "next friday", "last friday": the next (or last) one, never today. */
export const weekdayParser = parser(new RegExp(`\\b(?:${GRABBER} )?${WEEKDAY}\\b`), (context, match) => {
  const weekday = WEEKDAYS[match[2] ?? ""] ?? 0;
  const day = weekdayFrom(clockOf(context), weekday, match[1] === "last" ? -1 : 1);
  return dateResult(context, day, match[1] ? [] : [WEEKDAY_NAME]);
});

/**
 * "fri 4th", "friday the 13th": that day of this month, or of the next once it has passed (the
 * weekday name is let go, as Chronic does).
 */
export const weekdayOrdinalDayParser = parser(
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

export const weekdayThenWeekParser = parser(
  new RegExp(`\\b${WEEKDAY} ${GRABBER} week\\b`),
  (context, match) => weekdayInWeek(context, match[1] ?? "", match[2] ?? ""),
);

export const weekThenWeekdayParser = parser(
  new RegExp(`\\b${GRABBER} week ${WEEKDAY}\\b`),
  (context, match) => weekdayInWeek(context, match[2] ?? "", match[1] ?? ""),
);

/** "next may", "last november": a month, guessed at its middle. */
export const monthWithGrabberParser = parser(new RegExp(`\\b${GRABBER} ${MONTH}\\b`), (context, match) =>
  spanGuessResult(context, monthSpan(clockOf(context), MONTHS[match[2] ?? ""] ?? 1, match[1] as Grabber)),
);

/** "next month", "this week", "last year", "next hour": the period, guessed at its middle. */
export const periodParser = parser(
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
export const portionTimeParser = parser(
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
export const bareTimeParser = parser(/(?<![\w/:.-])(\d{1,4})(?![\w/:.-])/, (context, match) => {
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
export const clockPhraseParser = parser(
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
export const hourlessClockPhraseParser = parser(
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

export const midnightParser = parser(/\bmidnight\b/, (context) =>
  context.createParsingComponents().assign("hour", 0).assign("minute", 0).addTag(MIDNIGHT),
);

/** "in 3 hours", "in 5 mins", "in 2 hours and 15 minutes": an offset from now. */
export const inOffsetParser = parser(new RegExp(`\\bin ${OFFSET_TERMS}\\b`), (context, match) => {
  const instant = offsetFrom(clockOf(context), clockOf(context).now, match[1] ?? "", 1);
  return instant ? instantResult(context, instant) : null;
});

/**
 * An offset ("2 hours and 15 minutes") applied to its anchor, term by term as written. Days and
 * longer move on the calendar (same wall-clock time), hours and shorter are elapsed, business
 * days skip Saturdays and Sundays. Weekends and parts of the day are counted from now only, and
 * alone ("2 weekends from now", "3 mornings ago"). Null for other uses of them.
 */
export function offsetFrom(
  clock: Clock,
  anchor: DateTime,
  terms: string,
  direction: 1 | -1,
): DateTime | null {
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
export const ordinalInPeriodParser = parser(
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
export const yearMonthParser = parser(/\b(\d{4})[-/](\d{1,2})\b(?![-/:\d])/, (context, match) => {
  const month = Number(match[2]);
  if (month < 1 || month > 12) return null;
  return context.createParsingComponents().assign("year", Number(match[1])).assign("month", month);
});

/** "2027 march 3rd", "2009 may 22nd": a date written year first. */
export const yearMonthNameDayParser = parser(
  new RegExp(`\\b(\\d{4}) ${MONTH} (\\d{1,2})(?:st|nd|rd|th)?\\b(?!:)`),
  (context, match) => {
    const date = DateTime.fromObject(
      { year: Number(match[1]), month: MONTHS[match[2] ?? ""], day: Number(match[3]) },
      { zone: "utc" },
    );
    return date.isValid ? dateResult(context, date) : null;
  },
);
