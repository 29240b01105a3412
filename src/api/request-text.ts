/**
 * Request bodies are text in UTF-8 made of the characters XML 1.0 allows (its Char production), for
 * the XML API and the console's JSON alike: what could not be written back as a well-formed
 * document, or stored in PostgreSQL (U+0000), is refused before any handler sees it.
 */
import { HttpError } from "./http-errors.js";

/** Fatal: undecodable bytes are refused, not turned into U+FFFD. A leading BOM is dropped. */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Outside XML 1.0's Char: C0 controls but tab, newline and carriage return; lone surrogates (the `u`
 * flag matches a paired one as the character it encodes); U+FFFE and U+FFFF.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const NOT_XML_CHAR = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/u;

/** True when `label` names UTF-8 (its labels per the WHATWG Encoding Standard: utf-8, utf8...). */
export function isUtf8Label(label: string): boolean {
  try {
    return new TextDecoder(label).encoding === "utf-8";
  } catch {
    return false; // not an encoding's label at all
  }
}

/** The charset parameter of a Content-Type header, unquoted; undefined when it has none. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? "");
  return match === null ? undefined : (match[1] ?? match[2]);
}

/**
 * The body as text: refused 415 when Content-Type names a charset other than UTF-8, 400 when its
 * bytes are not UTF-8 or it holds a character XML 1.0 does not allow.
 */
export function decodeRequestBody(body: Buffer, contentType: string | undefined): string {
  const charset = charsetOf(contentType);
  if (charset !== undefined && !isUtf8Label(charset))
    throw new HttpError(
      "BL_ERR_UNSUPPORTED_MEDIA_TYPE",
      `Request bodies must be UTF-8, not charset=${charset.slice(0, 40)}`,
    );
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    throw new HttpError("BL_ERR_MALFORMED_INPUT", "The body is not valid UTF-8");
  }
  refuseNonXmlCharacters(text, "The body");
  return text;
}

/** Refuses (400) text holding a character outside XML 1.0's Char; `where` names it in the error. */
export function refuseNonXmlCharacters(text: string, where: string): void {
  const found = NOT_XML_CHAR.exec(text);
  if (found !== null)
    throw new HttpError(
      "BL_ERR_MALFORMED_INPUT",
      `${where} ${forbiddenCharacterMessage(found[0].codePointAt(0) as number, found.index)}`,
    );
}

/** True when the code point is one XML 1.0's Char production allows. */
export function isXmlChar(codePoint: number): boolean {
  return (
    codePoint === 0x9 ||
    codePoint === 0xa ||
    codePoint === 0xd ||
    (codePoint >= 0x20 && codePoint <= 0xd7ff) ||
    (codePoint >= 0xe000 && codePoint <= 0xfffd) ||
    (codePoint >= 0x10000 && codePoint <= 0x10ffff)
  );
}

/** "holds U+0000 at position 12, ...": `index` counts UTF-16 code units from 0. */
export function forbiddenCharacterMessage(codePoint: number, index: number): string {
  const character =
    codePoint > 0x10ffff
      ? "a number beyond U+10FFFF"
      : `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
  return `holds ${character} at position ${index + 1}, which XML 1.0 does not allow`;
}
