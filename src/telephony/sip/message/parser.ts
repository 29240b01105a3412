/** SIP message parsing (RFC 3261 sections 7 and 18.3), validated in the spirit of RFC 4475. */
import {
  isAbsoluteUri,
  isToken,
  parseBoundedInteger,
  parseCSeq,
  parseNameAddr,
  parseSipUri,
  parseVia,
  splitHeaderList,
} from "./header-values.js";
import {
  knownName,
  SIP_VERSION,
  SipHeaders,
  type SipMessage,
  type SipRequest,
  type SipResponse,
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
  const lines = bytes.toString("utf8", start, headerEnd < 0 ? bytes.length : headerEnd).split(CRLF);
  const startLine = lines[0] as string;
  const isRequest = !startLine.startsWith("SIP/");
  const headers = new SipHeaders();
  if (headerEnd < 0) {
    // Still read the header fields that are there, so that the 400 can be addressed (RFC 4475 3.1.2.15)
    if (lines[lines.length - 1] === "") lines.pop();
    const error = new ParseError("no empty line after the header fields");
    try {
      readHeaderFields(lines, headers);
    } catch {
      // the fields read before the malformed line are kept in `headers`
    }
    return failure(error, isRequest, headers);
  }
  try {
    readHeaderFields(lines, headers);
    const head = readStartLine(startLine, headers);
    const contentLength = checkHeaders(head, headers);
    const bodyStart = headerEnd + HEADER_END.length;
    const bodyEnd = frameBody(bytes, bodyStart, contentLength, options.stream);
    if (bodyEnd === undefined) return { ok: false, incomplete: true };
    return { ok: true, message: { ...head, body: bytes.subarray(bodyStart, bodyEnd) }, consumed: bodyEnd };
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

/** Header lines (7.3): unfolds continuation lines (7.3.1), expands compact names, splits lists. */
function readHeaderFields(lines: string[], headers: SipHeaders): void {
  let name: string | undefined;
  let value = "";
  for (let index = 1; index < lines.length; index++) {
    const line = lines[index] as string;
    const first = line.charCodeAt(0);
    if (first === 0x20 || first === 0x09) {
      // LWS continuation: the CRLF and leading white space fold into a single SP
      if (name === undefined) throw new ParseError("continuation line before any header field");
      value += ` ${line.trim()}`;
      continue;
    }
    if (name !== undefined) addHeaderField(headers, name, value);
    const colon = line.indexOf(":");
    if (colon < 0) throw new ParseError(`header line without a colon: ${line.slice(0, 40)}`);
    // field-name HCOLON where HCOLON = *( SP / HTAB ) ":" SWS
    const rawName = line.slice(0, colon).trimEnd();
    name = knownName(rawName);
    if (name === undefined) {
      if (!isToken(rawName)) throw new ParseError(`invalid header field name: ${rawName.slice(0, 40)}`);
      name = rawName;
    }
    value = line.slice(colon + 1);
  }
  if (name !== undefined) addHeaderField(headers, name, value);
}

function addHeaderField(headers: SipHeaders, name: string, rawValue: string): void {
  const value = rawValue.trim();
  if (LIST_HEADERS.has(name) && value.includes(",")) {
    for (const item of splitHeaderList(value)) headers.append(name, item);
  } else {
    headers.append(name, value);
  }
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
  if (!isAbsoluteUri(uri)) throw new ParseError(`invalid Request-URI: ${uri.slice(0, 60)}`);
  const scheme = uri.slice(0, uri.indexOf(":")).toLowerCase();
  if (scheme === "sip" || scheme === "sips") {
    const sipUri = parseSipUri(uri);
    if (sipUri === undefined) throw new ParseError(`invalid Request-URI: ${uri.slice(0, 60)}`);
    // 19.1.1 table 1: the headers component is not allowed in a Request-URI (RFC 4475 3.1.2.12)
    if (sipUri.headers.size > 0) throw new ParseError("Request-URI with a headers component");
  }
  return { kind: "request", method, uri, version, headers };
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
 * The checks RFC 4475 expects of a parser, in one pass over the fields: the mandatory header fields of
 * 8.1.1 (Max-Forwards excepted, for RFC 2543 peers, RFC 4475 3.4.1), no duplicates of single-valued ones
 * (RFC 4475 3.3.9, 3.3.10), parseable Via, From, To, Route, Contact, CSeq, Max-Forwards, and a CSeq method
 * equal to the request method (8.1.1.5, RFC 4475 3.1.2.17). Returns the Content-Length value, if any.
 */
function checkHeaders(head: MessageHead, headers: SipHeaders): string | undefined {
  let vias = 0;
  let to = 0;
  let from = 0;
  let callId = 0;
  let cseq = 0;
  let maxForwards = 0;
  let contentLength: string | undefined;
  let contentLengths = 0;
  let contacts = 0;
  let wildcardContact = false;
  for (const [name, value] of headers) {
    switch (name) {
      case "Via":
        vias++;
        if (parseVia(value) === undefined)
          throw new ParseError(`invalid Via header field: ${value.slice(0, 60)}`);
        break;
      case "To":
      case "From":
      case "Route":
      case "Record-Route":
        if (name === "To") to++;
        else if (name === "From") from++;
        if (parseNameAddr(value) === undefined) throw new ParseError(`invalid ${name} header field`);
        break;
      case "Contact":
        contacts++;
        // Contact: "*" is only meaningful alone (20.10)
        if (value === "*") wildcardContact = true;
        else if (parseNameAddr(value) === undefined) throw new ParseError("invalid Contact header field");
        break;
      case "Call-ID":
        callId++;
        if (value.length === 0) throw new ParseError("empty Call-ID header field");
        break;
      case "CSeq": {
        cseq++;
        const parsed = parseCSeq(value);
        if (parsed === undefined) throw new ParseError("invalid CSeq header field");
        if (head.kind === "request" && parsed.method !== head.method) {
          throw new ParseError("CSeq method does not match the request method");
        }
        break;
      }
      case "Max-Forwards":
        maxForwards++;
        if (parseBoundedInteger(value, 255) === undefined)
          throw new ParseError("invalid Max-Forwards header field");
        break;
      case "Content-Length":
        contentLengths++;
        contentLength = value;
        break;
    }
  }
  if (vias === 0) throw new ParseError("missing Via header field");
  checkCount("To", to, 1);
  checkCount("From", from, 1);
  checkCount("Call-ID", callId, 1);
  checkCount("CSeq", cseq, 1);
  checkCount("Max-Forwards", maxForwards, 0);
  checkCount("Content-Length", contentLengths, 0);
  if (wildcardContact && contacts > 1) throw new ParseError("Contact: * among other Contact values");
  return contentLength;
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
