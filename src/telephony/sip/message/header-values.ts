/** Parsers for the header field values the SIP layers need (RFC 3261 section 25.1 grammar). */

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

function skipSpace(text: string, from: number, end = text.length): number {
  let i = from;
  while (i < end && (text.charCodeAt(i) === SPACE || text.charCodeAt(i) === TAB)) i++;
  return i;
}

/** 1*DIGIT with an upper bound, leading zeros allowed; undefined when not a number in range. */
export function parseBoundedInteger(text: string, max: number): number | undefined {
  return parseBoundedIntegerAt(text, 0, text.length, max);
}

/** parseBoundedInteger of `text.slice(start, end)`, without the slice. */
function parseBoundedIntegerAt(text: string, start: number, end: number, max: number): number | undefined {
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

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
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

/** White space as String.prototype.trim sees it, among the ASCII characters. */
function isAsciiWhiteSpace(code: number): boolean {
  return code === SPACE || (code >= TAB && code <= 0x0d);
}

/**
 * `text.slice(start, end).trim()` without the intermediate string when the ends are ASCII; trim() still
 * decides at a non-ASCII end (it also strips Unicode white space such as NBSP).
 */
export function trimmedSlice(text: string, start: number, end: number): string {
  let from = start;
  let to = end;
  while (from < to && isAsciiWhiteSpace(text.charCodeAt(from))) from++;
  while (to > from && isAsciiWhiteSpace(text.charCodeAt(to - 1))) to--;
  if (from < to && (text.charCodeAt(from) >= 0x80 || text.charCodeAt(to - 1) >= 0x80)) {
    return text.slice(from, to).trim();
  }
  return text.slice(from, to);
}

export type Params = Map<string, string | undefined>;

/**
 * Where the last scan left what it found: the validating scans write here instead of allocating, and
 * the parse functions read it right after. Only valid until the next scan.
 */
const scanned = {
  /** scanParams: the value of the last "rport" parameter: start -2 when absent, -1 when without value. */
  rportStart: -2,
  rportEnd: 0,
  /** scanHostPort. */
  hostEnd: 0,
  port: undefined as number | undefined,
  /** scanNameAddr: display name as a quoted-string, as token words to trim, or none. */
  displayKind: "none" as "none" | "quoted" | "words",
  displayStart: 0,
  displayEnd: 0,
  uriStart: 0,
  uriEnd: 0,
  paramsStart: 0,
  /** scanVia: sent-protocol fields, sent-by trimmed of ASCII white space (sentByTrim: trim() must finish). */
  protocolEnd: 0,
  versionStart: 0,
  versionEnd: 0,
  transportStart: 0,
  transportEnd: 0,
  sentByStart: 0,
  sentByEnd: 0,
  sentByTrim: false,
};

/**
 * *( SEMI generic-param ) from `from` to the end, where generic-param = token [ EQUAL gen-value ] and
 * gen-value = token / host / quoted-string (RFC 3261 25.1). Names are lower-cased; quoted values keep
 * their quotes. Undefined when malformed (e.g. the empty parameters of RFC 4475 3.1.2.1).
 */
function parseParams(text: string, from: number): Params | undefined {
  const params: Params = new Map();
  return scanParams(text, from, text.length, params) ? params : undefined;
}

/** parseParams of `text.slice(0, end)`, into `params` when given; without, it only validates. */
function scanParams(text: string, from: number, end: number, params: Params | undefined): boolean {
  scanned.rportStart = -2;
  let i = skipSpace(text, from, end);
  while (i < end) {
    if (text.charCodeAt(i) !== 0x3b) return false;
    i = skipSpace(text, i + 1, end);
    const nameStart = i;
    while (i < end && isTokenChar(text.charCodeAt(i))) i++;
    if (i === nameStart) return false;
    const nameEnd = i;
    i = skipSpace(text, i, end);
    if (i < end && text.charCodeAt(i) === 0x3d) {
      i = skipSpace(text, i + 1, end);
      const valueStart = i;
      if (i < end && text.charCodeAt(i) === 0x22) {
        i = quotedStringEnd(text, i, end);
        if (i < 0) return false;
      } else {
        // token, or host incl. an IPv6 reference
        while (i < end && (isTokenChar(text.charCodeAt(i)) || isHostPunct(text.charCodeAt(i)))) i++;
      }
      if (i === valueStart) return false;
      if (isRport(text, nameStart, nameEnd)) {
        scanned.rportStart = valueStart;
        scanned.rportEnd = i;
      }
      params?.set(text.slice(nameStart, nameEnd).toLowerCase(), text.slice(valueStart, i));
      i = skipSpace(text, i, end);
    } else {
      if (isRport(text, nameStart, nameEnd)) scanned.rportStart = -1;
      params?.set(text.slice(nameStart, nameEnd).toLowerCase(), undefined);
    }
  }
  return true;
}

/** Whether the parameter name is "rport" in any case (RFC 3581). */
function isRport(text: string, start: number, end: number): boolean {
  if (end - start !== 5) return false;
  for (let i = 0; i < 5; i++) if ((text.charCodeAt(start + i) | 0x20) !== "rport".charCodeAt(i)) return false;
  return true;
}

function isHostPunct(code: number): boolean {
  return code === 0x5b || code === 0x5d || code === 0x3a; // "[" "]" ":"
}

/** Index just past the closing quote of the quoted-string starting at `start`, or -1 (RFC 3261 25.1). */
function quotedStringEnd(text: string, start: number, end = text.length): number {
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

/** absoluteURI = scheme ":" ... with no whitespace, controls, quotes or angle brackets (RFC 3261 25.1, RFC 3986 3.1). */
export function isAbsoluteUri(uri: string): boolean {
  return isAbsoluteUriAt(uri, 0, uri.length);
}

/** isAbsoluteUri of `text.slice(start, end)`, without the slice. */
function isAbsoluteUriAt(text: string, start: number, end: number): boolean {
  // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
  if (start >= end || !isAlpha(text.charCodeAt(start))) return false;
  let i = start + 1;
  while (i < end && isSchemeChar(text.charCodeAt(i))) i++;
  if (i === end || text.charCodeAt(i) !== 0x3a || i + 1 === end) return false;
  for (i++; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code <= SPACE || code === 0x22 || code === 0x3c || code === 0x3e || code === 0x7f) return false;
  }
  return true;
}

function isSchemeChar(code: number): boolean {
  return isAlphaNum(code) || code === 0x2b || code === 0x2d || code === 0x2e;
}

function isAlpha(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
}

function isAlphaNum(code: number): boolean {
  return isAlpha(code) || (code >= 0x30 && code <= 0x39);
}

/** From, To, Contact, Route, Refer-To...: ( name-addr / addr-spec ) *( SEMI param ) (RFC 3261 20.10). */
export interface NameAddr {
  /** The display name, unquoted; undefined when absent. */
  readonly displayName: string | undefined;
  /** The URI as written (any absoluteURI; see parseSipUri for SIP URIs). */
  readonly uri: string;
  /** Header parameters such as tag, expires, q (not the URI's own parameters). */
  readonly params: Params;
}

export function parseNameAddr(value: string): NameAddr | undefined {
  if (!scanNameAddr(value, 0, value.length)) return undefined;
  const { displayKind, displayStart, displayEnd, uriStart, uriEnd, paramsStart } = scanned;
  const params = parseParams(value, paramsStart);
  if (params === undefined) return undefined;
  let displayName: string | undefined;
  if (displayKind === "quoted") displayName = unquote(value.slice(displayStart, displayEnd));
  else if (displayKind === "words") displayName = trimmedSlice(value, displayStart, displayEnd) || undefined;
  return { displayName, uri: value.slice(uriStart, uriEnd), params };
}

/** Whether parseNameAddr would accept `text.slice(start, end)`, without building the result. */
export function isValidNameAddr(text: string, start = 0, end = text.length): boolean {
  return scanNameAddr(text, start, end) && scanParams(text, scanned.paramsStart, end, undefined);
}

/** The name-addr / addr-spec of `text.slice(start, end)` before the parameters, into `scanned`. */
function scanNameAddr(text: string, start: number, end: number): boolean {
  let i = skipSpace(text, start, end);
  scanned.displayKind = "none";
  let open: number;
  if (i < end && text.charCodeAt(i) === 0x22) {
    const quoteEnd = quotedStringEnd(text, i, end);
    if (quoteEnd < 0) return false; // RFC 4475 3.1.2.8: unbalanced quote
    scanned.displayKind = "quoted";
    scanned.displayStart = i;
    scanned.displayEnd = quoteEnd;
    i = skipSpace(text, quoteEnd, end);
    if (i === end || text.charCodeAt(i) !== 0x3c) return false;
    open = i;
  } else {
    open = text.indexOf("<", i);
    if (open >= end) open = -1;
  }
  if (open >= 0) {
    if (scanned.displayKind === "none" && open > i) {
      // display-name = *(token LWS): tokens only, so "Bell, Alexander" is refused (RFC 4475 3.1.2.15)
      if (!isTokenWords(text, i, open)) return false;
      scanned.displayKind = "words";
      scanned.displayStart = i;
      scanned.displayEnd = open;
    }
    const close = text.indexOf(">", open);
    // no LWS inside the brackets (RFC 4475 3.1.2.14); isAbsoluteUri refuses any whitespace
    if (close < 0 || close >= end || !isAbsoluteUriAt(text, open + 1, close)) return false;
    scanned.uriStart = open + 1;
    scanned.uriEnd = close;
    scanned.paramsStart = close + 1;
    return true;
  }
  // addr-spec: a URI holding "," "?" or ";" must be in <> (RFC 3261 20.10), so it ends at ";" or LWS
  let uriEnd = i;
  while (uriEnd < end) {
    const code = text.charCodeAt(uriEnd);
    if (code === 0x3b || code === SPACE || code === TAB) break;
    if (code === 0x3f || code === 0x2c) return false;
    uriEnd++;
  }
  if (!isAbsoluteUriAt(text, i, uriEnd)) return false;
  scanned.uriStart = i;
  scanned.uriEnd = uriEnd;
  scanned.paramsStart = uriEnd;
  return true;
}

/** Whether `text.slice(start, end).trim()` is tokens and LWS only. */
function isTokenWords(text: string, start: number, end: number): boolean {
  let from = start;
  let to = end;
  while (from < to && isAsciiWhiteSpace(text.charCodeAt(from))) from++;
  while (to > from && isAsciiWhiteSpace(text.charCodeAt(to - 1))) to--;
  if (from < to && (text.charCodeAt(from) >= 0x80 || text.charCodeAt(to - 1) >= 0x80)) {
    const words = text.slice(from, to).trim();
    return areTokenWordChars(words, 0, words.length);
  }
  return areTokenWordChars(text, from, to);
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
  readonly transport: string;
  readonly host: string;
  readonly port: number | undefined;
  readonly params: Params;
  readonly branch: string | undefined;
  readonly received: string | undefined;
  /** RFC 3581: a port number, true when requested without a value, undefined when absent. */
  readonly rport: number | true | undefined;
}

export function parseVia(value: string): Via | undefined {
  if (!scanVia(value, 0, value.length)) return undefined;
  const { protocolEnd, versionStart, versionEnd, transportStart, transportEnd, paramsStart } = scanned;
  const hostPort = scanned.sentByTrim
    ? parseHostPort(value.slice(scanned.sentByStart, scanned.sentByEnd).trim())
    : hostPortOf(value, scanned.sentByStart, scanned.sentByEnd);
  if (hostPort === undefined) return undefined;
  const params = paramsStart < 0 ? new Map() : parseParams(value, paramsStart);
  if (params === undefined) return undefined;
  const rportValue = params.get("rport");
  let rport: number | true | undefined;
  if (params.has("rport")) {
    rport = rportValue === undefined ? true : parseBoundedInteger(rportValue, 65535);
    if (rport === undefined) return undefined;
  }
  return {
    protocol: value.slice(skipSpace(value, 0), protocolEnd),
    version: value.slice(versionStart, versionEnd),
    transport: value.slice(transportStart, transportEnd).toUpperCase(),
    host: hostPort.host,
    port: hostPort.port,
    params,
    branch: params.get("branch"),
    received: params.get("received"),
    rport,
  };
}

/** Whether parseVia would accept `text.slice(start, end)`, without building the result. */
export function isValidVia(text: string, start = 0, end = text.length): boolean {
  if (!scanVia(text, start, end)) return false;
  const sentByValid = scanned.sentByTrim
    ? scanHostPort(text.slice(scanned.sentByStart, scanned.sentByEnd).trim())
    : scanHostPortAt(text, scanned.sentByStart, scanned.sentByEnd);
  if (!sentByValid) return false;
  if (scanned.paramsStart < 0) return true;
  if (!scanParams(text, scanned.paramsStart, end, undefined)) return false;
  // RFC 3581: rport without a value asks for one; with a value it is a port
  return (
    scanned.rportStart < 0 ||
    parseBoundedIntegerAt(text, scanned.rportStart, scanned.rportEnd, 65535) !== undefined
  );
}

/** sent-protocol of `text.slice(start, end)`, and where sent-by and the parameters are, into `scanned`. */
function scanVia(text: string, start: number, end: number): boolean {
  // sent-protocol = protocol-name SLASH protocol-version SLASH transport, SLASH = SWS "/" SWS
  let i = skipSpace(text, start, end);
  const protocolStart = i;
  while (i < end && isTokenChar(text.charCodeAt(i))) i++;
  if (i === protocolStart) return false;
  scanned.protocolEnd = i;
  i = skipSlash(text, i, end);
  if (i < 0) return false;
  scanned.versionStart = i;
  while (i < end && isTokenChar(text.charCodeAt(i))) i++;
  if (i === scanned.versionStart) return false;
  scanned.versionEnd = i;
  i = skipSlash(text, i, end);
  if (i < 0) return false;
  scanned.transportStart = i;
  while (i < end && isTokenChar(text.charCodeAt(i))) i++;
  if (i === scanned.transportStart) return false;
  scanned.transportEnd = i;
  i = skipSpace(text, i, end);
  let paramsStart = text.indexOf(";", i);
  if (paramsStart >= end) paramsStart = -1;
  scanned.paramsStart = paramsStart;
  // sent-by is what lies between, trimmed
  let sentByEnd = paramsStart < 0 ? end : paramsStart;
  while (i < sentByEnd && isAsciiWhiteSpace(text.charCodeAt(i))) i++;
  while (sentByEnd > i && isAsciiWhiteSpace(text.charCodeAt(sentByEnd - 1))) sentByEnd--;
  scanned.sentByStart = i;
  scanned.sentByEnd = sentByEnd;
  scanned.sentByTrim =
    sentByEnd > i && (text.charCodeAt(i) >= 0x80 || text.charCodeAt(sentByEnd - 1) >= 0x80);
  return true;
}

/** Index past SWS "/" SWS at `from`, or -1. */
function skipSlash(text: string, from: number, end: number): number {
  const slash = skipSpace(text, from, end);
  return slash < end && text.charCodeAt(slash) === 0x2f ? skipSpace(text, slash + 1, end) : -1;
}

interface HostPort {
  readonly host: string;
  readonly port: number | undefined;
}

/** hostport = host [ ":" port ], host = hostname / IPv4address / IPv6reference (RFC 3261 25.1). */
function parseHostPort(text: string): HostPort | undefined {
  return hostPortOf(text, 0, text.length);
}

/** parseHostPort of `text.slice(start, end)`. */
function hostPortOf(text: string, start: number, end: number): HostPort | undefined {
  return scanHostPortAt(text, start, end)
    ? { host: text.slice(start, scanned.hostEnd), port: scanned.port }
    : undefined;
}

function scanHostPort(text: string): boolean {
  return scanHostPortAt(text, 0, text.length);
}

/** Whether `text.slice(start, end)` is a hostport; its host end and port into `scanned`. */
function scanHostPortAt(text: string, start: number, end: number): boolean {
  let hostEnd: number;
  if (text.charCodeAt(start) === 0x5b && start < end) {
    const close = text.indexOf("]", start);
    if (close < 0 || close >= end) return false;
    for (let i = start + 1; i < close; i++) {
      const code = text.charCodeAt(i);
      if (!(isHexDigit(code) || code === 0x3a || code === 0x2e)) return false;
    }
    hostEnd = close + 1;
  } else {
    hostEnd = start;
    while (hostEnd < end && text.charCodeAt(hostEnd) !== 0x3a) {
      const code = text.charCodeAt(hostEnd);
      if (!(isAlphaNum(code) || code === 0x2d || code === 0x2e || code === 0x5f)) return false;
      hostEnd++;
    }
    if (hostEnd === start) return false;
  }
  scanned.hostEnd = hostEnd;
  scanned.port = undefined;
  if (hostEnd === end) return true;
  if (text.charCodeAt(hostEnd) !== 0x3a) return false;
  // the port, trimmed
  let from = hostEnd + 1;
  let to = end;
  while (from < to && isAsciiWhiteSpace(text.charCodeAt(from))) from++;
  while (to > from && isAsciiWhiteSpace(text.charCodeAt(to - 1))) to--;
  const port =
    from < to && (text.charCodeAt(from) >= 0x80 || text.charCodeAt(to - 1) >= 0x80)
      ? parseBoundedInteger(text.slice(from, to).trim(), 65535)
      : parseBoundedIntegerAt(text, from, to, 65535);
  scanned.port = port;
  return port !== undefined;
}

function isHexDigit(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

/** CSeq = 1*DIGIT LWS Method, the number below 2**31 by RFC 3261 8.1.1.5 but up to 2**32-1 accepted. */
export interface CSeq {
  readonly seq: number;
  readonly method: string;
}

export function parseCSeq(value: string): CSeq | undefined {
  let from = 0;
  let to = value.length;
  while (from < to && isAsciiWhiteSpace(value.charCodeAt(from))) from++;
  while (to > from && isAsciiWhiteSpace(value.charCodeAt(to - 1))) to--;
  if (from < to && (value.charCodeAt(from) >= 0x80 || value.charCodeAt(to - 1) >= 0x80)) {
    const text = value.trim();
    return cseqWithin(text, 0, text.length);
  }
  return cseqWithin(value, from, to);
}

/** CSeq of the trimmed `text.slice(from, to)`. */
function cseqWithin(text: string, from: number, to: number): CSeq | undefined {
  let space = from;
  while (space < to && text.charCodeAt(space) !== SPACE && text.charCodeAt(space) !== TAB) space++;
  const seq = parseBoundedIntegerAt(text, from, space, 0xffffffff);
  let methodStart = space;
  while (
    methodStart < to &&
    (text.charCodeAt(methodStart) === SPACE || text.charCodeAt(methodStart) === TAB)
  ) {
    methodStart++;
  }
  if (seq === undefined || methodStart === to) return undefined;
  for (let i = methodStart; i < to; i++) if (!isTokenChar(text.charCodeAt(i))) return undefined;
  return { seq, method: text.slice(methodStart, to) };
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
  readonly headers: Map<string, string>;
}

export function parseSipUri(uri: string): SipUri | undefined {
  const colon = uri.indexOf(":");
  const scheme = uri.slice(0, colon).toLowerCase();
  if (scheme !== "sip" && scheme !== "sips" && scheme !== "tel") return undefined;
  for (let i = colon + 1; i < uri.length; i++) {
    const code = uri.charCodeAt(i);
    if (code <= SPACE || code === 0x3c || code === 0x3e || code === 0x22 || code === 0x7f) return undefined;
  }
  if (scheme === "tel") {
    const paramsStart = uri.indexOf(";", colon);
    const number = uri.slice(colon + 1, paramsStart < 0 ? uri.length : paramsStart);
    const params = paramsStart < 0 ? new Map() : parseUriParams(uri.slice(paramsStart + 1));
    if (number.length === 0 || params === undefined) return undefined;
    const user = unescapeUriPart(number);
    if (user === undefined) return undefined;
    return { scheme, user, password: undefined, host: "", port: undefined, params, headers: new Map() };
  }
  // userinfo may hold ";" "?" ":" unescaped (RFC 3261 19.1.1, RFC 4475 3.1.1.9), so it ends at the "@"
  const at = uri.indexOf("@", colon);
  let user: string | undefined;
  let password: string | undefined;
  if (at >= 0) {
    const userinfo = uri.slice(colon + 1, at);
    const passwordColon = userinfo.indexOf(":");
    user = unescapeUriPart(passwordColon < 0 ? userinfo : userinfo.slice(0, passwordColon));
    if (passwordColon >= 0) {
      password = unescapeUriPart(userinfo.slice(passwordColon + 1));
      if (password === undefined) return undefined;
    }
    if (user === undefined || user.length === 0) return undefined;
  }
  const hostStart = at >= 0 ? at + 1 : colon + 1;
  const headersStart = uri.indexOf("?", hostStart);
  const beforeHeaders = headersStart < 0 ? uri.length : headersStart;
  const paramsStart = uri.indexOf(";", hostStart);
  const hostEnd = paramsStart >= 0 && paramsStart < beforeHeaders ? paramsStart : beforeHeaders;
  const hostPort = hostPortOf(uri, hostStart, hostEnd);
  if (hostPort === undefined) return undefined;
  const params = hostEnd < beforeHeaders ? parseUriParams(uri.slice(hostEnd + 1, beforeHeaders)) : new Map();
  const headers = headersStart < 0 ? new Map() : parseUriHeaders(uri.slice(headersStart + 1));
  if (params === undefined || headers === undefined) return undefined;
  return { scheme, user, password, host: hostPort.host, port: hostPort.port, params, headers };
}

/**
 * Whether parseSipUri(uri) would succeed with an empty headers component: the parser's check of a
 * Request-URI, which allocates nothing. False for a URI with headers, which parseSipUri tells apart.
 */
export function isSipUriWithoutHeaders(uri: string): boolean {
  const colon = uri.indexOf(":");
  // without a colon parseSipUri takes all but the last character as the scheme
  if (colon < 0) return parseSipUri(uri)?.headers.size === 0;
  const scheme = schemeOf(uri, colon);
  if (scheme === undefined) return false;
  for (let i = colon + 1; i < uri.length; i++) {
    const code = uri.charCodeAt(i);
    if (code <= SPACE || code === 0x3c || code === 0x3e || code === 0x22 || code === 0x7f) return false;
  }
  if (scheme === "tel") {
    let paramsStart = uri.indexOf(";", colon);
    if (paramsStart < 0) paramsStart = uri.length;
    return (
      paramsStart > colon + 1 &&
      areEscapesValid(uri, colon + 1, paramsStart) &&
      (paramsStart === uri.length || areUriParamsValid(uri, paramsStart + 1, uri.length))
    );
  }
  const at = uri.indexOf("@", colon);
  if (at >= 0) {
    let passwordColon = uri.indexOf(":", colon + 1);
    if (passwordColon < 0 || passwordColon > at) passwordColon = at;
    if (passwordColon === colon + 1 || !areEscapesValid(uri, colon + 1, passwordColon)) return false;
    if (passwordColon < at && !areEscapesValid(uri, passwordColon + 1, at)) return false;
  }
  const hostStart = at >= 0 ? at + 1 : colon + 1;
  if (uri.indexOf("?", hostStart) >= 0) return false;
  let hostEnd = uri.indexOf(";", hostStart);
  if (hostEnd < 0) hostEnd = uri.length;
  return (
    scanHostPortAt(uri, hostStart, hostEnd) &&
    (hostEnd === uri.length || areUriParamsValid(uri, hostEnd + 1, uri.length))
  );
}

/** The lower-cased scheme of parseSipUri, without lower-casing a copy; undefined for other schemes. */
function schemeOf(uri: string, colon: number): "sip" | "sips" | "tel" | undefined {
  const length = colon;
  if (length !== 3 && length !== 4) return undefined;
  const first = uri.charCodeAt(0) | 0x20;
  const second = uri.charCodeAt(1) | 0x20;
  const third = uri.charCodeAt(2) | 0x20;
  // | 0x20 lower-cases ASCII letters; non-letters that it maps onto letters are refused by isAlpha
  if (!isAlpha(uri.charCodeAt(0)) || !isAlpha(uri.charCodeAt(1)) || !isAlpha(uri.charCodeAt(2)))
    return undefined;
  if (length === 3) {
    if (first === 0x73 && second === 0x69 && third === 0x70) return "sip";
    if (first === 0x74 && second === 0x65 && third === 0x6c) return "tel";
    return undefined;
  }
  const fourth = uri.charCodeAt(3);
  return first === 0x73 && second === 0x69 && third === 0x70 && (fourth | 0x20) === 0x73 && isAlpha(fourth)
    ? "sips"
    : undefined;
}

/** Whether unescapeUriPart accepts `text.slice(start, end)`: each "%" starts a %HH escape. */
function areEscapesValid(text: string, start: number, end: number): boolean {
  for (let i = text.indexOf("%", start); i >= 0 && i < end; i = text.indexOf("%", i + 3)) {
    if (i + 2 >= end || !isHexDigit(text.charCodeAt(i + 1)) || !isHexDigit(text.charCodeAt(i + 2)))
      return false;
  }
  return true;
}

/** Whether parseUriParams accepts `text.slice(start, end)`. */
function areUriParamsValid(text: string, start: number, end: number): boolean {
  let paramStart = start;
  while (true) {
    let paramEnd = text.indexOf(";", paramStart);
    if (paramEnd < 0 || paramEnd > end) paramEnd = end;
    let equals = text.indexOf("=", paramStart);
    if (equals < 0 || equals > paramEnd) equals = paramEnd;
    if (equals === paramStart || !areEscapesValid(text, paramStart, equals)) return false;
    if (equals < paramEnd && !areEscapesValid(text, equals + 1, paramEnd)) return false;
    if (paramEnd === end) return true;
    paramStart = paramEnd + 1;
  }
}

/** uri-parameters = *( ";" pname [ "=" pvalue ] ), names lower-cased, both unescaped (RFC 3261 19.1.1). */
function parseUriParams(text: string): Params | undefined {
  const params: Params = new Map();
  for (const param of text.split(";")) {
    const equals = param.indexOf("=");
    const name = unescapeUriPart(equals < 0 ? param : param.slice(0, equals));
    const value = equals < 0 ? undefined : unescapeUriPart(param.slice(equals + 1));
    if (name === undefined || name.length === 0 || (equals >= 0 && value === undefined)) return undefined;
    params.set(name.toLowerCase(), value);
  }
  return params;
}

/** headers = "?" header *( "&" header ), header = hname "=" hvalue (RFC 3261 19.1.1). */
function parseUriHeaders(text: string): Map<string, string> | undefined {
  const headers = new Map<string, string>();
  for (const header of text.split("&")) {
    const equals = header.indexOf("=");
    if (equals < 1) return undefined;
    const name = unescapeUriPart(header.slice(0, equals));
    const value = unescapeUriPart(header.slice(equals + 1));
    if (name === undefined || value === undefined) return undefined;
    headers.set(name, value);
  }
  return headers;
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
