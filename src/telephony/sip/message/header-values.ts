/**
 * The header field value grammars the SIP layers read (RFC 3261 section 25.1), one scanner each: it
 * checks a value and yields what it holds, or undefined when the value does not match the grammar.
 * The parser checks received values with these same scanners and keeps what they yield (SipHeaders).
 * Over 400 lines on purpose: every grammar shares the character classes, the parameter reader and the
 * in-place scanners, which stay private to this file rather than be exported for a split.
 */

import type { CallCause } from "../../../domain/call-record.js";

/** token characters: alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~" (RFC 3261 25.1). */
const TOKEN_CHARS = new Uint8Array(128);
for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.!%*_+`'~") {
  TOKEN_CHARS[c.charCodeAt(0)] = 1;
}

const SPACE = 0x20;
const TAB = 0x09;

function isTokenChar(code: number): boolean {
  return code < 128 && TOKEN_CHARS[code] === 1;
}

export function isToken(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) if (!isTokenChar(text.charCodeAt(i))) return false;
  return true;
}

function skipSpace(text: string, from: number, end: number): number {
  let i = from;
  while (i < end && (text.charCodeAt(i) === SPACE || text.charCodeAt(i) === TAB)) i++;
  return i;
}

/** White space as String.prototype.trim sees it, among the ASCII characters. */
function isAsciiWhiteSpace(code: number): boolean {
  return code === SPACE || (code >= TAB && code <= 0x0d);
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

function isAlpha(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
}

function isAlphaNum(code: number): boolean {
  return isAlpha(code) || isDigit(code);
}

function isHexDigit(code: number): boolean {
  return isDigit(code) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

/**
 * 1*DIGIT of `text.slice(start, end)` with an upper bound, leading zeros allowed; undefined when not a
 * number in range.
 */
export function parseBoundedInteger(
  text: string,
  max: number,
  start = 0,
  end = text.length,
): number | undefined {
  if (start >= end) return undefined;
  // Leading zeros are skipped so that "0009" is 9 and 30-digit values cannot lose precision.
  let first = start;
  while (first < end - 1 && text.charCodeAt(first) === 0x30) first++;
  if (end - first > 16) return undefined;
  let value = 0;
  for (let i = first; i < end; i++) {
    const code = text.charCodeAt(i);
    if (!isDigit(code)) return undefined;
    value = value * 10 + (code - 0x30);
  }
  // 16 digits can exceed 2**53, where only Number() rounds the way the text reads
  if (end - first === 16) value = Number(text.slice(first, end));
  return value <= max ? value : undefined;
}

/**
 * Where the list item starting at `start` ends in a list-valued header field (RFC 3261 7.3.1:
 * "field-name: value, value"): the next comma outside quoted strings and outside <...>, else `end`.
 */
export function listItemEnd(text: string, start: number, end: number): number {
  let inQuotes = false;
  let inAngles = false;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (inQuotes) {
      if (code === 0x5c)
        i++; // quoted-pair: skip the escaped character
      else if (code === 0x22) inQuotes = false;
    } else if (code === 0x22) inQuotes = true;
    else if (code === 0x3c) inAngles = true;
    else if (code === 0x3e) inAngles = false;
    else if (code === 0x2c && !inAngles) return i;
  }
  return end;
}

/**
 * `scan` of `text.slice(start, end).trim()`: in place when the trimmed ends are ASCII, else of the
 * trimmed copy (only trim() knows the Unicode white space, such as NBSP).
 */
function scanTrimmed<T>(
  text: string,
  start: number,
  end: number,
  scan: (text: string, from: number, to: number) => T,
): T {
  let from = start;
  let to = end;
  while (from < to && isAsciiWhiteSpace(text.charCodeAt(from))) from++;
  while (to > from && isAsciiWhiteSpace(text.charCodeAt(to - 1))) to--;
  if (from < to && (text.charCodeAt(from) >= 0x80 || text.charCodeAt(to - 1) >= 0x80)) {
    const trimmed = text.slice(from, to).trim();
    return scan(trimmed, 0, trimmed.length);
  }
  return scan(text, from, to);
}

function sliceOf(text: string, from: number, to: number): string {
  return text.slice(from, to);
}

/** `text.slice(start, end).trim()`, without the intermediate string when the ends are ASCII. */
export function trimmedSlice(text: string, start: number, end: number): string {
  return scanTrimmed(text, start, end, sliceOf);
}

/** Parameters by lower-cased name, in the order written; one without a value maps to undefined. */
export interface Params extends Iterable<readonly [name: string, value: string | undefined]> {
  get(name: string): string | undefined;
  has(name: string): boolean;
  readonly size: number;
}

/**
 * The parameters of one value: a handful, which a list compares faster than a Map hashes them. A
 * name written twice keeps its place and takes its last value, as in a Map.
 */
class ParamList implements Params {
  /** name, value, name, value... */
  readonly #entries: (string | undefined)[] = [];

  get size(): number {
    return this.#entries.length / 2;
  }

  get(name: string): string | undefined {
    const index = this.#index(name);
    return index < 0 ? undefined : this.#entries[index + 1];
  }

  has(name: string): boolean {
    return this.#index(name) >= 0;
  }

  set(name: string, value: string | undefined): void {
    const index = this.#index(name);
    if (index < 0) this.#entries.push(name, value);
    else this.#entries[index + 1] = value;
  }

  *[Symbol.iterator](): Iterator<readonly [string, string | undefined]> {
    for (let i = 0; i < this.#entries.length; i += 2)
      yield [this.#entries[i] as string, this.#entries[i + 1]];
  }

  #index(name: string): number {
    for (let i = 0; i < this.#entries.length; i += 2) if (this.#entries[i] === name) return i;
    return -1;
  }
}

/** What values without parameters share. */
const NO_PARAMS: Params = new ParamList();

/**
 * *( SEMI generic-param ) in `text.slice(from, end)`, where generic-param = token [ EQUAL gen-value ]
 * and gen-value = token / host / quoted-string (RFC 3261 25.1). Quoted values keep their quotes; of
 * a repeated name the last value counts. Undefined when malformed (e.g. the empty parameters of
 * RFC 4475 3.1.2.1).
 */
function parseParams(text: string, from: number, end: number): Params | undefined {
  let i = skipSpace(text, from, end);
  if (i === end) return NO_PARAMS;
  const params = new ParamList();
  while (i < end) {
    if (text.charCodeAt(i) !== 0x3b) return undefined;
    i = skipSpace(text, i + 1, end);
    const nameStart = i;
    let upperCase = false;
    for (; i < end; i++) {
      const code = text.charCodeAt(i);
      if (!isTokenChar(code)) break;
      if (code <= 0x5a && code >= 0x41) upperCase = true;
    }
    if (i === nameStart) return undefined;
    // toLowerCase() copies again, and names are lower-case almost always
    const name = upperCase ? text.slice(nameStart, i).toLowerCase() : text.slice(nameStart, i);
    i = skipSpace(text, i, end);
    if (i < end && text.charCodeAt(i) === 0x3d) {
      i = skipSpace(text, i + 1, end);
      const valueStart = i;
      if (i < end && text.charCodeAt(i) === 0x22) {
        i = quotedStringEnd(text, i, end);
        if (i < 0) return undefined;
      } else {
        // token, or host incl. an IPv6 reference
        while (i < end && (isTokenChar(text.charCodeAt(i)) || isHostPunct(text.charCodeAt(i)))) i++;
      }
      if (i === valueStart) return undefined;
      params.set(name, text.slice(valueStart, i));
      i = skipSpace(text, i, end);
    } else {
      params.set(name, undefined);
    }
  }
  return params;
}

function isHostPunct(code: number): boolean {
  return code === 0x5b || code === 0x5d || code === 0x3a; // "[" "]" ":"
}

/** Index just past the closing quote of the quoted-string starting at `start`, or -1 (RFC 3261 25.1). */
function quotedStringEnd(text: string, start: number, end: number): number {
  for (let i = start + 1; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x5c) i++;
    else if (code === 0x22) return i + 1;
  }
  return -1;
}

/** The content of a quoted-string with its quoted-pairs resolved. */
export function unquote(quoted: string): string {
  if (!quoted.includes("\\")) return quoted.slice(1, -1);
  let result = "";
  for (let i = 1; i < quoted.length - 1; i++) {
    if (quoted.charCodeAt(i) === 0x5c) i++;
    result += quoted[i];
  }
  return result;
}

/**
 * absoluteURI = scheme ":" ... with no whitespace, controls, quotes or angle brackets (RFC 3261 25.1,
 * RFC 3986 3.1), in `text.slice(start, end)`.
 */
export function isAbsoluteUri(text: string, start = 0, end = text.length): boolean {
  return absoluteUriEnd(text, start, end) === end;
}

/**
 * Where the absoluteURI at `start` ends: at `end` or at the first character it cannot hold; -1 when
 * there is none (no scheme, or nothing after the colon).
 */
function absoluteUriEnd(text: string, start: number, end: number): number {
  // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
  if (start >= end || !isAlpha(text.charCodeAt(start))) return -1;
  let i = start + 1;
  while (i < end && isSchemeChar(text.charCodeAt(i))) i++;
  if (i === end || text.charCodeAt(i) !== 0x3a || i + 1 === end) return -1;
  const uriEnd = uriCharsEnd(text, i + 1, end);
  return uriEnd === i + 1 ? -1 : uriEnd;
}

function isSchemeChar(code: number): boolean {
  return isAlphaNum(code) || code === 0x2b || code === 0x2d || code === 0x2e;
}

/** The first white space, control, quote or angle bracket in `text.slice(start, end)`, else `end`. */
function uriCharsEnd(text: string, start: number, end: number): number {
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code <= SPACE || code === 0x22 || code === 0x3c || code === 0x3e || code === 0x7f) return i;
  }
  return end;
}

/** From, To, Contact, Route, Refer-To...: ( name-addr / addr-spec ) *( SEMI param ) (RFC 3261 20.10). */
export interface NameAddr {
  /** The display name, unquoted; undefined when absent. */
  readonly displayName: string | undefined;
  /** The URI as written (any absoluteURI; see parseSipUri for SIP URIs). */
  readonly uri: string;
  /** Header parameters such as tag, expires, q (not the URI's own parameters). */
  readonly params: Params;
  /** The tag parameter that identifies a dialog's side in From and To (19.3); undefined without a value. */
  readonly tag: string | undefined;
}

/** The name-addr or addr-spec with parameters in `text.slice(start, end)`. */
export function parseNameAddr(text: string, start = 0, end = text.length): NameAddr | undefined {
  const i = skipSpace(text, start, end);
  let quoteEnd = -1;
  let open: number;
  if (i < end && text.charCodeAt(i) === 0x22) {
    quoteEnd = quotedStringEnd(text, i, end);
    if (quoteEnd < 0) return undefined; // RFC 4475 3.1.2.8: unbalanced quote
    const afterQuote = skipSpace(text, quoteEnd, end);
    if (afterQuote === end || text.charCodeAt(afterQuote) !== 0x3c) return undefined;
    open = afterQuote;
  } else {
    open = text.indexOf("<", i);
    if (open >= end) open = -1;
  }
  let uriStart: number;
  let uriEnd: number;
  if (open >= 0) {
    // display-name = *(token LWS): tokens only, so "Bell, Alexander" is refused (RFC 4475 3.1.2.15)
    if (quoteEnd < 0 && open > i && !isTokenWords(text, i, open)) return undefined;
    // no LWS inside the brackets (RFC 4475 3.1.2.14): the URI, which holds none, must end at the ">"
    const close = absoluteUriEnd(text, open + 1, end);
    if (close < 0 || close === end || text.charCodeAt(close) !== 0x3e) return undefined;
    uriStart = open + 1;
    uriEnd = close;
  } else {
    // addr-spec: a URI holding "," "?" or ";" must be in <> (RFC 3261 20.10), so it ends at ";" or LWS
    uriStart = i;
    uriEnd = i;
    while (uriEnd < end) {
      const code = text.charCodeAt(uriEnd);
      if (code === 0x3b || code === SPACE || code === TAB) break;
      if (code === 0x3f || code === 0x2c) return undefined;
      uriEnd++;
    }
    if (!isAbsoluteUri(text, uriStart, uriEnd)) return undefined;
  }
  const params = parseParams(text, open >= 0 ? uriEnd + 1 : uriEnd, end);
  if (params === undefined) return undefined;
  let displayName: string | undefined;
  if (quoteEnd >= 0) displayName = unquote(text.slice(i, quoteEnd));
  else if (open > i) displayName = trimmedSlice(text, i, open) || undefined;
  return { displayName, uri: text.slice(uriStart, uriEnd), params, tag: params.get("tag") };
}

/** Whether `text.slice(start, end).trim()` is tokens and LWS only. */
function isTokenWords(text: string, start: number, end: number): boolean {
  return scanTrimmed(text, start, end, areTokenWordChars);
}

function areTokenWordChars(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (!isTokenChar(code) && code !== SPACE && code !== TAB) return false;
  }
  return true;
}

/** via-parm (RFC 3261 20.42, 25.1): sent-protocol LWS sent-by *( SEMI via-params ). */
export interface Via {
  readonly protocol: string;
  readonly version: string;
  /** Upper-cased. */
  readonly transport: string;
  readonly host: string;
  readonly port: number | undefined;
  readonly params: Params;
  readonly branch: string | undefined;
  readonly received: string | undefined;
  /** RFC 3581: a port number, true when requested without a value, undefined when absent. */
  readonly rport: number | true | undefined;
}

/** The via-parm in `text.slice(start, end)`. */
export function parseVia(text: string, start = 0, end = text.length): Via | undefined {
  // sent-protocol = protocol-name SLASH protocol-version SLASH transport, SLASH = SWS "/" SWS
  const protocolStart = skipSpace(text, start, end);
  const protocolEnd = tokenEnd(text, protocolStart, end);
  const versionStart = skipSlash(text, protocolEnd, end);
  const versionEnd = tokenEnd(text, versionStart, end);
  const transportStart = skipSlash(text, versionEnd, end);
  const transportEnd = tokenEnd(text, transportStart, end);
  if (protocolEnd === protocolStart || versionEnd <= versionStart || transportEnd <= transportStart) {
    return undefined;
  }
  // sent-by is what lies between the transport and the first ";", trimmed
  let paramsStart = text.indexOf(";", transportEnd);
  if (paramsStart < 0 || paramsStart >= end) paramsStart = end;
  const sentBy = scanTrimmed(text, transportEnd, paramsStart, parseHostPort);
  if (sentBy === undefined) return undefined;
  const params = parseParams(text, paramsStart, end);
  if (params === undefined) return undefined;
  // RFC 3581: rport without a value asks for one; with a value it is a port
  let rport: number | true | undefined;
  if (params.has("rport")) {
    const value = params.get("rport");
    rport = value === undefined ? true : parseBoundedInteger(value, 65535);
    if (rport === undefined) return undefined;
  }
  return {
    protocol: text.slice(protocolStart, protocolEnd),
    version: text.slice(versionStart, versionEnd),
    transport: upperCased(text.slice(transportStart, transportEnd)),
    host: sentBy.host,
    port: sentBy.port,
    params,
    branch: params.get("branch"),
    received: params.get("received"),
    rport,
  };
}

/** toUpperCase() without its copy of a text that is upper-case already, as transports almost always are. */
function upperCased(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x61 && code <= 0x7a) return text.toUpperCase();
  }
  return text;
}

/** toLowerCase() without its copy of a text that is lower-case already. */
function lowerCased(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x41 && code <= 0x5a) return text.toLowerCase();
  }
  return text;
}

/** Index past the token at `from` (`from` itself when there is none); -1 stays -1. */
function tokenEnd(text: string, from: number, end: number): number {
  if (from < 0) return -1;
  let i = from;
  while (i < end && isTokenChar(text.charCodeAt(i))) i++;
  return i;
}

/** Index past SWS "/" SWS at `from`, or -1. */
function skipSlash(text: string, from: number, end: number): number {
  if (from < 0) return -1;
  const slash = skipSpace(text, from, end);
  return slash < end && text.charCodeAt(slash) === 0x2f ? skipSpace(text, slash + 1, end) : -1;
}

interface HostPort {
  readonly host: string;
  readonly port: number | undefined;
}

/**
 * hostport = host [ ":" port ], host = hostname / IPv4address / IPv6reference (RFC 3261 25.1), in
 * `text.slice(start, end)`; the port may have white space around it.
 */
function parseHostPort(text: string, start: number, end: number): HostPort | undefined {
  let hostEnd: number;
  if (start < end && text.charCodeAt(start) === 0x5b) {
    const close = text.indexOf("]", start);
    if (close < 0 || close >= end) return undefined;
    for (let i = start + 1; i < close; i++) {
      const code = text.charCodeAt(i);
      if (!(isHexDigit(code) || code === 0x3a || code === 0x2e)) return undefined;
    }
    hostEnd = close + 1;
  } else {
    hostEnd = start;
    while (hostEnd < end && text.charCodeAt(hostEnd) !== 0x3a) {
      const code = text.charCodeAt(hostEnd);
      if (!(isAlphaNum(code) || code === 0x2d || code === 0x2e || code === 0x5f)) return undefined;
      hostEnd++;
    }
    if (hostEnd === start) return undefined;
  }
  const host = text.slice(start, hostEnd);
  if (hostEnd === end) return { host, port: undefined };
  if (text.charCodeAt(hostEnd) !== 0x3a) return undefined;
  const port = scanTrimmed(text, hostEnd + 1, end, parsePort);
  return port === undefined ? undefined : { host, port };
}

function parsePort(text: string, from: number, to: number): number | undefined {
  return parseBoundedInteger(text, 65535, from, to);
}

/** CSeq = 1*DIGIT LWS Method, the number below 2**31 by RFC 3261 8.1.1.5 but up to 2**32-1 accepted. */
export interface CSeq {
  readonly seq: number;
  readonly method: string;
}

/** The CSeq value in `text.slice(start, end)`, white space around it allowed. */
export function parseCSeq(text: string, start = 0, end = text.length): CSeq | undefined {
  return scanTrimmed(text, start, end, cseqWithin);
}

/** CSeq of `text.slice(from, to)`, already trimmed. */
function cseqWithin(text: string, from: number, to: number): CSeq | undefined {
  let space = from;
  while (space < to && text.charCodeAt(space) !== SPACE && text.charCodeAt(space) !== TAB) space++;
  const seq = parseBoundedInteger(text, 0xffffffff, from, space);
  const methodStart = skipSpace(text, space, to);
  if (seq === undefined || methodStart === to) return undefined;
  for (let i = methodStart; i < to; i++) if (!isTokenChar(text.charCodeAt(i))) return undefined;
  return { seq, method: text.slice(methodStart, to) };
}

/** Who refreshes a session (RFC 4028 section 4): the UAC or the UAS of the refreshing transaction. */
export type Refresher = "uac" | "uas";

/** Session-Expires = delta-seconds *( SEMI se-params ), se-params = refresher-param / generic-param (RFC 4028 section 4). */
export interface SessionExpires {
  /** The session interval, in seconds. */
  readonly interval: number;
  /** The refresher parameter, lower-cased; undefined when absent. */
  readonly refresher: Refresher | undefined;
}

/** The Session-Expires value in `text.slice(start, end)`. */
export function parseSessionExpires(text: string, start = 0, end = text.length): SessionExpires | undefined {
  const delta = deltaSecondsWithParams(text, start, end);
  if (delta === undefined) return undefined;
  // A refresher other than uac or uas reads as a generic-param: none named.
  const refresher = delta.params.get("refresher")?.toLowerCase();
  return {
    interval: delta.seconds,
    refresher: refresher === "uac" || refresher === "uas" ? refresher : undefined,
  };
}

/** Min-SE = delta-seconds *( SEMI generic-param ) (RFC 4028 section 5): the seconds. */
export function parseMinSe(text: string, start = 0, end = text.length): number | undefined {
  return deltaSecondsWithParams(text, start, end)?.seconds;
}

/** delta-seconds (1*DIGIT, at most 2**32-1 as RFC 3261 section 25.1 bounds them) with parameters after it. */
function deltaSecondsWithParams(
  text: string,
  start: number,
  end: number,
): { seconds: number; params: Params } | undefined {
  const from = skipSpace(text, start, end);
  let digitsEnd = from;
  while (digitsEnd < end && isDigit(text.charCodeAt(digitsEnd))) digitsEnd++;
  const seconds = parseBoundedInteger(text, 0xffffffff, from, digitsEnd);
  if (seconds === undefined) return undefined;
  const params = parseParams(text, digitsEnd, end);
  return params === undefined ? undefined : { seconds, params };
}

/**
 * Retry-After = delta-seconds [ comment ] *( SEMI retry-param ) (RFC 3261 section 20.33): the seconds.
 * The comment, e.g. `(I'm in a meeting)`, and the parameters (duration) are read past.
 */
export function parseRetryAfter(text: string, start = 0, end = text.length): number | undefined {
  const from = skipSpace(text, start, end);
  let digitsEnd = from;
  while (digitsEnd < end && isDigit(text.charCodeAt(digitsEnd))) digitsEnd++;
  const seconds = parseBoundedInteger(text, 0xffffffff, from, digitsEnd);
  if (seconds === undefined) return undefined;
  let i = skipSpace(text, digitsEnd, end);
  if (i < end && text.charCodeAt(i) === 0x28) {
    i = commentEnd(text, i, end);
    if (i < 0) return undefined;
  }
  return parseParams(text, i, end) === undefined ? undefined : seconds;
}

/**
 * Index just past the comment starting at `start` (its "("), or -1: comment = LPAREN *( ctext /
 * quoted-pair / comment ) RPAREN, nested (RFC 3261 25.1).
 */
function commentEnd(text: string, start: number, end: number): number {
  let depth = 0;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x5c) i++;
    else if (code === 0x28) depth++;
    else if (code === 0x29 && --depth === 0) return i + 1;
  }
  return -1;
}

