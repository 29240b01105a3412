/**
 * chrono-node refiners applying Chronic's rules to what the parsers found: zone names, ambiguous
 * hours, midnight, years, the future, and guesses (a span's middle).
 */
// The English entry point: the package root would load every locale chrono-node ships.
import type { ParsingComponents, Refiner } from "chrono-node/en";
import { DateTime, FixedOffsetZone } from "luxon";
import { nearbyYear } from "./chronic-calendar.js";
import {
  AMBIGUOUS_HOUR,
  assignDate,
  clockOf,
  dayTimeHour,
  EITHER_HALF_OF_DAY,
  FIXED,
  MIDNIGHT,
  portionHour,
  portionOf,
  TODAY,
  WEEKDAY_NAME,
} from "./chronic-results.js";
import { DAY_PORTIONS, ZONE_AFTER_TIME, ZONE_OFFSETS } from "./chronic-vocabulary.js";
import { clockAt, middleOf, nextOccurrence, periodAround, type WallTime, wallTimeOf } from "./wall-clock.js";

function refiner(refine: Refiner["refine"]): Refiner {
  return { refine };
}

/** A start time is one time: ranges ("5-7pm", chrono-node's reading of "10 to 8") are dropped. */
export const dropRangesRefiner = refiner((_context, results) => results.filter((result) => !result.end));

/**
 * A weekday name before a calendar date ("fri sep 4", "friday 4 september 2026 at 3pm") adds
 * nothing to it: the date is read and the name let go, as Chronic does.
 */
export const weekdayBeforeDateRefiner = refiner((context, results) =>
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

/** A zone name after a time ("2011-07-03 21:11:35 utc", "5pm est") fixes its UTC offset. */
export const zoneNameRefiner = refiner((context, results) => {
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
export const markAmbiguousHoursRefiner = refiner((_context, results) => {
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
export const resolveDatedHoursRefiner = refiner((_context, results) => {
  for (const { start } of results) {
    if (!start.tags().has(AMBIGUOUS_HOUR) || !start.isCertain("day")) continue;
    const hour = start.get("hour") ?? 0;
    const portion = portionOf(start);
    start.assign("hour", portion ? portionHour(hour, portion) : dayTimeHour(hour));
  }
  return results;
});

/** Midnight is 24:00: the end of the day it is attached to, by default of today. */
export const midnightRefiner = refiner((context, results) => {
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
export const yearRefiner = refiner((context, results) => {
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

/**
 * A clock time without a date is its next occurrence: today's if it has not passed, else
 * tomorrow's. An ambiguous hour is read between 6 am and 6 pm; a clock phrase ("half past 2")
 * takes whichever of its am and pm readings comes first.
 */
export const futureTimeRefiner = refiner((context, results) => {
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
export const guessRefiner = refiner((context, results) => {
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
