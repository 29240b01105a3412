import { cardBrand, isExpired, luhnValid, normalizeCardNumber } from "./credit-card.js";
import { isValidEmail } from "./email.js";
import { FieldReader, type InputMap } from "./input.js";
import { type CallingPolicy, normalizeNanpNumber, OPEN_CALLING_POLICY, whyNotCallable } from "./phone.js";
import { IM_NETWORKS, isValidPostalCode, SUBDIVISIONS, USER_TIME_ZONES } from "./reference-data.js";

export interface Versioned {
  id: number;
  createdAt: string;
  updatedAt: string;
  lockVersion: number;
}

export interface CreditCard extends Versioned {
  name: string | null;
  expiryMonth: number;
  expiryYear: number;
  lastFour: string;
  brand: string;
}

export interface Address extends Versioned {
  streetAddress: string | null;
  postalCode: string;
  location: string | null;
  subdivision: string;
  country: string;
}

export interface PhoneNumber extends Versioned {
  countryCode: number;
  subscriberNumber: string;
  location: string | null;
  extension: string | null;
}

export interface User extends Versioned {
  name: string;
  email: string;
  im: string | null;
  imNetwork: string | null;
  timeZone: string | null;
  memberPin: string;
  moderatorPin: string;
  termsOfService: boolean;
  billingPackageId: number;
  creditCard: CreditCard | null;
  address: Address | null;
  phoneNumbers: PhoneNumber[];
}

/** What a card becomes after a request: the number itself is reduced to brand and last four here. */
export interface CreditCardFields {
  name: string | null;
  expiryMonth: number;
  expiryYear: number;
  lastFour: string;
  brand: string;
}

export interface CreditCardChanges {
  name?: string | null;
  expiryMonth?: number;
  expiryYear?: number;
  number?: { lastFour: string; brand: string };
}

export type AddressFields = Omit<Address, keyof Versioned>;

export interface PhoneNumberFields {
  /** Set when the request names an existing phone number to update. */
  id?: number;
  countryCode: number;
  subscriberNumber: string;
  location: string | null;
  extension: string | null;
}

export interface UserChanges {
  name?: string;
  email?: string;
  password?: string;
  im?: string | null;
  imNetwork?: string | null;
  timeZone?: string | null;
  termsOfService?: boolean;
  billingPackageId?: number;
  /** null removes the card. */
  creditCard?: CreditCardChanges | null;
  /** null removes the address. */
  address?: AddressFields | null;
  /** The complete new list: entries with an id update that number, the rest are added, unlisted ones go. */
  phoneNumbers?: PhoneNumberFields[];
}

