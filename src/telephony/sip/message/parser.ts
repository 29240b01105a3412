/**
 * SIP message parsing (RFC 3261 sections 7 and 18.3), validated in the spirit of RFC 4475. Over 400
 * lines on purpose: one pass over a message's bytes, with the field checks that pass makes.
 */
import {
  isAbsoluteUri,
  isToken,
  listItemEnd,
  parseBoundedInteger,
  parseCSeq,
  parseMediaType,
  parseMinSe,
  parseNameAddr,
  parseRAck,
  parseRSeq,
  parseSessionExpires,
  parseSipUri,
  parseVia,
  trimmedSlice,
} from "./header-values.js";
import {
  appendParsedField,
  type FieldValue,
  knownName,
  SIP_VERSION,
  SipHeaders,
  type SipMessage,
  type SipRequest,
  type SipResponse,
  spelledKnownName,
} from "./sip-message.js";

export interface ParseOptions {
  /** True on stream transports (TCP, TLS): framing by Content-Length, which is then mandatory (18.3). */
  readonly stream: boolean;
}

/** The header fields needed to answer a broken request (RFC 3261 8.2.6.2), as far as they were read. */
export interface PartialRequest {
  readonly via: string[];
  readonly from: string | undefined;
  readonly to: string | undefined;
  readonly callId: string | undefined;
  readonly cseq: string | undefined;
}

export type ParseResult =
  | { readonly ok: true; readonly message: SipMessage; readonly consumed: number }
  /** Stream transports only: the message is not complete yet. */
  | { readonly ok: false; readonly incomplete: true }
  | {
      readonly ok: false;
      readonly incomplete: false;
      readonly error: string;
      /** The status to answer a request with: 505 for an unsupported SIP version, else 400. */
      readonly status: 400 | 505;
      /** A request whose Via could be read: answerable. Responses are never answered (RFC 3261 18.1.2). */
      readonly canRespond: boolean;
      readonly partial?: PartialRequest;
    };

/** Header fields whose value is a comma-separated list (RFC 3261 7.3.1 and section 20). */
const LIST_HEADERS = new Set([
  "Accept",
  "Accept-Encoding",
  "Accept-Language",
  "Alert-Info",
  "Allow",
  "Allow-Events",
  "Call-Info",
  "Contact",
  "Content-Encoding",
  "Content-Language",
  "Error-Info",
  "In-Reply-To",
  "Path",
  "Proxy-Require",
  "Record-Route",
  "Require",
  "Route",
  "Service-Route",
  "Supported",
  "Unsupported",
  "Via",
  "Warning",
]);

/** Upper bound on the header section, so that a stream peer cannot make us buffer without end. */
const MAX_HEADER_BYTES = 65_536;

const CRLF = "\r\n";
const HEADER_END = Buffer.from("\r\n\r\n");

/** Why a message is refused; deliberately not an Error, so that refusing captures no stack trace. */
class ParseError {
  constructor(
    readonly error: string,
    readonly status: 400 | 505 = 400,
  ) {}
}

