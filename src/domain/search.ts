import { DateTime } from "luxon";
import { BadRequest } from "./errors.js";

export type AttributeType = "integer" | "text" | "datetime" | "boolean" | "phone";

/** A searchable attribute: its query name (underscored) maps to a column and a type. */
export interface SearchAttribute<Column extends string = string> {
  column: Column;
  type: AttributeType;
}

export type SearchAttributes<Column extends string = string> = Readonly<
  Record<string, SearchAttribute<Column>>
>;

export const SEARCH_OPERATORS = [
  "eq",
  "contains",
  "starts_with",
  "ends_with",
  "gt",
  "lt",
  "gte",
  "lte",
  "ne",
] as const;
export type SearchOperator = (typeof SEARCH_OPERATORS)[number];

export interface SearchFilter<Column extends string = string> {
  column: Column;
  operator: SearchOperator;
  type: AttributeType;
  /** Typed: number for integers, 0/1 for booleans, ISO UTC for datetimes, lower-cased text. */
  value: string | number;
}

const SUFFIXES = SEARCH_OPERATORS.filter((op) => op !== "eq");
const TEXT_ONLY: ReadonlySet<SearchOperator> = new Set(["contains", "starts_with", "ends_with"]);
/** Query parameters that are not filters. */
const RESERVED = new Set(["representation"]);

/** Reads the filters of a collection's query string; anything unknown or mistyped is a 400. */
export function parseSearch<Column extends string>(
  query: Readonly<Record<string, string | string[] | undefined>>,
  attributes: SearchAttributes<Column>,
): SearchFilter<Column>[] {
  const filters: SearchFilter<Column>[] = [];
  for (const [key, raw] of Object.entries(query)) {
    if (RESERVED.has(key) || raw === undefined) continue;
    const [attributeName, operator] = splitKey(key, attributes);
    const attribute = attributes[attributeName];
    if (!attribute) throw new BadRequest([`unknown search attribute "${key}"`]);
    if (Array.isArray(raw)) throw new BadRequest([`search attribute "${key}" is given more than once`]);
    if (TEXT_ONLY.has(operator) && attribute.type !== "text" && attribute.type !== "phone") {
      throw new BadRequest([
        `"${operator}" does not apply to ${attribute.type} attribute "${attributeName}"`,
      ]);
    }
    if (attribute.type === "boolean" && operator !== "eq" && operator !== "ne") {
      throw new BadRequest([`"${operator}" does not apply to boolean attribute "${attributeName}"`]);
    }
    filters.push({
      column: attribute.column,
      operator,
      type: attribute.type,
      value: typedValue(key, attribute, raw, operator),
    });
  }
  return filters;
}

function splitKey(key: string, attributes: SearchAttributes): [string, SearchOperator] {
  if (Object.hasOwn(attributes, key)) return [key, "eq"];
  for (const suffix of SUFFIXES) {
    if (key.endsWith(`_${suffix}`)) return [key.slice(0, -(suffix.length + 1)), suffix];
  }
  return [key, "eq"];
}

function typedValue(
  key: string,
  attribute: SearchAttribute,
  raw: string,
  operator: SearchOperator,
): string | number {
  switch (attribute.type) {
    case "integer": {
      if (!/^[+-]?\d{1,15}$/.test(raw.trim()))
        throw new BadRequest([`search value for "${key}" must be an integer`]);
      return Number(raw);
    }
    case "boolean": {
      const lowered = raw.trim().toLowerCase();
      if (lowered !== "true" && lowered !== "false") {
        throw new BadRequest([`search value for "${key}" must be true or false`]);
      }
      return lowered === "true" ? 1 : 0;
    }
    case "datetime": {
      const instant = DateTime.fromISO(raw.trim(), { zone: "utc" });
      if (!instant.isValid) throw new BadRequest([`search value for "${key}" must be an ISO 8601 datetime`]);
      return instant.toUTC().toISO() as string;
    }
    case "phone": {
      // The 10-digit number, however written: area codes never start with 1, so a leading 1 of
      // a whole number or a prefix is the country code (inside a number it is just a digit).
      const digits = raw.replace(/\D/g, "");
      if (digits === "") throw new BadRequest([`search value for "${key}" must contain digits`]);
      const anchoredAtStart = operator !== "contains" && operator !== "ends_with";
      return anchoredAtStart && digits.startsWith("1") ? digits.slice(1) : digits;
    }
    case "text":
      return raw.toLowerCase();
  }
}