export const MIN_PASSWORD_LENGTH = 8;
const EXTENSION_PATTERN = /^[0-9*#,w]{1,40}$/i;

/**
 * Reads a user document. On create every required field must be there; on update only what is
 * present changes, and terms-of-service is not accepted.
 */
export function readUserChanges(
  input: InputMap,
  mode: "create" | "update",
  policy: CallingPolicy = OPEN_CALLING_POLICY,
): UserChanges {
  const reader = new FieldReader(input);
  const changes: UserChanges = {};
  const creating = mode === "create";

  const name = creating ? reader.requiredText("name") : reader.text("name");
  if (name === null) reader.fail("name can't be blank");
  else if (name !== undefined) changes.name = name;

  const email = creating ? reader.requiredText("email") : reader.text("email");
  if (email === null) reader.fail("email can't be blank");
  else if (email !== undefined) {
    if (isValidEmail(email)) changes.email = email.toLowerCase();
    else reader.fail(`email is not a valid e-mail address: "${email}"`);
  }

  const password = reader.text("password", 1024);
  const confirmation = reader.text("password-confirmation", 1024);
  if (creating || password != null || confirmation != null) {
    if (password == null) reader.fail("password can't be blank");
    else if (password.length < MIN_PASSWORD_LENGTH) {
      reader.fail(`password is too short (minimum is ${MIN_PASSWORD_LENGTH} characters)`);
    } else if (password !== confirmation) reader.fail("password-confirmation doesn't match password");
    else changes.password = password;
  }

  const im = reader.text("im");
  if (im !== undefined) changes.im = im;
  const imNetwork = reader.text("im-network");
  if (imNetwork != null && !IM_NETWORKS.has(imNetwork)) {
    reader.fail(`im-network must be one of ${[...IM_NETWORKS].join(", ")}, got "${imNetwork}"`);
  } else if (imNetwork !== undefined) changes.imNetwork = imNetwork;
  const timeZone = reader.text("time-zone");
  if (timeZone != null && !USER_TIME_ZONES.has(timeZone)) {
    reader.fail(`time-zone is not a known time zone: "${timeZone}"`);
  } else if (timeZone !== undefined) changes.timeZone = timeZone;

  if (creating) {
    const terms = reader.boolean("terms-of-service");
    if (terms !== true) reader.fail("terms-of-service must be accepted");
    else changes.termsOfService = true;
  }

  const billingPackage = reader.element("billing-package");
  if (billingPackage) {
    const packageReader = new FieldReader(billingPackage, "billing-package ");
    const id = packageReader.integer("id");
    reader.errors.push(...packageReader.errors);
    if (id == null) {
      if (packageReader.errors.length === 0) reader.fail("billing-package id can't be blank");
    } else changes.billingPackageId = id;
  } else if (creating) reader.fail("billing-package can't be blank");

  const card = reader.element("credit-card");
  if (card === null) changes.creditCard = null;
  else if (card) changes.creditCard = readCreditCard(card, reader);

  const address = reader.element("address");
  if (address === null) changes.address = null;
  else if (address) {
    const fields = readAddress(address, reader);
    if (fields) changes.address = fields;
  }

  const phoneNumbers = reader.list("phone-numbers");
  if (phoneNumbers) changes.phoneNumbers = readPhoneNumbers(phoneNumbers, reader, mode, policy);

  reader.check();
  return changes;
}

function readCreditCard(input: InputMap, parent: FieldReader): CreditCardChanges {
  const reader = new FieldReader(input, "credit-card ");
  const changes: CreditCardChanges = {};
  const name = reader.text("name");
  if (name !== undefined) changes.name = name;
  const month = reader.integer("expiry-month");
  if (month != null) {
    if (month < 1 || month > 12) reader.fail("credit-card expiry-month must be from 1 to 12");
    else changes.expiryMonth = month;
  }
  const year = reader.integer("expiry-year");
  if (year != null) {
    if (year < 2000 || year > 2200) reader.fail("credit-card expiry-year must be a four-digit year");
    else changes.expiryYear = year;
  }
  const number = reader.text("number", 40);
  if (number != null) {
    const digits = normalizeCardNumber(number);
    if (digits === null || !luhnValid(digits)) reader.fail("credit-card number is not a valid card number");
    else changes.number = { lastFour: digits.slice(-4), brand: cardBrand(digits) };
  }
  // Checked so a typo is caught, then dropped: the security code is never stored.
  const securityCode = reader.text("security-code", 10);
  if (securityCode != null && !/^\d{3,4}$/.test(securityCode)) {
    reader.fail("credit-card security-code must be 3 or 4 digits");
  }
  parent.errors.push(...reader.errors);
  return changes;
}

/**
 * The card as it will be stored after applying changes to the current card (or to none).
 * Returns the problems instead when the result would be incomplete or expired.
 */
export function mergeCreditCard(
  current: CreditCardFields | null,
  changes: CreditCardChanges,
  now: Date,
): CreditCardFields | string[] {
  const errors: string[] = [];
  const number =
    changes.number ?? (current ? { lastFour: current.lastFour, brand: current.brand } : undefined);
  const expiryMonth = changes.expiryMonth ?? current?.expiryMonth;
  const expiryYear = changes.expiryYear ?? current?.expiryYear;
  if (!number) errors.push("credit-card number can't be blank");
  if (expiryMonth === undefined) errors.push("credit-card expiry-month can't be blank");
  if (expiryYear === undefined) errors.push("credit-card expiry-year can't be blank");
  if (!number || expiryMonth === undefined || expiryYear === undefined) return errors;
  if (isExpired(expiryMonth, expiryYear, now)) return ["credit-card has expired"];
  return {
    name: changes.name !== undefined ? changes.name : (current?.name ?? null),
    expiryMonth,
    expiryYear,
    lastFour: number.lastFour,
    brand: number.brand,
  };
}

function readAddress(input: InputMap, parent: FieldReader): AddressFields | undefined {
  const reader = new FieldReader(input, "address ");
  const streetAddress = reader.text("street-address");
  const location = reader.text("location");
  const countryText = reader.requiredText("country");
  const subdivisionText = reader.requiredText("subdivision");
  const postalText = reader.requiredText("postal-code");
  const country = countryText?.toUpperCase();
  const subdivision = subdivisionText?.toUpperCase();
  if (country !== undefined && country !== "US" && country !== "CA") {
    reader.fail(`address country must be CA or US, got "${countryText}"`);
  } else if (country && subdivision !== undefined && !SUBDIVISIONS[country].has(subdivision)) {
    reader.fail(`address subdivision "${subdivisionText}" is not a state or province of ${country}`);
  }
  if ((country === "US" || country === "CA") && postalText && !isValidPostalCode(country, postalText)) {
    reader.fail(`address postal-code "${postalText}" is not a valid ${country} postal code`);
  }
  parent.errors.push(...reader.errors);
  if (reader.errors.length > 0 || !country || !subdivision || !postalText) return undefined;
  const postalCode = country === "CA" ? formatCanadianPostalCode(postalText) : postalText;
  return {
    streetAddress: streetAddress ?? null,
    location: location ?? null,
    country,
    subdivision,
    postalCode,
  };
}

function formatCanadianPostalCode(code: string): string {
  const compact = code.replace(/\s+/g, "").toUpperCase();
  return `${compact.slice(0, 3)} ${compact.slice(3)}`;
}

function readPhoneNumbers(
  items: InputMap[],
  parent: FieldReader,
  mode: "create" | "update",
  policy: CallingPolicy,
): PhoneNumberFields[] {
  const result: PhoneNumberFields[] = [];
  items.forEach((item, index) => {
    const reader = new FieldReader(item, `phone-numbers[${index + 1}] `);
    const id = mode === "update" ? reader.integer("id") : undefined;
    const countryCode = reader.integer("country-code") ?? 1;
    const subscriber = reader.requiredText("subscriber-number", 40);
    const location = reader.text("location");
    const extension = reader.text("extension", 40);
    if (countryCode !== 1)
      reader.fail(`${reader.label("country-code")} must be 1 (North American numbers only)`);
    const normalized = subscriber ? normalizeNanpNumber(subscriber) : null;
    // The owner's number is one a conference calls (the owner as attendee): the attendees' rule.
    const refused = normalized ? whyNotCallable(normalized.subscriberNumber, policy) : undefined;
    if (subscriber && !normalized) {
      reader.fail(
        `${reader.label("subscriber-number")} "${subscriber}" is not a valid North American number`,
      );
    } else if (refused !== undefined)
      reader.fail(`${reader.label("subscriber-number")} "${subscriber}" cannot be called: ${refused}`);
    if (extension && !EXTENSION_PATTERN.test(extension)) {
      reader.fail(`${reader.label("extension")} may hold only digits, *, #, "," (pause) and w (wait)`);
    }
    parent.errors.push(...reader.errors);
    if (reader.errors.length === 0 && normalized) {
      result.push({
        ...(id != null ? { id } : {}),
        countryCode: 1,
        subscriberNumber: normalized.subscriberNumber,
        location: location ?? null,
        extension: extension ?? null,
      });
    }
  });
  return result;
}
