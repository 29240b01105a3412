/**
 * Calendar rules of Chronic's repeaters, on the owner's wall clock: weekdays, business days,
 * weekends, fortnights, parts of days, months, periods, and the century of a two-digit year.
 */
import type { DateTime } from "luxon";
import { DAY_PORTIONS, type DayPortion, type Grabber } from "./chronic-vocabulary.js";
import { type Clock, type PeriodUnit, periodAround, type Span, type WallTime } from "./wall-clock.js";

/** The first day strictly after (direction 1) or before (-1) `day` that falls on the weekday. */
function weekdayAfter(day: WallTime, weekday: number, direction: 1 | -1): WallTime {
  let candidate = day.startOf("day");
  do candidate = candidate.plus({ days: direction });
  while (candidate.weekday % 7 !== weekday);
  return candidate;
}

/** A weekday: the next one after today, or the last one before it; never today. */
export function weekdayFrom(clock: Clock, weekday: number, direction: 1 | -1): WallTime {
  return weekdayAfter(clock.wallNow, weekday, direction);
}

const SUNDAY = 0;
const SATURDAY = 6;

function isBusinessDay(wall: DateTime): boolean {
  return wall.weekday < 6;
}

/** A business day (Chronic's "weekday"): the next one after today, or the last one before it. */
export function businessDayFrom(clock: Clock, direction: 1 | -1): WallTime {
  let day = clock.wallNow.startOf("day");
  do day = day.plus({ days: direction });
  while (!isBusinessDay(day));
  return day;
}

/**
 * Chronic's weekend, Saturday 00:00 to Monday 00:00: "this" and "next" are the first one after
 * today, "last" the latest one starting on or before today.
 */
export function weekendSpan(clock: Clock, grabber: Grabber): Span {
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
export function fortnightSpan(clock: Clock, grabber: Grabber): Span {
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
export function nthWeekend(clock: Clock, count: number, direction: 1 | -1): WallTime {
  return weekendSpan(clock, direction > 0 ? "next" : "last").start.plus({ weeks: direction * (count - 1) });
}

/**
 * "3 mornings from now": the Nth such part of a day after now, guessed at its middle. The first
 * is today's when it has not begun, else tomorrow's (ago: today's when it is over, else
 * yesterday's), as Chronic counts them.
 */
export function nthPortion(clock: Clock, portion: DayPortion, count: number, direction: 1 | -1): WallTime {
  const { from, to, hour, minute } = DAY_PORTIONS[portion];
  const today = clock.wallNow.startOf("day");
  const hours = clock.wallNow.diff(today).as("hours");
  let first = today.plus({ days: direction });
  if (hours < from && direction > 0) first = today;
  if (hours > to && direction < 0) first = today;
  return first.plus({ days: direction * (count - 1) }).set({ hour, minute });
}

/** Business days from an instant, keeping its wall-clock time. */
export function plusBusinessDays(instant: DateTime, count: number): DateTime {
  let day = instant;
  for (let left = Math.abs(count); left > 0; ) {
    day = day.plus({ days: Math.sign(count) });
    if (isBusinessDay(day)) left -= 1;
  }
  return day;
}

/** A named month: this one while it lasts, else the next; "next"/"last" skip the current one. */
export function monthSpan(clock: Clock, month: number, grabber: Grabber | undefined): Span {
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
export function periodSpan(clock: Clock, unit: PeriodUnit, grabber: Grabber): Span {
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
export function firstDayFrom(wall: WallTime): WallTime {
  const day = wall.startOf("day");
  return day < wall ? day.plus({ days: 1 }) : day;
}

export function nearbyYear(twoDigits: number, currentYear: number): number {
  const earliest = currentYear - 50;
  const year = Math.floor(earliest / 100) * 100 + twoDigits;
  return year < earliest ? year + 100 : year;
}
