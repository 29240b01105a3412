import { DateTime, IANAZone } from "luxon";
import { USER_TIME_ZONES } from "./reference-data.js";
import { readChronicExpression } from "./time-expression/chronic-forms.js";
import { instantOf } from "./time-expression/wall-clock.js";

/** Where and when an expression is read: the owner's zone (IANA) and the current instant. */
export interface TimeContext {
  now: Date;
  timeZone: string;
}

/** An ISO 8601 date and time ("2024-03-10T09:00", with or without an offset). */
const ISO_DATE_TIME = /^\d{4}-?\d{2}-?\d{2}t\d/i;
const ISO_OFFSET = /(?:z|[+-]\d{2}(?::?\d{2})?)$/i;

/**
 * The one entry point for reading scheduled-to-start-at (the API and `bridgeline parse-time` both
 * call it). An ISO 8601 date and time is taken as written, in the owner's zone when it carries no
 * offset; anything else is read as a free-form expression the way Chronic reads it
 * (docs/time-expressions.md). Returns null when the expression cannot be read.
 */
export function parseStartTime(expression: string, context: TimeContext): Date | null {
  const text = expression.trim();
  const now = DateTime.fromJSDate(context.now, { zone: context.timeZone });
  if (!now.isValid) return null;
  if (ISO_DATE_TIME.test(text)) {
    // Read in UTC: with an offset that is the instant, without one the owner's wall clock.
    const parsed = DateTime.fromISO(text, { zone: "utc" });
    if (!parsed.isValid) return null;
    return (ISO_OFFSET.test(text) ? parsed : instantOf(parsed, context.timeZone)).toJSDate();
  }
  return readChronicExpression(text, now)?.toJSDate() ?? null;
}

/** The IANA zone for a user time-zone name of the spec ("Newfoundland") or an IANA name itself. */
export function timeZoneNamed(name: string): string | null {
  const zone = USER_TIME_ZONES.get(name);
  if (zone) return zone;
  return IANAZone.isValidZone(name) ? name : null;
}
