/**
 * A document type of the API (schemas.ts) compiled once into its writers: XML in the Rails
 * conventions of the original service (a type attribute on non-text values, nil="true" on absent
 * ones, type="array" on lists) and JSON with native types; and, for request bodies, the reading of
 * a JSON body into the same input the XML reader gives the domain.
 */
import type { TSchema } from "@sinclair/typebox";
import { BadRequest, ValidationFailed } from "../domain/errors.js";
import type { InputMap, InputValue } from "../domain/input.js";
import { DECLARATION, escapeText, MAX_ELEMENT_DEPTH } from "./xml.js";

type Kind = "text" | "integer" | "float" | "boolean" | "datetime" | "object" | "array";

interface Shape {
  kind: Kind;
  nullable: boolean;
  schema: TSchema;
}

/** What a schema describes: a union with null is the other member, nullable; literals are text. */
function shapeOf(schema: TSchema): Shape {
  const members = (schema.anyOf as TSchema[] | undefined) ?? [schema];
  const values = members.filter((member) => member.type !== "null");
  const nullable = values.length < members.length;
  const first = values[0] as TSchema;
  if (values.length > 1 || first.anyOf !== undefined) {
    if (values.every((member) => member.type === "string" || member.anyOf !== undefined))
      return { kind: "text", nullable, schema: first };
    throw new Error(`unsupported union in schema ${JSON.stringify(schema).slice(0, 80)}`);
  }
  switch (first.type) {
    case "string":
      return { kind: first.format === "date-time" ? "datetime" : "text", nullable, schema: first };
    case "integer":
      return { kind: "integer", nullable, schema: first };
    case "number":
      return { kind: "float", nullable, schema: first };
    case "boolean":
      return { kind: "boolean", nullable, schema: first };
    case "object":
      return { kind: "object", nullable, schema: first };
    case "array":
      return { kind: "array", nullable, schema: first };
    default:
      throw new Error(`unsupported schema type ${String(first.type)}`);
  }
}

/** Writes one element: `name` is its element name, `indent` the spaces before it. */
type ElementWriter = (name: string, value: unknown, indent: string) => string;

const TYPE_ATTRIBUTE: Partial<Record<Kind, string>> = {
  integer: "integer",
  float: "float",
  boolean: "boolean",
  datetime: "datetime",
};

function compileElement(schema: TSchema): ElementWriter {
  const { kind, schema: inner } = shapeOf(schema);
  switch (kind) {
    case "text":
      return (name, value, indent) =>
        value === null
          ? `${indent}<${name} nil="true"/>\n`
          : value === ""
            ? `${indent}<${name}/>\n`
            : `${indent}<${name}>${escapeText(value as string)}</${name}>\n`;
    case "object": {
      const properties = Object.entries(inner.properties as Record<string, TSchema>).map(
        ([key, property]) => ({ key, write: compileElement(property) }),
      );
      return (name, value, indent) => {
        if (value === null) return `${indent}<${name} nil="true"/>\n`;
        const record = value as Record<string, unknown>;
        const childIndent = `${indent}  `;
        let children = "";
        for (const { key, write } of properties) {
          const child = record[key];
          if (child !== undefined) children += write(key, child, childIndent);
        }
        return `${indent}<${name}>\n${children}${indent}</${name}>\n`;
      };
    }
    case "array": {
      const items = inner.items as TSchema;
      const itemName = (items.xml as { name?: string } | undefined)?.name;
      if (itemName === undefined) throw new Error("an array's items need an xml name");
      const write = compileElement(items);
      return (name, value, indent) => {
        if (value === null) return `${indent}<${name} type="array" nil="true"/>\n`;
        const list = value as unknown[];
        if (list.length === 0) return `${indent}<${name} type="array"/>\n`;
        const childIndent = `${indent}  `;
        let children = "";
        for (const item of list) children += write(itemName, item, childIndent);
        return `${indent}<${name} type="array">\n${children}${indent}</${name}>\n`;
      };
    }
    default: {
      const type = TYPE_ATTRIBUTE[kind] as string;
      const nil = `" nil="true"/>\n`;
      return (name, value, indent) =>
        value === null
          ? `${indent}<${name} type="${type}${nil}`
          : `${indent}<${name} type="${type}">${kind === "datetime" ? escapeText(value as string) : String(value)}</${name}>\n`;
    }
  }
}