/** Parses one message from the start of `bytes`. Never throws. */
export function parseMessage(bytes: Buffer, options: ParseOptions): ParseResult {
  // RFC 3261 7.5: CRLFs before the start line are ignored (they are also stream keep-alives, RFC 5626 3.5.1)
  let start = 0;
  while (bytes[start] === 0x0d && bytes[start + 1] === 0x0a) start += 2;
  const headerEnd = bytes.indexOf(HEADER_END, start);
  if (headerEnd < 0 && options.stream && bytes.length - start <= MAX_HEADER_BYTES) {
    return { ok: false, incomplete: true };
  }
  // The start line and header fields, decoded once and scanned in place
  const text = bytes.toString("utf8", start, headerEnd < 0 ? bytes.length : headerEnd);
  let startLineEnd = text.indexOf(CRLF);
  if (startLineEnd < 0) startLineEnd = text.length;
  const isRequest = !text.startsWith("SIP/");
  const headers = new SipHeaders();
  if (headerEnd < 0) {
    // Still read the header fields that are there, so that the 400 can be addressed (RFC 4475 3.1.2.15)
    const end = text.endsWith(CRLF) && text.length > startLineEnd ? text.length - CRLF.length : text.length;
    const error = new ParseError("no empty line after the header fields");
    try {
      readHeaderFields(text, startLineEnd, end, headers, undefined);
    } catch {
      // the fields read before the malformed line are kept in `headers`
    }
    return failure(error, isRequest, headers);
  }
  try {
    // Errors take precedence in this order: a malformed header line, the start line, the first
    // invalid field value, then the field counts; the fields are checked as they are read.
    const startLine = startLineEnd === text.length ? text : text.slice(0, startLineEnd);
    let head: MessageHead | undefined;
    let startLineError: ParseError | undefined;
    try {
      head = readStartLine(startLine, headers);
    } catch (error) {
      if (!(error instanceof ParseError)) throw error;
      startLineError = error;
    }
    const checks = new FieldChecks(head?.kind === "request" ? head.method : undefined);
    readHeaderFields(text, startLineEnd, text.length, headers, checks);
    if (head === undefined) throw startLineError;
    const contentLength = checks.finish();
    const bodyStart = headerEnd + HEADER_END.length;
    const bodyEnd = frameBody(bytes, bodyStart, contentLength, options.stream);
    if (bodyEnd === undefined) return { ok: false, incomplete: true };
    const body = bytes.subarray(bodyStart, bodyEnd);
    const message: SipMessage =
      head.kind === "request"
        ? { kind: "request", method: head.method, uri: head.uri, version: head.version, headers, body }
        : {
            kind: "response",
            status: head.status,
            reason: head.reason,
            version: head.version,
            headers,
            body,
          };
    return { ok: true, message, consumed: bodyEnd };
  } catch (error) {
    if (error instanceof ParseError) return failure(error, isRequest, headers);
    return failure(new ParseError(`internal error: ${String(error)}`), isRequest, headers);
  }
}

function failure(error: ParseError, isRequest: boolean, headers: SipHeaders): ParseResult {
  const partial: PartialRequest | undefined = isRequest
    ? {
        via: headers.getAll("Via"),
        from: headers.get("From"),
        to: headers.get("To"),
        callId: headers.get("Call-ID"),
        cseq: headers.get("CSeq"),
      }
    : undefined;
  const canRespond = partial !== undefined && partial.via.length > 0;
  return {
    ok: false,
    incomplete: false,
    error: error.error,
    status: error.status,
    canRespond,
    ...(partial === undefined ? {} : { partial }),
  };
}

/**
 * The header lines (7.3) of `text` from `from` (the CRLF ending the start line) to `end`: unfolds
 * continuation lines (7.3.1), expands compact names, splits lists, and hands each value to `checks`.
 */
function readHeaderFields(
  text: string,
  from: number,
  end: number,
  headers: SipHeaders,
  checks: FieldChecks | undefined,
): void {
  let lineStart = from + CRLF.length;
  while (lineStart <= end && from < end) {
    let lineEnd = lineEndAt(text, lineStart, end);
    // LWS continuation before any field (a folded line is consumed with its field below)
    if (isLinearWhiteSpace(text.charCodeAt(lineStart))) {
      throw new ParseError("continuation line before any header field");
    }
    const colon = text.indexOf(":", lineStart);
    if (colon < 0 || colon >= lineEnd) {
      throw new ParseError(`header line without a colon: ${text.slice(lineStart, lineEnd).slice(0, 40)}`);
    }
    // field-name HCOLON where HCOLON = *( SP / HTAB ) ":" SWS
    let nameEnd = colon;
    while (nameEnd > lineStart && isLinearWhiteSpace(text.charCodeAt(nameEnd - 1))) nameEnd--;
    let name = spelledKnownName(text, lineStart, nameEnd);
    let key: string;
    if (name !== undefined) {
      key = name;
    } else {
      const rawName = text.slice(lineStart, colon).trimEnd();
      name = knownName(rawName);
      if (name !== undefined) {
        key = name;
      } else {
        if (!isToken(rawName)) throw new ParseError(`invalid header field name: ${rawName.slice(0, 40)}`);
        name = rawName;
        key = rawName.toLowerCase();
      }
    }
    // The CRLF and leading white space of each continuation line fold into a single SP
    let next = lineEnd + CRLF.length;
    if (lineEnd < end && isLinearWhiteSpace(text.charCodeAt(next))) {
      let value = text.slice(colon + 1, lineEnd);
      while (lineEnd < end && isLinearWhiteSpace(text.charCodeAt(next))) {
        lineEnd = lineEndAt(text, next, end);
        value += ` ${trimmedSlice(text, next, lineEnd)}`;
        next = lineEnd + CRLF.length;
      }
      value = value.trim();
      addHeaderField(headers, checks, name, key, value, 0, value.length);
    } else {
      addHeaderField(headers, checks, name, key, text, colon + 1, lineEnd);
    }
    if (lineEnd >= end) return;
    lineStart = next;
  }
}

