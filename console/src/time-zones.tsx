/** The time zones the API accepts, by the names it takes (and shows), with their IANA zones. */
import { USER_TIME_ZONES } from "../../src/domain/reference-data.js";

export const TIME_ZONE_NAMES: readonly string[] = [...USER_TIME_ZONES.keys()];

/** The IANA zone of an API time-zone name; null for none or a name the console does not know. */
export function ianaZoneOf(name: string | null): string | null {
  return name === null ? null : (USER_TIME_ZONES.get(name) ?? null);
}

/** The API's name for this browser's zone, when it offers that zone: a new account's first choice. */
export function browserZoneName(): string | null {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  for (const [name, iana] of USER_TIME_ZONES) if (iana === zone) return name;
  return null;
}

/** A select of every zone the API accepts, with "none" first (start times are then read in UTC). */
export function TimeZoneOptions() {
  return (
    <>
      <option value="">None (times are read in UTC)</option>
      {TIME_ZONE_NAMES.map((name) => (
        <option key={name} value={name}>
          {name}
        </option>
      ))}
    </>
  );
}
