/** SIP messages (RFC 3261 section 7) as plain data: start line, ordered header fields, body octets. */
import type { CallCause } from "../../../domain/call-record.js";
import {
  type CSeq,
  listsToken,
  type MediaType,
  type NameAddr,
  parseCSeq,
  parseMediaType,
  parseMinSe,
  parseNameAddr,
  parseRAck,
  parseRetryAfter,
  parseRSeq,
  parseSessionExpires,
  parseVia,
  type RAck,
  reasonCause,
  type SessionExpires,
  type Via,
} from "./header-values.js";

/** Compact header forms (RFC 3261 section 7.3.3, plus RFC 3265, 3515, 4028) mapped to their full names. */
const COMPACT_FORMS: Readonly<Record<string, string>> = {
  i: "Call-ID",
  m: "Contact",
  e: "Content-Encoding",
  l: "Content-Length",
  c: "Content-Type",
  f: "From",
  s: "Subject",
  k: "Supported",
  t: "To",
  v: "Via",
  o: "Event",
  r: "Refer-To",
  u: "Allow-Events",
  x: "Session-Expires",
};

/** Header names this layer knows, in the spelling RFC 3261 section 20 uses. */
export const KNOWN_NAMES: readonly string[] = [
  "Accept",
  "Accept-Encoding",
  "Accept-Language",
  "Alert-Info",
  "Allow",
  "Allow-Events",
  "Authentication-Info",
  "Authorization",
  "Call-ID",
  "Call-Info",
  "Contact",
  "Content-Disposition",
  "Content-Encoding",
  "Content-Language",
  "Content-Length",
  "Content-Type",
  "CSeq",
  "Date",
  "Error-Info",
  "Event",
  "Expires",
  "From",
  "In-Reply-To",
  "Max-Forwards",
  "Min-Expires",
  "Min-SE",
  "MIME-Version",
  "Organization",
  "Path",
  "Priority",
  "Proxy-Authenticate",
  "Proxy-Authorization",
  "Proxy-Require",
  "RAck",
  "Record-Route",
  "Refer-To",
  "Reply-To",
  "Require",
  "Retry-After",
  "Route",
  "RSeq",
  "Server",
  "Service-Route",
  "Session-Expires",
  "Subject",
  "Supported",
  "Timestamp",
  "To",
  "Unsupported",
  "User-Agent",
  "Via",
  "Warning",
  "WWW-Authenticate",
];

/**
 * Canonical name by spelling: the canonical spelling itself (the common case, found without lower-casing),
 * the lower-cased name, and both cases of each compact form.
 */
const CANONICAL_NAMES = new Map<string, string>();
for (const name of KNOWN_NAMES) {
  CANONICAL_NAMES.set(name, name);
  CANONICAL_NAMES.set(name.toLowerCase(), name);
}
for (const [compact, name] of Object.entries(COMPACT_FORMS)) {
  CANONICAL_NAMES.set(compact, name);
  CANONICAL_NAMES.set(compact.toUpperCase(), name);
}

/** The canonical name of a header field this layer knows (compact forms included), else undefined. */
export function knownName(name: string): string | undefined {
  return CANONICAL_NAMES.get(name) ?? CANONICAL_NAMES.get(name.toLowerCase());
}

/** Spellings in CANONICAL_NAMES by spellingSlot, each followed by its canonical name. */
const SPELLINGS_BY_SLOT: string[][] = [];

/** Where spellings of this length and first character are kept. */
function spellingSlot(length: number, firstCode: number): number {
  return length * 128 + (firstCode & 0x7f);
}

for (const [spelling, name] of CANONICAL_NAMES) {
  const slot = spellingSlot(spelling.length, spelling.charCodeAt(0));
  const candidates = SPELLINGS_BY_SLOT[slot] ?? [];
  candidates.push(spelling, name);
  SPELLINGS_BY_SLOT[slot] = candidates;
}

/**
 * The canonical name when `text.slice(start, end)` is spelled as CANONICAL_NAMES has it (canonical,
 * lower-case or compact: the common cases), compared in place so that no string is created or hashed.
 * Undefined otherwise, including for known names in other cases, which need knownName.
 */
export function spelledKnownName(text: string, start: number, end: number): string | undefined {
  const candidates = SPELLINGS_BY_SLOT[spellingSlot(end - start, text.charCodeAt(start))];
  if (candidates === undefined) return undefined;
  const length = end - start;
  for (let c = 0; c < candidates.length; c += 2) {
    const spelling = candidates[c] as string;
    let i = 0;
    while (i < length && text.charCodeAt(start + i) === spelling.charCodeAt(i)) i++;
    if (i === length) return candidates[c + 1];
  }
  return undefined;
}