/** The CRLF ending the line at `from`, or `end`; found by its LF, which one-character search finds faster. */
function lineEndAt(text: string, from: number, end: number): number {
  let lf = text.indexOf("\n", from + 1);
  while (lf >= 0 && lf <= end) {
    if (text.charCodeAt(lf - 1) === 0x0d) return lf - 1;
    lf = text.indexOf("\n", lf + 1);
  }
  return end;
}

function isLinearWhiteSpace(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/**
 * Appends the field whose value is `source.slice(start, end)`, trimmed, one entry per value of a
 * list (split at listItemEnd's commas, in place).
 */
function addHeaderField(
  headers: SipHeaders,
  checks: FieldChecks | undefined,
  name: string,
  key: string,
  source: string,
  start: number,
  end: number,
): void {
  if (!LIST_HEADERS.has(name) || !hasCommaBefore(source, start, end)) {
    addHeaderValue(headers, checks, name, key, source, start, end);
    return;
  }
  let itemStart = start;
  for (;;) {
    const itemEnd = listItemEnd(source, itemStart, end);
    addHeaderValue(headers, checks, name, key, source, itemStart, itemEnd);
    if (itemEnd >= end) return;
    itemStart = itemEnd + 1;
  }
}

function hasCommaBefore(text: string, start: number, end: number): boolean {
  const comma = text.indexOf(",", start);
  return comma >= 0 && comma < end;
}

/** Appends `source.slice(start, end).trim()`, checked, with what its grammar yielded. */
function addHeaderValue(
  headers: SipHeaders,
  checks: FieldChecks | undefined,
  name: string,
  key: string,
  source: string,
  start: number,
  end: number,
): void {
  let from = start;
  let to = end;
  while (from < to && isAsciiWhiteSpace(source.charCodeAt(from))) from++;
  while (to > from && isAsciiWhiteSpace(source.charCodeAt(to - 1))) to--;
  let text = source;
  let value: string;
  if (from < to && (source.charCodeAt(from) >= 0x80 || source.charCodeAt(to - 1) >= 0x80)) {
    // only trim() knows the Unicode white space; the value is then checked on its own
    value = source.slice(from, to).trim();
    text = value;
    from = 0;
    to = value.length;
  } else {
    value = source.slice(from, to);
  }
  appendParsedField(headers, name, key, value, checks?.check(name, value, text, from, to));
}

/** White space as String.prototype.trim sees it, among the ASCII characters. */
function isAsciiWhiteSpace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d);
}

type MessageHead = Omit<SipRequest, "body"> | Omit<SipResponse, "body">;

