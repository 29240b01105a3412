import { DateTime, Info } from "luxon";

/**
 * A reading of the owner's wall clock, held as a Luxon DateTime in UTC: calendar arithmetic on it
 * (next day, next month, the middle of a span) never meets a DST change. It becomes an instant
 * only through instantOf, with the zone rules in force on its own date.
 */
export type WallTime = DateTime;

/** When and where an expression is read. */
export interface Clock {
  /** The current instant, in the owner's zone. */
  now: DateTime;
  /** The owner's wall clock at that instant. */
  wallNow: WallTime;
  zone: string;
}

/** A stretch of wall-clock time [start, end): what Chronic calls a span. */
export interface Span {
  start: WallTime;
  end: WallTime;
}

export function clockAt(now: DateTime): Clock {
  return { now, wallNow: wallTimeOf(now), zone: now.zoneName ?? "UTC" };
}

export function wallTimeOf(instant: DateTime): WallTime {
  return instant.setZone("utc", { keepLocalTime: true });
}

/**
 * The instant a wall-clock reading names in the zone. A reading inside the spring-forward gap
 * moves forward by the gap; a reading in the repeated autumn hour is its first occurrence.
 */
export function instantOf(wall: WallTime, zone: string): DateTime {
  const rules = Info.normalizeZone(zone);
  const local = wall.toMillis();
  // The zone's offsets a day either side: one, or the two of a DST change in between.
  const offsets = [rules.offset(local - DAY_MS), rules.offset(local + DAY_MS)];
  if (offsets[0] === offsets[1])
    return DateTime.fromMillis(local - (offsets[0] ?? 0) * 60_000, { zone: rules });
  const readings = offsets
    .map((offset) => local - offset * 60_000)
    .filter((instant, index) => rules.offset(instant) === offsets[index]);
  // No reading: the wall time is in the gap, and the offset before it carries it forward.
  const instant = readings.length > 0 ? Math.min(...readings) : local - (offsets[0] ?? 0) * 60_000;
  return DateTime.fromMillis(instant, { zone: rules });
}

const DAY_MS = 24 * 3600 * 1000;

/** Chronic's guess: the middle of the span, measured on the wall clock. */
export function middleOf(span: Span): WallTime {
  const width = span.end.toMillis() - span.start.toMillis();
  return width > 1000 ? span.start.plus({ milliseconds: Math.floor(width / 2) }) : span.start;
}

/** Chronic's weeks run from Sunday 00:00 to the next Sunday. */
export function startOfWeek(wall: WallTime): WallTime {
  const day = wall.startOf("day");
  return day.minus({ days: day.weekday % 7 });
}

export type PeriodUnit = "second" | "minute" | "hour" | "day" | "week" | "month" | "year";

/** The whole period (day, week, month ...) that contains a wall-clock reading. */
export function periodAround(wall: WallTime, unit: PeriodUnit): Span {
  const start = unit === "week" ? startOfWeek(wall) : wall.startOf(unit);
  return { start, end: start.plus({ [unit]: 1 }) };
}

/** The next occurrence of a time of day at or after now: today's, else tomorrow's. */
export function nextOccurrence(
  clock: Clock,
  hours: number[],
  minute: number,
  second: number,
  millisecond: number,
): DateTime {
  const today = clock.wallNow.startOf("day");
  for (const day of [today, today.plus({ days: 1 })]) {
    for (const hour of hours) {
      const instant = instantOf(day.set({ hour, minute, second, millisecond }), clock.zone);
      if (instant >= clock.now) return instant;
    }
  }
  return instantOf(today.plus({ days: 1 }).set({ hour: hours[0], minute, second, millisecond }), clock.zone);
}