/**
 * What names compare by: the canonical spelling of a known name, else the lower-cased name. The two
 * cannot collide, as every canonical spelling starts with a capital letter.
 */
function headerKey(name: string): string {
  return knownName(name) ?? name.toLowerCase();
}

export type HeaderField = readonly [name: string, value: string];

/** What the grammars of the header fields with typed accessors yield (Min-SE and RSeq: a number). */
export type FieldValue = Via | NameAddr | CSeq | SessionExpires | RAck | MediaType | number;

/** Set by SipHeaders' static block: see appendParsedField. */
let appendField: (
  headers: SipHeaders,
  name: string,
  key: string,
  value: string,
  parsed: FieldValue | undefined,
) => void;

/**
 * For the parser, which has already looked the name up and checked the value: `headers.append(name,
 * value)` where `name` is what append would store (the canonical name, else the name as received),
 * `key` its headerKey, and `parsed` what the field's grammar (see SipHeaders) yielded for `value`.
 */
export function appendParsedField(
  headers: SipHeaders,
  name: string,
  key: string,
  value: string,
  parsed: FieldValue | undefined,
): void {
  appendField(headers, name, key, value, parsed);
}

/**
 * Header fields in message order (RFC 3261 section 7.3.1: the relative order of same-named fields is
 * significant). A list-valued field such as Via holds one entry per value. Names compare case-insensitively.
 *
 * The fields SIP itself reads have typed accessors (via, from, to, contact, cseq, callId, and the
 * extensions': sessionExpires, minSe, rseq, rack, contentType, retryAfter; option tags and
 * methods by requires, supports, allows; reasonCause of every Reason field), each read
 * with the one grammar of header-values.ts for that field: parsed on first use and kept, or kept from
 * the parser, which checks received values with the same grammars. Fields are only ever appended, so
 * the first field of a name, and what was parsed from it, never changes.
 */
export class SipHeaders {
  /** The name of each field: the canonical name of a known field, else the name as given. */
  readonly #names: string[] = [];
  readonly #values: string[] = [];
  /** headerKey of each field. */
  readonly #keys: string[] = [];
  /** What the grammar of a field yielded, by the field's index: null when it is malformed, unset until read. */
  readonly #parsed: (FieldValue | null)[] = [];

  static {
    appendField = (headers, name, key, value, parsed) => {
      if (parsed !== undefined) headers.#parsed[headers.#names.length] = parsed;
      headers.#names.push(name);
      headers.#values.push(value);
      headers.#keys.push(key);
    };
  }

  constructor(fields?: Iterable<HeaderField>) {
    if (fields !== undefined) for (const [name, value] of fields) this.append(name, value);
  }

  append(name: string, value: string): void {
    const known = knownName(name);
    this.#names.push(known ?? name);
    this.#values.push(value);
    this.#keys.push(known ?? name.toLowerCase());
  }

  /** The first value of the named field, or undefined. */
  get(name: string): string | undefined {
    const index = this.#keys.indexOf(headerKey(name));
    return index < 0 ? undefined : this.#values[index];
  }

