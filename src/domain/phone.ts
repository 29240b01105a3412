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