/** RSeq = response-num, 1*DIGIT from 1 to 2**32-1 (RFC 3262 section 7.1), white space around it allowed. */
export function parseRSeq(text: string, start = 0, end = text.length): number | undefined {
  const rseq = scanTrimmed(text, start, end, responseNum);
  return rseq === 0 ? undefined : rseq;
}

function responseNum(text: string, from: number, to: number): number | undefined {
  return parseBoundedInteger(text, 0xffffffff, from, to);
}

/** RAck = response-num LWS CSeq-num LWS Method (RFC 3262 section 7.2). */
export interface RAck {
  readonly rseq: number;
  readonly cseq: number;
  readonly method: string;
}

/** The RAck value in `text.slice(start, end)`. */
export function parseRAck(text: string, start = 0, end = text.length): RAck | undefined {
  return scanTrimmed(text, start, end, rackWithin);
}

function rackWithin(text: string, from: number, to: number): RAck | undefined {
  let space = from;
  while (space < to && text.charCodeAt(space) !== SPACE && text.charCodeAt(space) !== TAB) space++;
  const rseq = parseBoundedInteger(text, 0xffffffff, from, space);
  if (rseq === undefined || rseq === 0) return undefined;
  const cseq = cseqWithin(text, skipSpace(text, space, to), to);
  return cseq === undefined ? undefined : { rseq, cseq: cseq.seq, method: cseq.method };
}

