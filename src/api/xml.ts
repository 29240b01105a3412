import { XMLBuilder, XMLParser, XMLValidator } from "fast-xml-parser";
import { BadRequest } from "../domain/errors.js";
import type { InputMap, InputValue } from "../domain/input.js";

/*
 * Documents follow the Rails XML conventions of the original service: hyphenated element names,
 * a type attribute on non-text values, nil="true" on absent values, type="array" on lists.
 */

/** An element as fast-xml-parser's builder takes it: text, attributes, or child elements. */
export type XmlElement = string | { [key: string]: XmlElement | XmlElement[] | string };

const builder = new XMLBuilder({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  format: true,
  indentBy: "  ",
  suppressEmptyNode: true,
  suppressBooleanAttributes: false,
  processEntities: true,
});

const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n';

export function renderDocument(root: string, element: XmlElement): string {
  return DECLARATION + builder.build({ [root]: element });
}

const NIL = { "@_nil": "true" };

export function text(value: string | null): XmlElement {
  return value === null ? NIL : value;
}

export function integer(value: number | null): XmlElement {
  return value === null
    ? { "@_type": "integer", "@_nil": "true" }
    : { "@_type": "integer", "#text": String(value) };
}

export function boolean(value: boolean | null): XmlElement {
  return value === null
    ? { "@_type": "boolean", "@_nil": "true" }
    : { "@_type": "boolean", "#text": String(value) };
}

/** Datetimes are written in UTC, to the second, with a Z. */
export function datetime(iso: string | null): XmlElement {
  return iso === null
    ? { "@_type": "datetime", "@_nil": "true" }
    : { "@_type": "datetime", "#text": `${iso.slice(0, 19)}Z` };
}

export function nested(element: XmlElement | null): XmlElement {
  return element === null ? NIL : element;
}

export function array(itemName: string, items: XmlElement[]): XmlElement {
  return items.length === 0 ? { "@_type": "array" } : { "@_type": "array", [itemName]: items };
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  processEntities: true,
  // Also decodes numeric character references (&#233;), which XML requires.
  htmlEntities: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
});

/** DOCTYPE and entity declarations are refused outright, never expanded (billion laughs, XXE). */
const DECLARATIONS = /<!(DOCTYPE|ENTITY|ELEMENT|ATTLIST)/i;

/** Reads a request document whose root element must be `root`. */
export function parseDocument(body: string, root: string): InputMap {
  if (DECLARATIONS.test(body)) throw new BadRequest(["DOCTYPE and entity declarations are not accepted"]);
  const valid = XMLValidator.validate(body);
  if (valid !== true) {
    throw new BadRequest([
      `malformed XML at line ${valid.err.line}, column ${valid.err.col}: ${valid.err.msg}`,
    ]);
  }
  const parsed = parser.parse(body) as Record<string, unknown>;
  const roots = Object.keys(parsed);
  if (roots.length !== 1 || roots[0] !== root) {
    throw new BadRequest([`the document's root element must be <${root}>`]);
  }
  const value = toInput(parsed[root]);
  if (value === null || value === "") return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new BadRequest([`<${root}> must contain elements`]);
  }
  return value;
}

function toInput(node: unknown): InputValue {
  if (node === null || node === undefined) return "";
  if (typeof node !== "object") return String(node);
  if (Array.isArray(node)) return node.map(toInput);
  const record = node as Record<string, unknown>;
  if (record["@_nil"] === "true") return null;
  const children = Object.keys(record).filter((key) => !key.startsWith("@_") && key !== "#text");
  if (record["@_type"] === "array") {
    return children.flatMap((key) => {
      const child = record[key];
      return Array.isArray(child) ? child.map(toInput) : [toInput(child)];
    });
  }
  if (children.length === 0) return record["#text"] === undefined ? "" : String(record["#text"]);
  const map: InputMap = {};
  for (const key of children) {
    const child = record[key];
    // A repeated element outside a type="array" list is ambiguous: keep the last, as Rails does.
    map[key] = toInput(Array.isArray(child) ? child[child.length - 1] : child);
  }
  return map;
}
