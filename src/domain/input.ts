import { ValidationFailed } from "./errors.js";

/**
 * A request document as read from XML: an element is text, nil (null), a map of child elements,
 * or a list. Names are the element names of the spec (hyphenated).
 */
export type InputValue = string | null | InputMap | InputValue[];
export interface InputMap {
  [element: string]: InputValue;
}

export const MAX_TEXT_LENGTH = 255;

/**
 * Reads typed fields from a request document and collects every problem, so a client gets all
 * of them in one 422 rather than one per round trip.
 */
export class FieldReader {
  readonly errors: string[] = [];

  constructor(
    private readonly input: InputMap,
    private readonly prefix = "",
  ) {}

  has(name: string): boolean {
    return Object.hasOwn(this.input, name);
  }

  fail(message: string): void {
    this.errors.push(message);
  }

  label(name: string): string {
    return `${this.prefix}${name}`;
  }

  /** Text, trimmed; "" and nil read as null. undefined when the element is absent. */
  text(name: string, maxLength = MAX_TEXT_LENGTH): string | null | undefined {
    if (!this.has(name)) return undefined;
    const value = this.input[name];
    if (value === null) return null;
    if (typeof value !== "string") {
      this.fail(`${this.label(name)} must be text`);
      return undefined;
    }
    const trimmed = value.trim();
    if (trimmed === "") return null;
    if ([...trimmed].length > maxLength) {
      this.fail(`${this.label(name)} is too long (maximum is ${maxLength} characters)`);
      return undefined;
    }
    return trimmed;
  }

  /** Like text(), but the element must be present and not blank. */
  requiredText(name: string, maxLength = MAX_TEXT_LENGTH): string | undefined {
    const value = this.text(name, maxLength);
    if (value === null || (value === undefined && !this.has(name))) {
      this.fail(`${this.label(name)} can't be blank`);
      return undefined;
    }
    return value;
  }

  integer(name: string): number | null | undefined {
    const value = this.text(name);
    if (value === undefined || value === null) return value;
    if (!/^[+-]?\d{1,15}$/.test(value)) {
      this.fail(`${this.label(name)} must be an integer, got "${value}"`);
      return undefined;
    }
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed) || Math.abs(parsed) > 2_147_483_647) {
      this.fail(`${this.label(name)} is out of range`);
      return undefined;
    }
    return parsed;
  }

  boolean(name: string): boolean | null | undefined {
    const value = this.text(name);
    if (value === undefined || value === null) return value;
    const lowered = value.toLowerCase();
    if (lowered === "true" || lowered === "1") return true;
    if (lowered === "false" || lowered === "0") return false;
    this.fail(`${this.label(name)} must be true or false, got "${value}"`);
    return undefined;
  }

  /** A nested element: a map, nil (null) or absent (undefined). */
  element(name: string): InputMap | null | undefined {
    if (!this.has(name)) return undefined;
    const value = this.input[name];
    if (value === null || value === "") return null;
    if (typeof value !== "object" || Array.isArray(value)) {
      this.fail(`${this.label(name)} must be an element with child elements`);
      return undefined;
    }
    return value;
  }

  /** An array element: a list of maps; nil or empty reads as []. */
  list(name: string): InputMap[] | undefined {
    if (!this.has(name)) return undefined;
    const value = this.input[name];
    if (value === null || value === "") return [];
    if (
      !Array.isArray(value) ||
      value.some((item) => typeof item !== "object" || item === null || Array.isArray(item))
    ) {
      this.fail(`${this.label(name)} must be an array of elements`);
      return undefined;
    }
    return value as InputMap[];
  }

  /** Throws ValidationFailed with every collected problem, if any. */
  check(): void {
    if (this.errors.length > 0) throw new ValidationFailed(this.errors);
  }
}