/**
 * One value of a Reason header field (RFC 3326 section 2): reason-value = protocol *( SEMI
 * reason-params ), where reason-params = protocol-cause / reason-text / reason-extension.
 */
export interface ReasonValue {
  /** The protocol as written: "SIP", "Q.850" or another token. */
  readonly protocol: string;
  /** cause = 1*DIGIT: a SIP status code or a Q.850 cause value; undefined when absent. */
  readonly cause: number | undefined;
  /** reason-text, unquoted; undefined when absent. */
  readonly text: string | undefined;
}

/**
 * The values of one Reason field, `Reason: Q.850;cause=16;text="Terminated", SIP;cause=200` (a
 * list, RFC 3326 section 2), in `text.slice(start, end)`; undefined when any is malformed. A text
 * written as a token rather than a quoted-string is taken as written.
 */
export function parseReason(text: string, start = 0, end = text.length): ReasonValue[] | undefined {
  const values: ReasonValue[] = [];
  for (let itemStart = start; ; ) {
    const itemEnd = listItemEnd(text, itemStart, end);
    const protocolStart = skipSpace(text, itemStart, itemEnd);
    const protocolEnd = tokenEnd(text, protocolStart, itemEnd);
    if (protocolEnd === protocolStart) return undefined;
    const params = parseParams(text, protocolEnd, itemEnd);
    if (params === undefined) return undefined;
    const causeText = params.get("cause");
    const cause = causeText === undefined ? undefined : parseBoundedInteger(causeText, 0xffffffff);
    if (causeText !== undefined && cause === undefined) return undefined;
    const reasonText = params.get("text");
    values.push({
      protocol: text.slice(protocolStart, protocolEnd),
      cause,
      text: reasonText === undefined || reasonText.charCodeAt(0) !== 0x22 ? reasonText : unquote(reasonText),
    });
    if (itemEnd >= end) return values;
    itemStart = itemEnd + 1;
  }
}

