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

function isDigits(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x30 || code > 0x39) return false;
  }
  return true;
}

function skipSpace(text: string, from: number): number {
  let i = from;
  while (i < text.length && (text.charCodeAt(i) === SPACE || text.charCodeAt(i) === TAB)) i++;
  return i;
}

/** 1*DIGIT with an upper bound, leading zeros allowed; undefined when not a number in range. */
export function parseBoundedInteger(text: string, max: number): number | undefined {
  if (!isDigits(text)) return undefined;
  // Strip leading zeros before Number() so that "0009" is 9 and 30-digit values cannot lose precision.
  let start = 0;
  while (start < text.length - 1 && text.charCodeAt(start) === 0x30) start++;
  if (text.length - start > 16) return undefined;
  const value = Number(text.slice(start));
  return value <= max ? value : undefined;
}

/**
 * Splits a list-valued header field (RFC 3261 7.3.1: "field-name: value, value") at commas that are
 * outside quoted strings and outside <...>. Values are trimmed; empty ones are kept for the validator.
 */
export function splitHeaderList(value: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let inQuotes = false;
  let inAngles = false;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (inQuotes) {
      if (code === 0x5c)
        i++; // quoted-pair: skip the escaped character
      else if (code === 0x22) inQuotes = false;
    } else if (code === 0x22) inQuotes = true;
    else if (code === 0x3c) inAngles = true;
    else if (code === 0x3e) inAngles = false;
    else if (code === 0x2c && !inAngles) {
      parts.push(value.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(value.slice(start).trim());
  return parts;
}

export type Params = Map<string, string | undefined>;

/**
 * *( SEMI generic-param ) from `from` to the end, where generic-param = token [ EQUAL gen-value ] and
 * gen-value = token / host / quoted-string (RFC 3261 25.1). Names are lower-cased; quoted values keep
 * their quotes. Undefined when malformed (e.g. the empty parameters of RFC 4475 3.1.2.1).
 */
function parseParams(text: string, from: number): Params | undefined {
  const params: Params = new Map();
  let i = skipSpace(text, from);
  while (i < text.length) {
    if (text.charCodeAt(i) !== 0x3b) return undefined;
    i = skipSpace(text, i + 1);
    const nameStart = i;
    while (i < text.length && isTokenChar(text.charCodeAt(i))) i++;
    if (i === nameStart) return undefined;
    const name = text.slice(nameStart, i).toLowerCase();
    i = skipSpace(text, i);
    let value: string | undefined;
    if (text.charCodeAt(i) === 0x3d) {
      i = skipSpace(text, i + 1);
      const valueStart = i;
      if (text.charCodeAt(i) === 0x22) {
        const end = quotedStringEnd(text, i);
        if (end < 0) return undefined;
        i = end;
      } else {
        // token, or host incl. an IPv6 reference
        while (i < text.length && (isTokenChar(text.charCodeAt(i)) || isHostPunct(text.charCodeAt(i)))) i++;
      }
      if (i === valueStart) return undefined;
      value = text.slice(valueStart, i);
      i = skipSpace(text, i);
    }
    params.set(name, value);
  }
  return params;
}

function isHostPunct(code: number): boolean {
  return code === 0x5b || code === 0x5d || code === 0x3a; // "[" "]" ":"
}

/** Index just past the closing quote of the quoted-string starting at `start`, or -1 (RFC 3261 25.1). */
function quotedStringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
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
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it excludes
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20"<>\x7f]+$/;

export function isAbsoluteUri(uri: string): boolean {
  return ABSOLUTE_URI.test(uri);
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
  let i = skipSpace(value, 0);
  let displayName: string | undefined;
  let uri: string;
  if (value.charCodeAt(i) === 0x22) {
    const end = quotedStringEnd(value, i);
    if (end < 0) return undefined; // RFC 4475 3.1.2.8: unbalanced quote
    displayName = unquote(value.slice(i, end));
    i = skipSpace(value, end);
    if (value.charCodeAt(i) !== 0x3c) return undefined;
  }
  const open = displayName === undefined ? value.indexOf("<", i) : i;
  if (open >= 0) {
    if (displayName === undefined) {
      // display-name = *(token LWS): tokens only, so "Bell, Alexander" is refused (RFC 4475 3.1.2.15)
      const words = value.slice(i, open).trim();
      for (let k = 0; k < words.length; k++) {
        const code = words.charCodeAt(k);
        if (!isTokenChar(code) && code !== SPACE && code !== TAB) return undefined;
      }
      displayName = words.length > 0 ? words : undefined;
    }
    const close = value.indexOf(">", open);
    if (close < 0) return undefined;
    uri = value.slice(open + 1, close);
    // no LWS inside the brackets (RFC 4475 3.1.2.14); isAbsoluteUri refuses any whitespace
    if (!isAbsoluteUri(uri)) return undefined;
    i = close + 1;
  } else {
    // addr-spec: a URI holding "," "?" or ";" must be in <> (RFC 3261 20.10), so it ends at ";" or LWS
    let end = i;
    while (end < value.length) {
      const code = value.charCodeAt(end);
      if (code === 0x3b || code === SPACE || code === TAB) break;
      end++;
    }
    uri = value.slice(i, end);
    if (!isAbsoluteUri(uri) || uri.includes("?") || uri.includes(",")) return undefined;
    i = end;
  }
  const params = parseParams(value, i);
  return params === undefined ? undefined : { displayName, uri, params };
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
  // sent-protocol = protocol-name SLASH protocol-version SLASH transport, SLASH = SWS "/" SWS
  const fields: string[] = [];
  let i = skipSpace(value, 0);
  for (let n = 0; n < 3; n++) {
    const start = i;
    while (i < value.length && isTokenChar(value.charCodeAt(i))) i++;
    if (i === start) return undefined;
    fields.push(value.slice(start, i));
    i = skipSpace(value, i);
    if (n < 2) {
      if (value.charCodeAt(i) !== 0x2f) return undefined;
      i = skipSpace(value, i + 1);
    }
  }
  const [protocol, version, transport] = fields as [string, string, string];
  const paramsStart = value.indexOf(";", i);
  const sentBy = value.slice(i, paramsStart < 0 ? value.length : paramsStart).trim();
  const hostPort = parseHostPort(sentBy);
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
    protocol,
    version,
    transport: transport.toUpperCase(),
    host: hostPort.host,
    port: hostPort.port,
    params,
    branch: params.get("branch"),
    received: params.get("received"),
    rport,
  };
}

/** hostport = host [ ":" port ], host = hostname / IPv4address / IPv6reference (RFC 3261 25.1). */
function parseHostPort(text: string): { host: string; port: number | undefined } | undefined {
  let hostEnd: number;
  if (text.charCodeAt(0) === 0x5b) {
    hostEnd = text.indexOf("]") + 1;
    if (hostEnd === 0) return undefined;
    for (let i = 1; i < hostEnd - 1; i++) {
      const code = text.charCodeAt(i);
      if (!(isHexDigit(code) || code === 0x3a || code === 0x2e)) return undefined;
    }
  } else {
    hostEnd = text.indexOf(":");
    if (hostEnd < 0) hostEnd = text.length;
    for (let i = 0; i < hostEnd; i++) {
      const code = text.charCodeAt(i);
      if (!(isAlphaNum(code) || code === 0x2d || code === 0x2e || code === 0x5f)) return undefined;
    }
  }
  if (hostEnd === 0) return undefined;
  const host = text.slice(0, hostEnd);
  if (hostEnd === text.length) return { host, port: undefined };
  if (text.charCodeAt(hostEnd) !== 0x3a) return undefined;
  const port = parseBoundedInteger(text.slice(hostEnd + 1).trim(), 65535);
  return port === undefined ? undefined : { host, port };
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
  const text = value.trim();
  let space = 0;
  while (space < text.length && text.charCodeAt(space) !== SPACE && text.charCodeAt(space) !== TAB) space++;
  const seq = parseBoundedInteger(text.slice(0, space), 0xffffffff);
  const method = text.slice(skipSpace(text, space));
  return seq === undefined || !isToken(method) ? undefined : { seq, method };
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
  const hostPort = parseHostPort(uri.slice(hostStart, hostEnd));
  if (hostPort === undefined) return undefined;
  const params = hostEnd < beforeHeaders ? parseUriParams(uri.slice(hostEnd + 1, beforeHeaders)) : new Map();
  const headers = headersStart < 0 ? new Map() : parseUriHeaders(uri.slice(headersStart + 1));
  if (params === undefined || headers === undefined) return undefined;
  return { scheme, user, password, host: hostPort.host, port: hostPort.port, params, headers };
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
