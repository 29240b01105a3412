/** Times and durations as the console shows them. */

/**
 * A formatter of moments in the user's time zone; in UTC when the user has none, the zone the service
 * reads their times in then, so that a time is shown as it was typed.
 */
export function dateTimeFormat(timeZone: string | null): Intl.DateTimeFormat {
  const options: Intl.DateTimeFormatOptions = {
    weekday: "short",
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "numeric",
    minute: "2-digit",
    timeZoneName: "short",
    timeZone: timeZone ?? "UTC",
  };
  try {
    return new Intl.DateTimeFormat(undefined, options);
  } catch {
    // A zone this browser does not know: its own zone, still labelled.
    options.timeZone = undefined;
    return new Intl.DateTimeFormat(undefined, options);
  }
}

/** How long a conference lasted, as a clock ("0:42"); null until it has started and ended. */
export function lasted(conference: { startedAt: Date | null; endedAt: Date | null }): string | null {
  const { startedAt, endedAt } = conference;
  return startedAt === null || endedAt === null
    ? null
    : clock((endedAt.getTime() - startedAt.getTime()) / 1000);
}

/** "1:05" or "1:02:05". */
export function clock(totalSeconds: number): string {
  const seconds = Math.max(0, Math.floor(totalSeconds));
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = String(seconds % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${rest}` : `${minutes}:${rest}`;
}

/** "3.0%" from a share 0-1; "—" when unknown. */
export function percent(share: number | null): string {
  return share === null ? "—" : `${(share * 100).toFixed(1)}%`;
}

/** "21 ms"; "—" when unknown. */
export function milliseconds(value: number | null): string {
  return value === null ? "—" : `${Math.round(value)} ms`;
}

/**
 * "2026-12-01 15:00" (seconds only when not zero): the instant on the wall clock of `timeZone`, as
 * the API reads a start time without an offset in the owner's zone, so it reads back as itself.
 */
export function wallClock(instant: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(instant)
      .map((part) => [part.type, part.value]),
  );
  const seconds = parts.second === "00" ? "" : `:${parts.second}`;
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}${seconds}`;
}