/** Request-Line = Method SP Request-URI SP SIP-Version; Status-Line = SIP-Version SP Status-Code SP Reason-Phrase. */
function readStartLine(line: string, headers: SipHeaders): MessageHead {
  const firstSpace = line.indexOf(" ");
  if (firstSpace < 0) throw new ParseError("start line without spaces");
  if (line.startsWith("SIP/")) {
    const version = line.slice(0, firstSpace);
    checkVersion(version);
    // 7.2: exactly one SP before and after the 3-digit code; the reason phrase may be empty (RFC 4475 3.1.1.13)
    const secondSpace = line.indexOf(" ", firstSpace + 1);
    const code = line.slice(firstSpace + 1, secondSpace < 0 ? line.length : secondSpace);
    if (secondSpace < 0 || code.length !== 3)
      throw new ParseError(`invalid status code: ${code.slice(0, 20)}`);
    const status = parseBoundedInteger(code, 699);
    if (status === undefined || status < 100) throw new ParseError(`status code out of range: ${code}`);
    return { kind: "response", status, reason: line.slice(secondSpace + 1), version, headers };
  }
  const method = line.slice(0, firstSpace);
  const secondSpace = line.indexOf(" ", firstSpace + 1);
  if (secondSpace < 0) throw new ParseError("request line without SIP version");
  const uri = line.slice(firstSpace + 1, secondSpace);
  const version = line.slice(secondSpace + 1);
  if (!isToken(method)) throw new ParseError(`invalid method: ${method.slice(0, 40)}`);
  // A single SP between the three elements (RFC 4475 3.1.2.9-11 refuse extra or trailing white space)
  if (uri.length === 0 || version.includes(" ")) throw new ParseError("request line with extra white space");
  checkVersion(version);
  if (isSipScheme(uri)) {
    // A sip or sips URI that parses is an absoluteURI; 19.1.1 table 1: it has no headers component in a
    // Request-URI (RFC 4475 3.1.2.12)
    const sipUri = parseSipUri(uri);
    if (sipUri === undefined) throw new ParseError(`invalid Request-URI: ${uri.slice(0, 60)}`);
    if (sipUri.headers.size > 0) throw new ParseError("Request-URI with a headers component");
  } else if (!isAbsoluteUri(uri)) {
    throw new ParseError(`invalid Request-URI: ${uri.slice(0, 60)}`);
  }
  return { kind: "request", method, uri, version, headers };
}

/** Whether the scheme of an absoluteURI is sip or sips, in any case. */
function isSipScheme(uri: string): boolean {
  const colon = uri.indexOf(":");
  return (
    (colon === 3 || (colon === 4 && (uri.charCodeAt(3) | 0x20) === 0x73)) &&
    (uri.charCodeAt(0) | 0x20) === 0x73 &&
    (uri.charCodeAt(1) | 0x20) === 0x69 &&
    (uri.charCodeAt(2) | 0x20) === 0x70
  );
}

/** SIP-Version = "SIP" "/" 1*DIGIT "." 1*DIGIT; only 2.0 is supported (answered 505 otherwise, 21.5.7). */
function checkVersion(version: string): void {
  if (version === SIP_VERSION) return;
  const dot = version.indexOf(".");
  const wellFormed =
    version.startsWith("SIP/") &&
    dot > 4 &&
    parseBoundedInteger(version.slice(4, dot), Number.MAX_SAFE_INTEGER) !== undefined &&
    parseBoundedInteger(version.slice(dot + 1), Number.MAX_SAFE_INTEGER) !== undefined;
  if (wellFormed) throw new ParseError(`unsupported SIP version: ${version}`, 505);
  throw new ParseError(`invalid SIP version: ${version.slice(0, 20)}`);
}

/**
 * The checks RFC 4475 expects of a parser, field by field: the mandatory header fields of 8.1.1
 * (Max-Forwards excepted, for RFC 2543 peers, RFC 4475 3.4.1), no duplicates of single-valued ones
 * (RFC 4475 3.3.9, 3.3.10), parseable Via, From, To, Route, Contact, CSeq, Max-Forwards, and a CSeq method
 * equal to the request method (8.1.1.5, RFC 4475 3.1.2.17). The first invalid value is kept, not thrown,
 * so that the fields after it are still read (and a broken start line still takes precedence).
 */
class FieldChecks {
  vias = 0;
  to = 0;
  from = 0;
  callId = 0;
  cseq = 0;
  maxForwards = 0;
  contentLength: string | undefined;
  contentLengths = 0;
  contacts = 0;
  wildcardContact = false;
  error: ParseError | undefined;

  /** `requestMethod`: the method of a request, to compare the CSeq method with. */
  constructor(readonly requestMethod: string | undefined) {}

