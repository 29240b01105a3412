import { parsePhoneNumberFromString } from "libphonenumber-js";

export interface NanpNumber {
  countryCode: "1";
  subscriberNumber: string;
}

/**
 * Reads a North American number in any common spelling and returns its 10-digit national number;
 * null unless it is a valid NANP number (country code 1) without an extension.
 */
export function normalizeNanpNumber(input: string): NanpNumber | null {
  // Strict isValid checks area code and exchange per NANP region and still accepts 555-01XX numbers.
  const phone = parsePhoneNumberFromString(input, { defaultCountry: "US", extract: false });
  if (phone?.countryCallingCode !== "1" || phone.ext || !phone.isValid()) return null;
  return { countryCode: "1", subscriberNumber: phone.nationalNumber };
}

/**
 * A caller's number as one key however it was written (`+16045550380`, `16045550380` and
 * `6045550380` are one caller): its E.164 form, or undefined when the caller ID is not a number.
 */
export function callerNumberKey(callerId: string): string | undefined {
  const phone = parsePhoneNumberFromString(callerId, { defaultCountry: "US", extract: false });
  return phone?.isPossible() ? phone.number : undefined;
}

/** Which calls a conference may place besides the rules below (settings). */
export interface CallingPolicy {
  /** E.164 prefixes never called, e.g. `+1876`. */
  readonly deniedPrefixes: readonly string[];
  /** Calls one user's conferences may have in progress (ringing or connected) at once. */
  readonly maxCallsInProgressPerUser: number;
  /** Calls one user's conferences may place in any hour. */
  readonly maxCallsPerHourPerUser: number;
}

export const OPEN_CALLING_POLICY: CallingPolicy = {
  deniedPrefixes: [],
  maxCallsInProgressPerUser: Number.POSITIVE_INFINITY,
  maxCallsPerHourPerUser: Number.POSITIVE_INFINITY,
};

/** Why a conference did not place a call: its owner's limits above, or a number never called (whyNotCallable). */
export type CallNotPlaced = "user-limit" | "denied-number";

/** The window of `maxCallsPerHourPerUser`. */
export const CALL_RATE_WINDOW_MS = 3_600_000;

/** The calls a user's conferences have placed: in progress now, and placed in the last hour. */
export interface PlacedCallCounts {
  inProgress: number;
  lastHour: number;
}

/**
 * Why one more call may not be placed for a user with these calls placed, or undefined when it may
 * (toll fraud: a stolen account must not run up calls without bound).
 */
export function whyOverCallLimits(counts: PlacedCallCounts, policy: CallingPolicy): string | undefined {
  if (counts.inProgress >= policy.maxCallsInProgressPerUser)
    return `the account has ${counts.inProgress} calls in progress, the most it may have at once`;
  if (counts.lastHour >= policy.maxCallsPerHourPerUser)
    return `the account has placed ${counts.lastHour} calls in the last hour, the most it may place in an hour`;
  return undefined;
}

/**
 * Why a North American number (its 10 digits) may not be called by a conference, or undefined when it
 * may (toll fraud: a conference spends money on every call it places). Premium-rate 900 and 976
 * numbers, N11 service codes and directory assistance (NXX-555-1212) are refused, as are numbers under
 * a denied prefix.
 */
export function whyNotCallable(subscriberNumber: string, policy: CallingPolicy): string | undefined {
  const areaCode = subscriberNumber.slice(0, 3);
  const exchange = subscriberNumber.slice(3, 6);
  const line = subscriberNumber.slice(6);
  if (areaCode === "900" || exchange === "976") return "premium-rate numbers (900, 976) are not called";
  if (/^[2-9]11$/.test(areaCode) || /^[2-9]11$/.test(exchange)) return "service codes (N11) are not called";
  if (exchange === "555" && line === "1212") return "directory assistance (555-1212) is not called";
  const e164 = `+1${subscriberNumber}`;
  const denied = policy.deniedPrefixes.find((prefix) => e164.startsWith(prefix));
  return denied === undefined ? undefined : `numbers starting ${denied} are not called here`;
}

/**
 * How many of `wanted` more calls a user with these calls placed may place now (the first ones, in
 * order), and why the rest may not.
 */
export function callsWithinLimits(
  counts: PlacedCallCounts,
  wanted: number,
  policy: CallingPolicy,
): { allowed: number; refusal: string | undefined } {
  const room = Math.min(
    policy.maxCallsInProgressPerUser - counts.inProgress,
    policy.maxCallsPerHourPerUser - counts.lastHour,
  );
  const allowed = Math.max(0, Math.min(wanted, room));
  const after = { inProgress: counts.inProgress + allowed, lastHour: counts.lastHour + allowed };
  return { allowed, refusal: allowed < wanted ? whyOverCallLimits(after, policy) : undefined };
}