/** A document type's writers. */
export interface DocumentType<T> {
  xml(value: T): string;
  json(value: T): string;
}

/** A document type rooted at the schema's `xml.name` (an object, or a list wrapped in it). */
export function documentType<T>(schema: TSchema): DocumentType<T> {
  const root = (schema.xml as { name?: string } | undefined)?.name;
  if (root === undefined) throw new Error("a document's schema needs an xml name");
  const write = compileElement(schema);
  return {
    xml: (value) => `${DECLARATION}${write(root, value, "")}`,
    json: (value) => JSON.stringify(value),
  };
}

/**
 * A JSON request body as the domain's input, checked against the resource's write schema: the
 * types a field declares must be the JSON types sent (a number, true/false, an object, a list, or
 * null), then values become the text the XML reader would give, so that the domain's rules (and
 * their messages) are the same for both. Fields the schema does not name are passed on as XML
 * elements would be.
 */
export function readJsonInput(body: unknown, schema: TSchema, root: string): InputMap {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new BadRequest([`the body must be a JSON object of the ${root}'s fields`]);
  const record = body as Record<string, unknown>;
  const keys = Object.keys(record);
  const wrapped = record[root];
  if (keys.length === 1 && typeof wrapped === "object" && wrapped !== null && !Array.isArray(wrapped))
    throw new BadRequest([
      `send the ${root}'s fields at the top level of the JSON object, not inside "${root}"`,
    ]);
  const errors: string[] = [];
  const input = readObject(record, schema, "", errors, 1);
  if (errors.length > 0) throw new ValidationFailed(errors);
  return input;
}

const JSON_TYPE_NAMES: Record<Kind, string> = {
  text: "a string",
  datetime: "a string",
  integer: "an integer (a JSON number)",
  float: "a number",
  boolean: "true or false",
  object: "an object",
  array: "a list",
};

function jsonTypeOf(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  return `${typeof value === "number" ? "a number" : typeof value === "boolean" ? "a boolean" : "a string"}`;
}

function readObject(
  record: Record<string, unknown>,
  schema: TSchema | undefined,
  prefix: string,
  errors: string[],
  depth: number,
): InputMap {
  const properties = schema?.properties as Record<string, TSchema> | undefined;
  const input: InputMap = {};
  for (const key of Object.keys(record)) {
    // Names an object has of its own (__proto__, constructor...) are no resource's fields; as
    // members of the input they would reach its prototype. XML refuses such element names too.
    if (key in Object.prototype) throw new BadRequest([`the JSON names "${key}", which is no field`]);
    const property = properties !== undefined && Object.hasOwn(properties, key) ? properties[key] : undefined;
    input[key] = readValue(record[key], property, `${prefix}${key}`, errors, depth);
  }
  return input;
}

function readValue(
  value: unknown,
  schema: TSchema | undefined,
  label: string,
  errors: string[],
  depth: number,
): InputValue {
  if (value === null) return null;
  if (depth > MAX_ELEMENT_DEPTH)
    throw new BadRequest([`the JSON nests deeper than ${MAX_ELEMENT_DEPTH} levels`]);
  const shape = schema === undefined ? undefined : shapeOf(schema);
  if (shape !== undefined) {
    const { kind } = shape;
    const fits =
      kind === "text" || kind === "datetime"
        ? typeof value === "string"
        : kind === "integer" || kind === "float"
          ? typeof value === "number"
          : kind === "boolean"
            ? typeof value === "boolean"
            : kind === "array"
              ? Array.isArray(value)
              : typeof value === "object" && !Array.isArray(value);
    if (!fits) {
      const expected = `${JSON_TYPE_NAMES[kind]}${shape.nullable ? " or null" : ""}`;
      errors.push(`${label} must be ${expected}, not ${jsonTypeOf(value)}`);
      return null;
    }
  }
  if (Array.isArray(value)) {
    const items = shape?.schema.items as TSchema | undefined;
    // Counted from 1, as the domain's messages count a list's items.
    return value.map((item, index) => readValue(item, items, `${label}[${index + 1}]`, errors, depth + 1));
  }
  if (typeof value === "object")
    return readObject(value as Record<string, unknown>, shape?.schema, `${label} `, errors, depth + 1);
  return String(value);
}
