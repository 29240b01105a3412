/**
 * HTTP Digest client authentication as SIP uses it (RFC 3261 §22.4): reading WWW-Authenticate and
 * Proxy-Authenticate challenges and computing the Authorization / Proxy-Authorization value, with
 * MD5 (RFC 2617) and SHA-256 (RFC 7616, RFC 8760) and their -sess variants.
 */
import { createHash, randomBytes } from "node:crypto";
import { isToken, unquote } from "../message/header-values.js";

export type DigestAlgorithm = "MD5" | "MD5-sess" | "SHA-256" | "SHA-256-sess";

export type QualityOfProtection = "auth" | "auth-int";

export interface DigestChallenge {
  readonly realm: string;
  readonly nonce: string;
  readonly opaque: string | undefined;
  /** MD5 when the challenge names none (RFC 7616 §3.3). */
  readonly algorithm: DigestAlgorithm;
  /** The offered qop values we support, in the server's order; empty when it offered none (RFC 2069 mode). */
  readonly qop: readonly QualityOfProtection[];
  /** The previous request's nonce was stale, its credentials fine: retry without asking the user. */
  readonly stale: boolean;
}

export interface DigestAuthorizationInput {
  username: string;
  password: string;
  /** The request's method and Request-URI (RFC 3261 §22.4: the digest-uri is the Request-URI). */
  method: string;
  uri: string;
  /** Client nonce; 128 random bits in hex when not given. */
  cnonce?: string;
  /** How many requests have used this nonce, this one included: 1 for the first. */
  nonceCount: number;
  /** The message body, hashed only for qop=auth-int. */
  body?: Buffer;
}

const ALGORITHMS: readonly DigestAlgorithm[] = ["MD5", "MD5-sess", "SHA-256", "SHA-256-sess"];

/**
 * A Digest challenge from one WWW-Authenticate or Proxy-Authenticate value (RFC 7616 §3.3, RFC 3261
 * §25.1 "challenge"); undefined when it is not Digest, is malformed, lacks realm or nonce, or needs
 * an algorithm or qop we do not support.
 */
export function parseChallenge(headerValue: string): DigestChallenge | undefined {
  const params = parseAuthParams(headerValue);
  if (params === undefined) return undefined;
  const realm = params.get("realm");
  const nonce = params.get("nonce");
  if (realm === undefined || nonce === undefined) return undefined;
  const algorithmName = (params.get("algorithm") ?? "MD5").toLowerCase();
  const algorithm = ALGORITHMS.find((a) => a.toLowerCase() === algorithmName);
  if (algorithm === undefined) return undefined;
  const qopOptions = params.get("qop");
  const qop: QualityOfProtection[] = [];
  if (qopOptions !== undefined) {
    for (const option of qopOptions.split(",")) {
      const value = option.trim().toLowerCase();
      if (value === "auth" || value === "auth-int") qop.push(value);
    }
    if (qop.length === 0) return undefined;
  } else if (algorithm.endsWith("-sess")) {
    // A1 of a -sess algorithm contains the cnonce, which is only sent with a qop (RFC 2617 §3.2.2)
    return undefined;
  }
  return {
    realm,
    nonce,
    opaque: params.get("opaque"),
    algorithm,
    qop,
    stale: params.get("stale")?.toLowerCase() === "true",
  };
}

/**
 * The challenge to answer among the values of a response's WWW-Authenticate (or Proxy-Authenticate)
 * header fields. RFC 8760 §2.4 has the client take the topmost one it supports "unless a local
 * policy dictates otherwise"; our policy prefers SHA-256 to MD5 whatever the order, then the topmost.
 */
export function chooseChallenge(values: readonly string[]): DigestChallenge | undefined {
  let chosen: DigestChallenge | undefined;
  for (const value of values) {
    const challenge = parseChallenge(value);
    if (challenge !== undefined && (chosen === undefined || strength(challenge) > strength(chosen))) {
      chosen = challenge;
    }
  }
  return chosen;
}

function strength(challenge: DigestChallenge): number {
  return challenge.algorithm.startsWith("SHA-256") ? 1 : 0;
}

/**
 * The Authorization or Proxy-Authorization value answering `challenge` (RFC 7616 §3.4, RFC 2617
 * §3.2.2). qop=auth when offered, auth-int (hashing the body) when only that is; without qop the
 * RFC 2069 response H(H(A1):nonce:H(A2)).
 */