  /** Every value of the named field, in order. */
  getAll(name: string): string[] {
    const key = headerKey(name);
    const values: string[] = [];
    for (let i = 0; i < this.#keys.length; i++) {
      if (this.#keys[i] === key) values.push(this.#values[i] as string);
    }
    return values;
  }

  has(name: string): boolean {
    return this.#keys.includes(headerKey(name));
  }

  /** How many fields there are (one per value of a list-valued field). */
  get size(): number {
    return this.#names.length;
  }

  /** The name of the field at `index` in message order, as iteration gives it. */
  nameAt(index: number): string | undefined {
    return this.#names[index];
  }

  /** The value of the field at `index` in message order. */
  valueAt(index: number): string | undefined {
    return this.#values[index];
  }

  /**
   * A copy with the first field of the name given the value (put first when there is none); the other
   * fields keep what was parsed from them.
   */
  withFirst(name: string, value: string): SipHeaders {
    const copy = new SipHeaders();
    const replaced = this.#keys.indexOf(headerKey(name));
    if (replaced < 0) copy.append(name, value);
    const offset = copy.#names.length;
    for (let i = 0; i < this.#names.length; i++) {
      copy.#names.push(this.#names[i] as string);
      copy.#values.push(i === replaced ? value : (this.#values[i] as string));
      copy.#keys.push(this.#keys[i] as string);
      const parsed = this.#parsed[i];
      if (parsed !== undefined && i !== replaced) copy.#parsed[i + offset] = parsed;
    }
    return copy;
  }

  /** The top Via: the hop a response goes back to (sections 8.2.6.2, 18.2.2). */
  get via(): Via | undefined {
    return this.#first("Via", parseVia);
  }

  get from(): NameAddr | undefined {
    return this.#first("From", parseNameAddr);
  }

  get to(): NameAddr | undefined {
    return this.#first("To", parseNameAddr);
  }

  /** The first Contact: the remote target of a dialog (section 12.1); undefined for "*". */
  get contact(): NameAddr | undefined {
    return this.#first("Contact", parseNameAddr);
  }

  get cseq(): CSeq | undefined {
    return this.#first("CSeq", parseCSeq);
  }

  get callId(): string | undefined {
    return this.get("Call-ID");
  }

  /** The first Record-Route (section 20.30); a dialog's route set takes them all. */
  get recordRoute(): NameAddr | undefined {
    return this.#first("Record-Route", parseNameAddr);
  }

  /** The first Route (section 20.34). */
  get route(): NameAddr | undefined {
    return this.#first("Route", parseNameAddr);
  }

  /** RFC 4028 section 4: the session interval and who refreshes. */
  get sessionExpires(): SessionExpires | undefined {
    return this.#first("Session-Expires", parseSessionExpires);
  }

  /** RFC 4028 section 5: the smallest session interval the sender takes, in seconds. */
  get minSe(): number | undefined {
    return this.#first("Min-SE", parseMinSe);
  }

  /** RFC 3262 section 7.1: the sequence number of a reliable provisional response. */
  get rseq(): number | undefined {
    return this.#first("RSeq", parseRSeq);
  }

  /** RFC 3262 section 7.2: the reliable provisional response a PRACK acknowledges. */
  get rack(): RAck | undefined {
    return this.#first("RAck", parseRAck);
  }

  /** Section 20.33: the seconds after which the sender may be tried again. */
  get retryAfter(): number | undefined {
    return this.#first("Retry-After", parseRetryAfter);
  }

  /** RFC 3326: why the request was sent or the response given, Q.850's cause before SIP's; null without one. */
  get reasonCause(): CallCause | null {
    return reasonCause(this.getAll("Reason"));
  }

  /** Section 20.15: the body's media type. */
  get contentType(): MediaType | undefined {
    return this.#first("Content-Type", parseMediaType);
  }

  /** Whether Require lists the option tag (section 20.32), in any case. */
  requires(option: string): boolean {
    return listsToken(this.getAll("Require"), option);
  }

  /** Whether Supported lists the option tag (section 20.37), in any case. */
  supports(option: string): boolean {
    return listsToken(this.getAll("Supported"), option);
  }

  /** Whether Allow lists the method (section 20.5), in any case. */
  allows(method: string): boolean {
    return listsToken(this.getAll("Allow"), method);
  }

  /** What `grammar` yields for the first field with that key, parsed once; undefined when absent or malformed. */
  #first<T extends FieldValue>(key: string, grammar: (value: string) => T | undefined): T | undefined {
    const index = this.#keys.indexOf(key);
    if (index < 0) return undefined;
    let parsed = this.#parsed[index];
    if (parsed === undefined) {
      parsed = grammar(this.#values[index] as string) ?? null;
      this.#parsed[index] = parsed;
    }
    // the parser keeps, for a field of this key, only what this same grammar yielded
    return (parsed ?? undefined) as T | undefined;
  }

  *[Symbol.iterator](): IterableIterator<HeaderField> {
    for (let i = 0; i < this.#names.length; i++) yield [this.#names[i] as string, this.#values[i] as string];
  }
}

/** RFC 3261 section 7.1. */
export interface SipRequest {
  readonly kind: "request";
  readonly method: string;
  /** The Request-URI exactly as received (any absoluteURI, RFC 3261 section 25.1). */
  readonly uri: string;
  readonly version: string;
  readonly headers: SipHeaders;
  readonly body: Buffer;
}

/** RFC 3261 section 7.2. */
export interface SipResponse {
  readonly kind: "response";
  readonly status: number;
  readonly reason: string;
  readonly version: string;
  readonly headers: SipHeaders;
  readonly body: Buffer;
}

export type SipMessage = SipRequest | SipResponse;

export const SIP_VERSION = "SIP/2.0";
