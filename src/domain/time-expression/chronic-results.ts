/**
 * Tags that carry Chronic's meaning from the parsers to the refiners, the components a parser
 * returns, and the hour rules both read.
 */
// The English entry point: the package root would load every locale chrono-node ships.
import type { Parser, ParsingComponents } from "chrono-node/en";
import type { DateTime } from "luxon";
import { DAY_PORTIONS, type DayPortion } from "./chronic-vocabulary.js";
import { type Clock, middleOf, type Span, type WallTime, wallTimeOf } from "./wall-clock.js";

/** A clock hour written 1-12 without am/pm (Chronic's "ambiguous" time). */
export const AMBIGUOUS_HOUR = "chronic/ambiguous-hour";
/** A clock phrase ("10 to 8"): without a date, the next of its am and pm readings. */
export const EITHER_HALF_OF_DAY = "chronic/either-half-of-day";
/** "today": Chronic's span runs from the current hour to midnight. */
export const TODAY = "chronic/today";
/** "midnight" is 24:00, the end of its day. */
export const MIDNIGHT = "chronic/midnight";
export const PORTION_TAG = "chronic/portion:";
/** A weekday name alone: let go when a calendar date follows it ("fri sep 4"). */
export const WEEKDAY_NAME = "chronic/weekday-name";
/** A point this module has already fixed (an instant, or a span's guess): no refiner changes it. */
export const FIXED = "chronic/fixed";

export type ParsingContext = Parameters<Parser["extract"]>[0];

export const clocks = new WeakMap<Date, Clock>();

export function clockOf(context: ParsingContext): Clock {
  const clock = clocks.get(context.refDate);
  if (!clock) throw new Error("time expression parsed without a clock");
  return clock;
}

export function portionOf(components: ParsingComponents): DayPortion | undefined {
  for (const tag of components.tags()) {
    if (tag.startsWith(PORTION_TAG)) return tag.slice(PORTION_TAG.length) as DayPortion;
  }
  return undefined;
}

export function assignDate(components: ParsingComponents, wall: WallTime): ParsingComponents {
  return components
    .assign("year", wall.year)
    .assign("month", wall.month)
    .assign("day", wall.day)
    .assign("weekday", wall.weekday % 7);
}

/** A date without a time: chrono-node merges it with a following time, else it is guessed. */
export function dateResult(context: ParsingContext, wall: WallTime, tags: string[] = []): ParsingComponents {
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
export function instantResult(context: ParsingContext, instant: DateTime): ParsingComponents {
  return wallPointResult(context, wallTimeOf(instant)).assign("timezoneOffset", instant.offset);
}

export function spanGuessResult(context: ParsingContext, span: Span): ParsingComponents {
  return wallPointResult(context, middleOf(span));
}

/** Hours 1-12 without am/pm fall between 6 am and 6 pm (Chronic's ambiguous_time_range 6). */
export function dayTimeHour(hour: number): number {
  const twelveHour = hour % 12;
  if (twelveHour === 0) return 12;
  return twelveHour < 6 ? twelveHour + 12 : twelveHour;
}

export function portionHour(hour: number, portion: DayPortion): number {
  return (hour % 12) + (DAY_PORTIONS[portion].afternoonClock ? 12 : 0);
}