export function digestAuthorization(challenge: DigestChallenge, input: DigestAuthorizationInput): string {
  const { nonceCount } = input;
  if (!Number.isInteger(nonceCount) || nonceCount < 1 || nonceCount > 0xffffffff) {
    throw new RangeError(`nonce count out of range: ${nonceCount}`);
  }
  const hashName = challenge.algorithm.startsWith("SHA-256") ? "sha256" : "md5";
  const hash = (data: string | Buffer) => createHash(hashName).update(data).digest("hex");
  const qop: QualityOfProtection | undefined = challenge.qop.includes("auth") ? "auth" : challenge.qop[0];
  const cnonce = input.cnonce ?? randomBytes(16).toString("hex");
  const nc = nonceCount.toString(16).padStart(8, "0");

  // RFC 7616 §3.4.2: A1 = user:realm:password, for -sess H(user:realm:password):nonce:cnonce
  let ha1 = hash(`${input.username}:${challenge.realm}:${input.password}`);
  if (challenge.algorithm.endsWith("-sess")) ha1 = hash(`${ha1}:${challenge.nonce}:${cnonce}`);
  // RFC 7616 §3.4.3: A2 = method:uri, for auth-int method:uri:H(entity-body)
  const a2 =
    qop === "auth-int"
      ? `${input.method}:${input.uri}:${hash(input.body ?? Buffer.alloc(0))}`
      : `${input.method}:${input.uri}`;
  const response =
    qop === undefined
      ? hash(`${ha1}:${challenge.nonce}:${hash(a2)}`)
      : hash(`${ha1}:${challenge.nonce}:${nc}:${cnonce}:${qop}:${hash(a2)}`);

  const params = [
    `username=${quoted(input.username)}`,
    `realm=${quoted(challenge.realm)}`,
    `nonce=${quoted(challenge.nonce)}`,
    `uri=${quoted(input.uri)}`,
    `response="${response}"`,
    `algorithm=${challenge.algorithm}`,
  ];
  if (qop !== undefined) params.push(`qop=${qop}`, `nc=${nc}`, `cnonce=${quoted(cnonce)}`);
  if (challenge.opaque !== undefined) params.push(`opaque=${quoted(challenge.opaque)}`);
  return `Digest ${params.join(", ")}`;
}

/** A quoted-string, with `"` and `\` escaped as quoted-pairs (RFC 3261 §25.1). */
function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, "\\$&")}"`;
}

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0d || code === 0x0a;
}

function skipWhitespace(text: string, from: number): number {
  let i = from;
  while (i < text.length && isWhitespace(text.charCodeAt(i))) i++;
  return i;
}

/** Index of the first whitespace, "=", "," or quote from `from`: where a token ends. */
function tokenEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (isWhitespace(code) || code === 0x3d || code === 0x2c || code === 0x22) break;
    i++;
  }
  return i;
}

/**
 * "Digest" LWS auth-param *( COMMA auth-param ), auth-param = token EQUAL ( token / quoted-string )
 * (RFC 7235 §2.1, RFC 3261 §25.1). Names are lower-cased, values unquoted; empty list elements are
 * skipped (RFC 7230 §7). Undefined for another scheme, bad syntax, or a parameter given twice
 * (RFC 7616 §3.3 forbids it).
 */
function parseAuthParams(value: string): Map<string, string> | undefined {
  let i = skipWhitespace(value, 0);
  const schemeEnd = tokenEnd(value, i);
  if (value.slice(i, schemeEnd).toLowerCase() !== "digest") return undefined;
  i = skipWhitespace(value, schemeEnd);
  if (i === schemeEnd && i < value.length) return undefined;
  const params = new Map<string, string>();
  while (i < value.length) {
    if (value.charCodeAt(i) === 0x2c) {
      i = skipWhitespace(value, i + 1);
      continue;
    }
    const nameEnd = tokenEnd(value, i);
    const name = value.slice(i, nameEnd).toLowerCase();
    if (!isToken(name) || params.has(name)) return undefined;
    i = skipWhitespace(value, nameEnd);
    if (value.charCodeAt(i) !== 0x3d) return undefined;
    i = skipWhitespace(value, i + 1);
    let paramValue: string;
    if (value.charCodeAt(i) === 0x22) {
      const end = quotedStringEnd(value, i);
      if (end < 0) return undefined;
      paramValue = unquote(value.slice(i, end));
      i = end;
    } else {
      const end = tokenEnd(value, i);
      paramValue = value.slice(i, end);
      if (!isToken(paramValue)) return undefined;
      i = end;
    }
    params.set(name, paramValue);
    i = skipWhitespace(value, i);
    if (i < value.length && value.charCodeAt(i) !== 0x2c) return undefined;
  }
  return params;
}

/** Index just past the closing quote of the quoted-string starting at `start`, or -1. */
function quotedStringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x5c) i++;
    else if (code === 0x22) return i + 1;
  }
  return -1;
}
