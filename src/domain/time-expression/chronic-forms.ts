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
 *
 * Here: the configured reader. Its parts, in the order an expression meets them:
 * chronic-vocabulary.ts, chronic-normalization.ts, chronic-parsers.ts (with chronic-calendar.ts),
 * chronic-results.ts, chronic-refiners.ts.
 */
// The English entry point: the package root would load every locale chrono-node ships.
import {
  Chrono,
  type Component,
  configuration as englishConfiguration,
  type ParsingComponents,
  type ParsingResult,
  type Refiner,
} from "chrono-node/en";
import { DateTime, FixedOffsetZone } from "luxon";
import { normalizeExpression } from "./chronic-normalization.js";
import {
  bareTimeParser,
  casualDayParser,
  clockPhraseParser,
  dayThenPortionParser,
  hourlessClockPhraseParser,
  inOffsetParser,
  midnightParser,
  monthWithGrabberParser,
  nowParser,
  offsetFrom,
  ordinalInPeriodParser,
  parser,
  periodParser,
  portionThenDayParser,
  portionTimeParser,
  weekdayOrdinalDayParser,
  weekdayParser,
  weekdayThenWeekParser,
  weekThenWeekdayParser,
  yearMonthNameDayParser,
  yearMonthParser,
} from "./chronic-parsers.js";
import {
  dropRangesRefiner,
  futureTimeRefiner,
  guessRefiner,
  markAmbiguousHoursRefiner,
  midnightRefiner,
  resolveDatedHoursRefiner,
  weekdayBeforeDateRefiner,
  yearRefiner,
  zoneNameRefiner,
} from "./chronic-refiners.js";
import { clockOf, clocks, instantResult } from "./chronic-results.js";
import { isTimeWord, OFFSET_TERMS, withoutSkippedWords } from "./chronic-vocabulary.js";
import { type Clock, clockAt, instantOf } from "./wall-clock.js";

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