/** The causes each protocol carries: Q.850 cause values (ITU-T Q.850 section 2.2.5) and SIP status codes. */
const CAUSE_RANGES: Readonly<Record<CallCause["protocol"], readonly [number, number]>> = {
  "Q.850": [1, 127],
  SIP: [100, 699],
};

/**
 * The cause the Reason fields of a message give: its Q.850 value when it has one (what the network
 * said of the call), else its SIP one; null when neither is there with a cause in range. A malformed
 * field is passed over; a protocol is matched in any case and named as RFC 3326 spells it.
 */
export function reasonCause(fields: readonly string[]): CallCause | null {
  let sip: CallCause | null = null;
  for (const field of fields) {
    for (const value of parseReason(field) ?? []) {
      const protocol = value.protocol.toUpperCase();
      if ((protocol !== "Q.850" && protocol !== "SIP") || value.cause === undefined) continue;
      const [min, max] = CAUSE_RANGES[protocol];
      if (value.cause < min || value.cause > max) continue;
      const cause: CallCause = { protocol, cause: value.cause, text: value.text ?? null };
      if (protocol === "Q.850") return cause;
      sip ??= cause;
    }
  }
  return sip;
}

/**
 * A Reason field's value for `cause`, in the grammar parseReason reads: `Q.850;cause=16;text="..."`,
 * the text a quoted-string (quotes and backslashes escaped, control characters as spaces).
 */
