export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = Number(digits[digits.length - 1 - i]);
    // Every second digit from the right is doubled; a two-digit result contributes its digit sum.
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

// [brand, lowest prefix, highest prefix]; prefixes of equal length are compared numerically.
const BRAND_PREFIX_RANGES: ReadonlyArray<readonly [string, string, string]> = [
  ["visa", "4", "4"],
  ["mastercard", "51", "55"],
  ["mastercard", "2221", "2720"],
  ["amex", "34", "34"],
  ["amex", "37", "37"],
  ["discover", "6011", "6011"],
  ["discover", "644", "649"],
  ["discover", "65", "65"],
  ["discover", "622126", "622925"],
  ["diners", "300", "305"],
  ["diners", "3095", "3095"],
  ["diners", "36", "36"],
  ["diners", "38", "39"],
  ["jcb", "3528", "3589"],
];

export function cardBrand(digits: string): string {
  for (const [brand, low, high] of BRAND_PREFIX_RANGES) {
    const prefix = Number(digits.slice(0, low.length));
    if (digits.length >= low.length && prefix >= Number(low) && prefix <= Number(high)) return brand;
  }
  return "unknown";
}

/** Strips the spaces and dashes people type; null unless 12 to 19 digits remain. */
export function normalizeCardNumber(input: string): string | null {
  const digits = input.replace(/[\s-]/g, "");
  return /^\d{12,19}$/.test(digits) ? digits : null;
}

/** A card is good through the last instant of its expiry month (UTC); month is 1-12. */
export function isExpired(month: number, year: number, now: Date): boolean {
  // Date.UTC takes a zero-based month, so passing the 1-based month yields the next month's first day.
  return now.getTime() >= Date.UTC(year, month, 1);
}