  /**
   * Checks one value, which is also `text.slice(start, end)`, with the grammar of its field; returns
   * what the grammar yielded, to be kept with the field.
   */
  check(name: string, value: string, text: string, start: number, end: number): FieldValue | undefined {
    switch (name) {
      case "Via": {
        this.vias++;
        const via = parseVia(text, start, end);
        if (via === undefined) this.fail(`invalid Via header field: ${value.slice(0, 60)}`);
        return via;
      }
      case "To":
      case "From":
      case "Route":
      case "Record-Route": {
        if (name === "To") this.to++;
        else if (name === "From") this.from++;
        const nameAddr = parseNameAddr(text, start, end);
        if (nameAddr === undefined) this.fail(`invalid ${name} header field`);
        return nameAddr;
      }
      case "Contact": {
        this.contacts++;
        // Contact: "*" is only meaningful alone (20.10)
        if (value === "*") {
          this.wildcardContact = true;
          return undefined;
        }
        const contact = parseNameAddr(text, start, end);
        if (contact === undefined) this.fail("invalid Contact header field");
        return contact;
      }
      case "Call-ID":
        this.callId++;
        if (value.length === 0) this.fail("empty Call-ID header field");
        return undefined;
      case "CSeq": {
        this.cseq++;
        const cseq = parseCSeq(text, start, end);
        if (cseq === undefined) this.fail("invalid CSeq header field");
        else if (this.requestMethod !== undefined && cseq.method !== this.requestMethod) {
          this.fail("CSeq method does not match the request method");
        }
        return cseq;
      }
      case "Max-Forwards":
        this.maxForwards++;
        if (parseBoundedInteger(value, 255) === undefined) this.fail("invalid Max-Forwards header field");
        return undefined;
      case "Content-Length":
        this.contentLengths++;
        this.contentLength = value;
        return undefined;
      // Extension fields are read here once, as the typed accessors give them; a malformed one is
      // not a reason to refuse the message (undefined is kept, which its reader ignores).
      case "Session-Expires":
        return parseSessionExpires(text, start, end);
      case "Min-SE":
        return parseMinSe(text, start, end);
      case "RSeq":
        return parseRSeq(text, start, end);
      case "RAck":
        return parseRAck(text, start, end);
      case "Content-Type":
        return parseMediaType(text, start, end);
    }
    return undefined;
  }

  fail(error: string): void {
    this.error ??= new ParseError(error);
  }

  /** Throws the first failed check, then checks the counts. Returns the Content-Length value, if any. */
  finish(): string | undefined {
    if (this.error !== undefined) throw this.error;
    if (this.vias === 0) throw new ParseError("missing Via header field");
    checkCount("To", this.to, 1);
    checkCount("From", this.from, 1);
    checkCount("Call-ID", this.callId, 1);
    checkCount("CSeq", this.cseq, 1);
    checkCount("Max-Forwards", this.maxForwards, 0);
    checkCount("Content-Length", this.contentLengths, 0);
    if (this.wildcardContact && this.contacts > 1)
      throw new ParseError("Contact: * among other Contact values");
    return this.contentLength;
  }
}

/** A single-valued field appears at most once, and at least `minimum` times. */
function checkCount(name: string, count: number, minimum: 0 | 1): void {
  if (count < minimum) throw new ParseError(`missing ${name} header field`);
  if (count > 1) throw new ParseError(`more than one ${name} header field`);
}

/**
 * The end of the body (18.3): Content-Length octets after the header section. Undefined when a stream
 * has not delivered them yet. On a datagram a missing Content-Length means the rest of the datagram,
 * and octets beyond Content-Length are discarded (RFC 4475 3.1.1.8).
 */
function frameBody(
  bytes: Buffer,
  bodyStart: number,
  contentLength: string | undefined,
  stream: boolean,
): number | undefined {
  if (contentLength === undefined) {
    if (stream) throw new ParseError("missing Content-Length on a stream transport");
    return bytes.length;
  }
  const length = parseBoundedInteger(contentLength, Number.MAX_SAFE_INTEGER);
  if (length === undefined) throw new ParseError(`invalid Content-Length: ${contentLength.slice(0, 20)}`);
  const end = bodyStart + length;
  if (end <= bytes.length) return end;
  if (stream) return undefined;
  throw new ParseError("Content-Length larger than the datagram");
}