export function formatReason(cause: CallCause): string {
  const text = cause.text === null ? "" : `;text=${quotedString(cause.text)}`;
  return `${cause.protocol};cause=${cause.cause}${text}`;
}

/**
 * quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE (RFC 3261 25.1), of any text: quotes and
 * backslashes escaped, control characters (a line break would end the header) written as spaces.
 */
export function quotedString(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
  return `"${text.replace(/[\x00-\x1f\x7f]/g, " ").replace(/["\\]/g, "\\$&")}"`;
}

/** Content-Type = media-type, m-type SLASH m-subtype *( SEMI m-parameter ) (RFC 3261 section 20.15). */
export interface MediaType {
  /** `type/subtype`, lower-cased (media types compare case-insensitively). */
  readonly mediaType: string;
  readonly params: Params;
}

/** The media-type in `text.slice(start, end)`. */
export function parseMediaType(text: string, start = 0, end = text.length): MediaType | undefined {
  const typeStart = skipSpace(text, start, end);
  const typeEnd = tokenEnd(text, typeStart, end);
  const subtypeStart = skipSlash(text, typeEnd, end);
  const subtypeEnd = tokenEnd(text, subtypeStart, end);
  if (typeEnd === typeStart || subtypeEnd <= subtypeStart) return undefined;
  const params = parseParams(text, subtypeEnd, end);
  if (params === undefined) return undefined;
  // One slice, when written without white space around the slash (as it almost always is)
  const written =
    subtypeStart === typeEnd + 1
      ? text.slice(typeStart, subtypeEnd)
      : `${text.slice(typeStart, typeEnd)}/${text.slice(subtypeStart, subtypeEnd)}`;
  return { mediaType: lowerCased(written), params };
}

