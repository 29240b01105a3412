/** The time zones the API accepts, by the names it takes (and shows), with their IANA zones. */
import { USER_TIME_ZONES } from "../../src/domain/reference-data.js";

export const TIME_ZONE_NAMES: readonly string[] = [...USER_TIME_ZONES.keys()];

/** The IANA zone of an API time-zone name; null for none or a name the console does not know. */
export function ianaZoneOf(name: string | null): string | null {
  return name === null ? null : (USER_TIME_ZONES.get(name) ?? null);
}

/** Minutes `timeZone` is ahead of UTC at `instant` (a whole minute). */
function offsetMinutes(instant: Date, timeZone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone,
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      hourCycle: "h23",
    })
      .formatToParts(instant)
      .map((part) => [part.type, Number(part.value)]),
  ) as Record<"year" | "month" | "day" | "hour" | "minute", number>;
  const wall = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute);
  return (wall - instant.getTime()) / 60_000;
}

/**
 * The API's name for this browser's zone, a new account's first choice: the zone itself when the
 * API lists it, else the first listed zone on the same offsets in January and in July (the API
 * lists one zone per region: America/Vancouver is "Pacific Time (US & Canada)", America/Los_Angeles).
 */
export function browserZoneName(): string | null {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  // A browser on UTC may call it "UTC", which the API lists as Etc/UTC.
  for (const [name, iana] of USER_TIME_ZONES) if (iana === zone || iana === `Etc/${zone}`) return name;
  const year = new Date().getFullYear();
  const seasons = [new Date(Date.UTC(year, 0, 15)), new Date(Date.UTC(year, 6, 15))];
  const offsets = (of: (instant: Date) => number) => seasons.map(of).join();
  const browser = offsets((instant) => -instant.getTimezoneOffset());
  for (const [name, iana] of USER_TIME_ZONES)
    if (offsets((instant) => offsetMinutes(instant, iana)) === browser) return name;
  return null;
}

/** A select of every zone the API accepts, with "none" first (times are then read and shown in UTC). */
export function TimeZoneOptions() {
  return (
    <>
      <option value="">None (times are read and shown in UTC)</option>
      {TIME_ZONE_NAMES.map((name) => (
        <option key={name} value={name}>
          {name}
        </option>
      ))}
    </>
  );
}
