import { DateTime } from "luxon";

/** Where and when an expression is read: the owner's zone (IANA) and the current instant. */
export interface TimeContext {
  now: Date;
  timeZone: string;
}

/**
 * The one entry point for reading scheduled-to-start-at. Returns null when the expression cannot
 * be read. ISO 8601 only for now (a time without an offset is wall-clock time in the owner's
 * zone); the free-form forms extend this function.
 */
export function parseStartTime(expression: string, context: TimeContext): Date | null {
  const parsed = DateTime.fromISO(expression.trim(), { zone: context.timeZone });
  return parsed.isValid ? parsed.toJSDate() : null;
}
