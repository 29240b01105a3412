import { XMLParser, XMLValidator } from "fast-xml-parser";
import { BadRequest } from "../domain/errors.js";
import type { InputMap, InputValue } from "../domain/input.js";
import { HttpError } from "./http-errors.js";
import { decodeRequestBody, forbiddenCharacterMessage, isUtf8Label, isXmlChar } from "./request-text.js";

/*
 * Documents follow the Rails XML conventions of the original service: hyphenated element names,
 * a type attribute on non-text values, nil="true" on absent values, type="array" on lists.
 */

export const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n';

/** An errors document: `<errors>` with one `<error>` per message (the documents are documents.ts's). */
export function errorsDocument(messages: readonly string[]): string {
  let errors = "";
  for (const message of messages) errors += `  <error>${escapeText(message)}</error>\n`;
  return errors === "" ? `${DECLARATION}<errors/>\n` : `${DECLARATION}<errors>\n${errors}</errors>\n`;
}

/*
 * Besides markup, characters XML 1.0 does not allow are written as U+FFFD, so that a response is
 * well-formed even for a value stored before such characters were refused on the way in. Lone
 * surrogates are found by look-arounds: the u flag would do it too, but made escaping a third slower.
 */
const TEXT_SPECIALS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces.
  /[&<>\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
const replacementOf = (c: string) => ENTITIES[c] ?? "\uFFFD";

export function escapeText(value: string): string {
  return value.replace(TEXT_SPECIALS, replacementOf);
}

/** Elements nested deeper than any document of this API holds (a user's phone numbers are at the third level). */
export const MAX_ELEMENT_DEPTH = 20;

const parser = new XMLParser({
  maxNestedTags: MAX_ELEMENT_DEPTH,
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

/** The XML declaration's encoding (XML 1.0 §4.3.3), e.g. `<?xml version="1.0" encoding="UTF-8"?>`. */
const ENCODING_DECLARATION = /^<\?xml\s[^>]*?\bencoding\s*=\s*(["'])([^"']*)\1/;
/** A character reference, whose character must be an XML Char too (WFC: Legal Character). */
const CHARACTER_REFERENCE = /&#(?:x([0-9a-fA-F]+)|([0-9]+));/g;

/**
 * A request body as XML text (the API's content-type parser): UTF-8 by its Content-Type and by its
 * own declaration (else 415), and no character, written or referenced, that XML 1.0 forbids (else
 * 400), so that nothing stored can make a later response ill-formed.
 */
export function readXmlBody(body: Buffer, contentType: string | undefined): string {
  const text = decodeRequestBody(body, contentType);
  const declared = ENCODING_DECLARATION.exec(text)?.[2];
  if (declared !== undefined && !isUtf8Label(declared))
    throw new HttpError(
      "BL_ERR_UNSUPPORTED_MEDIA_TYPE",
      `XML documents must be UTF-8, not encoding="${declared.slice(0, 40)}"`,
    );
  if (text.includes("&#")) {
    for (const reference of text.matchAll(CHARACTER_REFERENCE)) {
      const [, hex, decimal] = reference;
      const codePoint = hex === undefined ? Number(decimal) : Number.parseInt(hex, 16);
      if (!isXmlChar(codePoint))
        throw new HttpError(
          "BL_ERR_MALFORMED_INPUT",
          `The body's character reference ${reference[0].slice(0, 20)} ${forbiddenCharacterMessage(codePoint, reference.index)}`,
        );
    }
  }
  return text;
}

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
  let parsed: Record<string, unknown>;
  try {
    parsed = parser.parse(body) as Record<string, unknown>;
  } catch (error) {
    // Well-formed but refused by the parser: nested deeper than MAX_ELEMENT_DEPTH.
    throw new BadRequest([
      `the document cannot be read: ${(error as Error).message} (at most ${MAX_ELEMENT_DEPTH})`,
    ]);
  }
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