/** SIP-URI / SIPS-URI (RFC 3261 19.1, 25.1) and tel URI (RFC 3966), escapes resolved. */
export interface SipUri {
  readonly scheme: "sip" | "sips" | "tel";
  /** The user part; for tel, the telephone-subscriber number. */
  readonly user: string | undefined;
  readonly password: string | undefined;
  /** Empty for tel. IPv6 references keep their brackets. */
  readonly host: string;
  readonly port: number | undefined;
  readonly params: Params;
  /** The headers component (19.1.1), names as written. */
  readonly headers: ReadonlyMap<string, string>;
}

const NO_URI_HEADERS: ReadonlyMap<string, string> = new Map();

export function parseSipUri(uri: string): SipUri | undefined {
  const colon = uri.indexOf(":");
  const scheme = schemeOf(uri, colon);
  if (scheme === undefined || uriCharsEnd(uri, colon + 1, uri.length) < uri.length) return undefined;
  if (scheme === "tel") {
    let paramsStart = uri.indexOf(";", colon);
    if (paramsStart < 0) paramsStart = uri.length;
    const params = paramsStart < uri.length ? parseUriParams(uri, paramsStart + 1, uri.length) : NO_PARAMS;
    if (paramsStart === colon + 1 || params === undefined) return undefined;
    const user = unescapeUriPart(uri.slice(colon + 1, paramsStart));
    if (user === undefined) return undefined;
    return { scheme, user, password: undefined, host: "", port: undefined, params, headers: NO_URI_HEADERS };
  }
  // userinfo may hold ";" "?" ":" unescaped (RFC 3261 19.1.1, RFC 4475 3.1.1.9), so it ends at the "@"
  const at = uri.indexOf("@", colon);
  let user: string | undefined;
  let password: string | undefined;
  if (at >= 0) {
    let passwordColon = uri.indexOf(":", colon + 1);
    if (passwordColon < 0 || passwordColon > at) passwordColon = at;
    user = unescapeUriPart(uri.slice(colon + 1, passwordColon));
    if (passwordColon < at) {
      password = unescapeUriPart(uri.slice(passwordColon + 1, at));
      if (password === undefined) return undefined;
    }
    if (user === undefined || user.length === 0) return undefined;
  }
  const hostStart = at >= 0 ? at + 1 : colon + 1;
  let headersStart = uri.indexOf("?", hostStart);
  if (headersStart < 0) headersStart = uri.length;
  let hostEnd = uri.indexOf(";", hostStart);
  if (hostEnd < 0 || hostEnd > headersStart) hostEnd = headersStart;
  const hostPort = parseHostPort(uri, hostStart, hostEnd);
  if (hostPort === undefined) return undefined;
  const params = hostEnd < headersStart ? parseUriParams(uri, hostEnd + 1, headersStart) : NO_PARAMS;
  const headers =
    headersStart < uri.length ? parseUriHeaders(uri, headersStart + 1, uri.length) : NO_URI_HEADERS;
  if (params === undefined || headers === undefined) return undefined;
  return { scheme, user, password, host: hostPort.host, port: hostPort.port, params, headers };
}

/** The scheme of a URI when it is sip, sips or tel in any case, lower-cased; else undefined. */
export function uriScheme(uri: string): "sip" | "sips" | "tel" | undefined {
  return schemeOf(uri, uri.indexOf(":"));
}

/** The scheme before `colon` when it is sip, sips or tel in any case, lower-cased; else undefined. */
function schemeOf(uri: string, colon: number): "sip" | "sips" | "tel" | undefined {
  if (colon !== 3 && colon !== 4) return undefined;
  for (let i = 0; i < colon; i++) if (!isAlpha(uri.charCodeAt(i))) return undefined;
  // | 0x20 lower-cases an ASCII letter
  const first = uri.charCodeAt(0) | 0x20;
  const second = uri.charCodeAt(1) | 0x20;
  const third = uri.charCodeAt(2) | 0x20;
  const isSip = first === 0x73 && second === 0x69 && third === 0x70;
  if (colon === 4) return isSip && (uri.charCodeAt(3) | 0x20) === 0x73 ? "sips" : undefined;
  if (isSip) return "sip";
  return first === 0x74 && second === 0x65 && third === 0x6c ? "tel" : undefined;
}

/**
 * uri-parameters = *( ";" pname [ "=" pvalue ] ) in `text.slice(start, end)`, after the first ";";
 * names lower-cased, both unescaped (RFC 3261 19.1.1).
 */
function parseUriParams(text: string, start: number, end: number): Params | undefined {
  const params = new ParamList();
  for (let paramStart = start; ; ) {
    let paramEnd = text.indexOf(";", paramStart);
    if (paramEnd < 0 || paramEnd > end) paramEnd = end;
    let equals = text.indexOf("=", paramStart);
    if (equals < 0 || equals > paramEnd) equals = paramEnd;
    const name = unescapeUriPart(text.slice(paramStart, equals));
    const value = equals < paramEnd ? unescapeUriPart(text.slice(equals + 1, paramEnd)) : undefined;
    if (name === undefined || name.length === 0 || (equals < paramEnd && value === undefined))
      return undefined;
    params.set(name.toLowerCase(), value);
    if (paramEnd === end) return params;
    paramStart = paramEnd + 1;
  }
}

/** headers = "?" header *( "&" header ), header = hname "=" hvalue (RFC 3261 19.1.1), after the "?". */
function parseUriHeaders(text: string, start: number, end: number): Map<string, string> | undefined {
  const headers = new Map<string, string>();
  for (let headerStart = start; ; ) {
    let headerEnd = text.indexOf("&", headerStart);
    if (headerEnd < 0 || headerEnd > end) headerEnd = end;
    const equals = text.indexOf("=", headerStart);
    if (equals <= headerStart || equals > headerEnd) return undefined;
    const name = unescapeUriPart(text.slice(headerStart, equals));
    const value = unescapeUriPart(text.slice(equals + 1, headerEnd));
    if (name === undefined || value === undefined) return undefined;
    headers.set(name, value);
    if (headerEnd === end) return headers;
    headerStart = headerEnd + 1;
  }
}

/** Resolves %HH escapes (RFC 3261 19.1.2) as UTF-8; "%00" stays a NUL. Undefined on a broken escape. */
export function unescapeUriPart(text: string): string | undefined {
  if (!text.includes("%")) return text;
  const octets: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x25) {
      const high = text.charCodeAt(i + 1);
      const low = text.charCodeAt(i + 2);
      if (!isHexDigit(high) || !isHexDigit(low)) return undefined;
      octets.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (code < 0x80) {
      octets.push(code);
    } else {
      const point = text.codePointAt(i) as number;
      for (const octet of Buffer.from(String.fromCodePoint(point))) octets.push(octet);
      if (point > 0xffff) i++; // the low surrogate is part of the same character
    }
  }
  return Buffer.from(octets).toString("utf8");
}

/**
 * The items of comma-separated header fields (Require, Supported, Allow: section 7.3.1), trimmed,
 * empty ones left out.
 */
export function listItems(values: readonly string[]): string[] {
  return values.flatMap((value) => value.split(",").map((item) => item.trim())).filter((item) => item !== "");
}

/** Whether header fields of option tags or methods list `token`, in any case. */
export function listsToken(values: readonly string[], token: string): boolean {
  const wanted = token.toLowerCase();
  return listItems(values).some((item) => item.toLowerCase() === wanted);
}

/** One Identity header field (RFC 8224 section 4.1): the signed PASSporT and its parameters. */
export interface IdentityValue {
  /** The JWS: `header.payload.signature`, or the compact form `header..signature`. */
  readonly token: string;
  /** The `info` parameter's URI without its angle brackets: the signing certificate's; undefined without one. */
  readonly info: string | undefined;
  /** The other parameters (`alg`, `ppt`), by lower-cased name. */
  readonly params: Params;
}

/**
 * `Identity: signed-identity-digest SEMI ident-info *( SEMI ident-info-params )`, where ident-info is
 * `info=<absoluteURI>` and the digest is base64url with dots (RFC 8224 section 4.1). Undefined when
 * malformed. Carriers leave ident-info out (ATIS-1000074 takes the x5u of the PASSporT), so it is optional here.
 */
export function parseIdentity(text: string, start = 0, end = text.length): IdentityValue | undefined {
  let i = skipSpace(text, start, end);
  const tokenStart = i;
  while (i < end && isJwsChar(text.charCodeAt(i))) i++;
  if (i === tokenStart) return undefined;
  const token = text.slice(tokenStart, i);
  let info: string | undefined;
  const params = new ParamList();
  i = skipSpace(text, i, end);
  while (i < end) {
    if (text.charCodeAt(i) !== 0x3b) return undefined;
    const semicolon = i;
    i = skipSpace(text, i + 1, end);
    const nameStart = i;
    while (i < end && isTokenChar(text.charCodeAt(i))) i++;
    const name = text.slice(nameStart, i).toLowerCase();
    if (name === "") return undefined;
    i = skipSpace(text, i, end);
    if (name === "info") {
      if (text.charCodeAt(i) !== 0x3d) return undefined;
      i = skipSpace(text, i + 1, end);
      if (text.charCodeAt(i) !== 0x3c) return undefined;
      const close = text.indexOf(">", i);
      if (close < 0 || close >= end || !isAbsoluteUri(text, i + 1, close)) return undefined;
      info = text.slice(i + 1, close);
      i = skipSpace(text, close + 1, end);
      continue;
    }
    let paramEnd = i;
    if (i < end && text.charCodeAt(i) === 0x3d) {
      paramEnd = skipSpace(text, i + 1, end);
      if (paramEnd < end && text.charCodeAt(paramEnd) === 0x22) {
        paramEnd = quotedStringEnd(text, paramEnd, end);
        if (paramEnd < 0) return undefined;
      } else while (paramEnd < end && isTokenChar(text.charCodeAt(paramEnd))) paramEnd++;
    }
    const one = parseParams(text, semicolon, paramEnd);
    if (one === undefined) return undefined;
    for (const [key, value] of one) params.set(key, value);
    i = skipSpace(text, paramEnd, end);
  }
  return { token, info, params };
}

/** base64url's alphabet and the dots between a JWS's parts (RFC 7515 section 7.1). */
function isJwsChar(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    (code >= 0x30 && code <= 0x39) ||
    code === 0x2d ||
    code === 0x5f ||
    code === 0x2e
  );
}
