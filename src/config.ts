/**
 * Every setting of the service: one table of environment variables (name, what it accepts, default,
 * meaning), read through zod, and the Config the rest of the service sees, shaped from it. The
 * README's table is made from this one (`npm run docs:config`); a test keeps the two the same.
 * It is long because it is that table: 77 variables, each with its meaning as the README shows it.
 */
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import os from "node:os";
import path from "node:path";
import { closestMatch } from "leven";
import { z } from "zod";
import { normalizeNanpNumber } from "./domain/phone.js";
import {
  DEFAULT_SRTP_SUITES,
  SRTP_POLICIES,
  SRTP_SUITES,
  type SrtpSuite,
} from "./telephony/media/rtp/srtp-suites.js";
import {
  type AudioCodec,
  audioCodecNamed,
  WIDEBAND_AUDIO_CODECS,
} from "./telephony/sdp/session-description.js";
import { readTrunkUri, type Trunk, type TrunkUri, trunkOf } from "./telephony/trunk.js";
import { parseTrunkProfiles, readCallerId, TrunkProfileError } from "./trunk-profiles.js";

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A variable's row in the README: its default (in words where it is not a value) and meaning. */
export interface VariableRow {
  readonly default: string;
  readonly meaning: string;
}

/** The variables' rows, by their schemas (zod's registry: metadata kept beside the schema). */
const ROWS = z.registry<VariableRow>();

/**
 * One variable: `schema` reads its text. Empty is unset (`NAME=` in a unit file clears a setting).
 * An unset variable stands for `fallback` (a text read like any value, shown as the default), or is
 * undefined, and `unset` says in words what that means.
 */
function variable<T extends z.ZodType<unknown, string>>(
  schema: T,
  row: { fallback: string; meaning: string },
): z.ZodPipe<z.ZodTransform, z.ZodPrefault<T>>;
function variable<T extends z.ZodType<unknown, string>>(
  schema: T,
  row: { unset: string; meaning: string },
): z.ZodPipe<z.ZodTransform, z.ZodOptional<T>>;
function variable<T extends z.ZodType<unknown, string>>(
  schema: T,
  row: { fallback?: string; unset?: string; meaning: string },
): z.ZodType {
  const read = z.preprocess(
    (text) => (text === "" ? undefined : text),
    row.fallback === undefined ? schema.optional() : schema.prefault(row.fallback as z.input<T>),
  );
  ROWS.add(read, {
    default: row.fallback === undefined ? (row.unset ?? "unset") : `\`${row.fallback}\``,
    meaning: row.meaning,
  });
  return read;
}

/** `must be <what>, got "<text>"`: what a refused value is told. */
const refusal =
  (what: string) =>
  (issue: { input?: unknown }): string =>
    `must be ${what}, got "${String(issue.input)}"`;

/** A text `test` accepts, as it is. */
const accepted = (what: string, test: (text: string) => boolean) =>
  z.string().refine(test, { error: refusal(what) });

/** `a, b or c` */
const listed = (choices: readonly string[]): string =>
  `${choices.slice(0, -1).join(", ")} or ${choices.at(-1) as string}`;

const oneOf = <const T extends readonly [string, ...string[]]>(choices: T) =>
  z.enum(choices, { error: refusal(listed(choices)) });

const port = accepted(
  "a port number from 0 to 65535",
  (text) => /^\d+$/.test(text) && Number(text) <= 65535,
).transform(Number);
const atLeastOne = accepted(
  "a whole number of at least 1",
  (text) => /^\d+$/.test(text) && Number(text) >= 1,
).transform(Number);
const threads = accepted(
  "a whole number from 0 to 256",
  (text) => /^\d+$/.test(text) && Number(text) <= 256,
).transform(Number);
const yesNo = z.stringbool({
  truthy: ["true"],
  falsy: ["false"],
  case: "sensitive",
  error: refusal("true or false"),
});
/** Seconds, fractions allowed (`0.5`), 0 included. */
const seconds = accepted("a number of seconds such as 30 or 0.5 (0: off)", (text) =>
  /^\d+(\.\d+)?$/.test(text),
).transform(Number);
const file = z.string().transform((text) => path.resolve(text));
const text = z.string();

/** A value the reader of a composite variable refuses, with what it accepts. */
class Refused extends Error {}

/** A variable `read` reads: it returns the value or throws Refused. */
function readBy<T>(read: (text: string) => T) {
  return z.string().transform((text, context): T => {
    try {
      return read(text);
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      context.issues.push({ code: "custom", message: error.message, input: text });
      return z.NEVER;
    }
  });
}

/** Comma-separated entries, each trimmed and read by `read`; blank is none. */
const commaList = <T>(read: (entry: string) => T) =>
  readBy((text) => (text.trim() === "" ? [] : text.split(",").map((entry) => read(entry.trim()))));

function sipUri(text: string): TrunkUri {
  const read = readTrunkUri(text);
  if (typeof read === "string") throw new Refused(read);
  return read;
}

/**
 * BRIDGELINE_SIP_ROUTES: `prefix=uri;prefix=uri`, e.g. `+1604555=sip:127.0.0.1:5071;+1778=sip:b.example`
 * (a URI's own `;transport=` stays part of it), longest prefix first.
 */
function readRoutes(text: string): { prefix: string; uri: TrunkUri }[] {
  return text
    .split(/[;\n]+(?=\s*\+?\d+\s*=)/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const match = /^(\+?\d+)\s*=\s*(sips?:\S+)$/i.exec(entry);
      if (match === null)
        throw new Refused(
          `each entry must be <number prefix>=<SIP URI>, such as +1604555=sip:127.0.0.1:5071; got "${entry}"`,
        );
      return { prefix: match[1] as string, uri: sipUri(match[2] as string) };
    })
    .sort((a, b) => b.prefix.length - a.prefix.length);
}

function readPortRange(text: string): { min: number; max: number } {
  const match = /^(\d+)-(\d+)$/.exec(text.trim());
  const min = Number(match?.[1]);
  const max = Number(match?.[2]);
  if (match === null || min < 1024 || max > 65535 || max - min < 1)
    throw new Refused(
      `must be a range such as 10000-20000 within 1024-65535 holding at least one even/odd pair, got "${text}"`,
    );
  return { min, max };
}

/** An E.164 prefix such as `+1876` (spaces, dots, dashes and brackets dropped). */
function readDeniedPrefix(entry: string): string {
  const prefix = entry.replace(/[\s().-]/g, "");
  if (!/^\+1\d{1,10}$/.test(prefix))
    throw new Refused(`each entry must be the start of a +1 number such as +1876; got "${entry}"`);
  return prefix;
}

/** A North American number, kept as +1NPANXXXXXX. */
function readAccessNumber(entry: string): string {
  const number = normalizeNanpNumber(entry);
  if (number === null)
    throw new Refused(`each entry must be a North American number such as +16045550199; got "${entry}"`);
  return `+1${number.subscriberNumber}`;
}

/** An IPv4 `address` or `address:port` (DNS queries go over UDP/IPv4). */
function readDnsServer(server: string): string {
  const [address = "", port = "53", extra] = server.split(":");
  if (
    isIP(address) !== 4 ||
    extra !== undefined ||
    !/^\d+$/.test(port) ||
    Number(port) < 1 ||
    Number(port) > 65535
  )
    throw new Refused(`"${server}" is not an IPv4 address or address:port`);
  return server;
}

/** An IPv4/IPv6 address or CIDR such as `203.0.113.0/24`. */
function readTrustedSource(entry: string): string {
  const [address = "", prefix, extra] = entry.split("/");
  const family = isIP(address);
  const maxPrefix = family === 6 ? 128 : 32;
  if (
    family === 0 ||
    extra !== undefined ||
    (prefix !== undefined && (!/^\d+$/.test(prefix) || Number(prefix) > maxPrefix))
  )
    throw new Refused(`must be IP addresses or CIDRs such as 203.0.113.0/24, got "${entry}"`);
  return entry;
}

/** The SRTP suites, preferred first. */
function readSrtpSuites(text: string): SrtpSuite[] {
  const suites = text.split(",").map((entry) => {
    const name = entry.trim();
    const suite = SRTP_SUITES.find((known) => known === name);
    if (suite === undefined) throw new Refused(`"${name}" is not one of ${SRTP_SUITES.join(", ")}`);
    return suite;
  });
  if (new Set(suites).size !== suites.length) throw new Refused(`names a suite twice: "${text}"`);
  return suites;
}

/** Audio codecs, preferred first, named as in an rtpmap (any case). */
function readCodecs(text: string): AudioCodec[] {
  const codecs = text.split(",").map((entry) => {
    const name = entry.trim();
    const codec = audioCodecNamed(name);
    if (codec === undefined) throw new Refused(`"${name}" is not one of ${WIDEBAND_AUDIO_CODECS.join(", ")}`);
    return codec;
  });
  if (new Set(codecs).size !== codecs.length) throw new Refused(`names a codec twice: "${text}"`);
  return codecs;
}

/**
 * The web listener's base URL as people reach it: an http(s) origin, kept without a trailing slash
 * so that links are `${url}/join?...`.
 */
function readPublicUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    url = new URL("invalid:");
  }
  if (
    (url.protocol !== "https:" && url.protocol !== "http:") ||
    url.pathname !== "/" ||
    url.search !== "" ||
    url.hash !== "" ||
    url.username !== "" ||
    url.password !== ""
  )
    throw new Refused(
      `must be an https:// (or http://) URL with no path, such as https://conference.example.com, got "${text}"`,
    );
  return url.origin;
}

/** `https://<address>[:port]`: the web listener's URL when BRIDGELINE_PUBLIC_URL is unset. */
function fallbackPublicUrl(address: string, httpsPort: number): string {
  const host = isIP(address) === 6 ? `[${address}]` : address;
  const url = `https://${host}${httpsPort === 443 ? "" : `:${httpsPort}`}`;
  try {
    return readPublicUrl(url);
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    throw new ConfigError(
      "BRIDGELINE_PUBLIC_URL",
      `is unset, and ${url} made in its place is not a URL: set it`,
    );
  }
}

/**
 * A STUN or TURN server URI as browsers take it in RTCIceServer.urls (RFC 7064, RFC 7065):
 * `stun:host[:port]`, `turn:host[:port][?transport=udp|tcp]`, `turns:host[:port][?transport=tcp]`.
 */
function readIceServerUrl(entry: string): string {
  const match =
    /^(stun|turns?):(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?(?:\?transport=(udp|tcp))?$/.exec(
      entry,
    );
  const [, scheme, host = "", port, transport] = match ?? [];
  if (
    match === null ||
    (host.startsWith("[") && isIP(host.slice(1, -1)) !== 6) ||
    (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) ||
    (transport !== undefined && scheme === "stun")
  )
    throw new Refused(
      `each entry must be a stun:, turn: or turns: URI such as turn:turn.example.com:3478?transport=udp; got "${entry}"`,
    );
  return entry;
}

const MAILBOX = /^[^\s@<>",;]+@[^\s@<>",;]+$/;

/** A mailbox, bare or with a display name: `a@b.example` or `Name <a@b.example>`. */
function readMailbox(text: string): string {
  const mailbox = text.trim();
  if (!MAILBOX.test(addressOf(mailbox)) || /[\r\n]/.test(mailbox))
    throw new Refused(
      `must be an e-mail address such as "Bridgeline <conferences@example.com>", got "${mailbox}"`,
    );
  return mailbox;
}

const addressOf = (mailbox: string): string => /<([^<>]*)>$/.exec(mailbox)?.[1] ?? mailbox;

/** The caller ID: a number, kept as +1NPANXXXXXX, or a user name. */
function readCallerIdSetting(text: string): string {
  const callerId = readCallerId(text);
  if (callerId === undefined) throw new Refused(`must be a number such as +16045550100, got "${text}"`);
  return callerId;
}

/**
 * The table: every variable, in the README's order. Where one says "with X", the two are read
 * together below.
 */
const VARIABLES = {
  BRIDGELINE_DATA_DIR: variable(file, {
    fallback: "./data",
    meaning: "SQLite database, generated TLS certificate",
  }),
  BRIDGELINE_DATABASE_URL: variable(
    z.string().regex(/^postgres(ql)?:\/\/\S+$/, { error: "must be a postgres:// or postgresql:// URL" }),
    {
      unset: "unset",
      meaning:
        "`postgres://…` selects PostgreSQL (several instances on one database, see [docs/deployment.md](docs/deployment.md)); unset: SQLite in the data directory",
    },
  ),
  BRIDGELINE_DATABASE_WAIT_SECONDS: variable(atLeastOne, {
    fallback: "60",
    meaning:
      "How long start-up waits for an unreachable PostgreSQL (a log line per attempt) before it exits saying why",
  }),
  BRIDGELINE_DATABASE_TIMEOUT_SECONDS: variable(atLeastOne, {
    fallback: "5",
    meaning:
      "How long a PostgreSQL statement may run, and a connection be waited for, before the request is answered 503 with `Retry-After` (a silent database, a lock held); migrations are not bounded",
  }),
  BRIDGELINE_TRUSTED_PROXIES: variable(text, {
    unset: "unset",
    meaning: "Load-balancer addresses (comma-separated IPs/CIDRs) whose `X-Forwarded-For` names the client",
  }),
  BRIDGELINE_HOST: variable(text, { fallback: "0.0.0.0", meaning: "Address the listeners bind to" }),
  BRIDGELINE_HTTPS_PORT: variable(port, { fallback: "8443", meaning: "HTTPS listener (TLS 1.2 or newer)" }),
  BRIDGELINE_HTTP_PORT: variable(port, {
    unset: "unset",
    meaning: "Plain-HTTP listener, only when set (behind a TLS-terminating proxy)",
  }),
  BRIDGELINE_PUBLIC_URL: variable(readBy(readPublicUrl), {
    unset: "`https://<BRIDGELINE_PUBLIC_ADDRESS, else the hostname>:<BRIDGELINE_HTTPS_PORT>` (no `:443`)",
    meaning:
      "The base URL people reach the web listener at, e.g. `https://conference.example.com` (behind a proxy: the proxy's); the join links in notification e-mails are made from it ([docs/browser.md](docs/browser.md))",
  }),
  BRIDGELINE_METRICS_PORT: variable(port, {
    unset: "unset",
    meaning:
      "Prometheus metrics at `GET /metrics`, plain HTTP on this port of their own (keep it private); see [docs/operations.md](docs/operations.md#metrics)",
  }),
  BRIDGELINE_TLS_CERT: variable(file, {
    unset: "unset",
    meaning:
      "PEM certificate, with `BRIDGELINE_TLS_KEY` (both read again on SIGHUP, [docs/deployment.md](docs/deployment.md#running-under-systemd)); without them a self-signed pair is made on first start and kept in `data/tls/`",
  }),
  BRIDGELINE_TLS_KEY: variable(file, { unset: "unset", meaning: "The PEM key of `BRIDGELINE_TLS_CERT`" }),
  BRIDGELINE_LOG_LEVEL: variable(oneOf(LOG_LEVELS), {
    fallback: "info",
    meaning: `${listed(LOG_LEVELS.map((level) => `\`${level}\``))}; logs are JSON lines on stdout`,
  }),
  BRIDGELINE_FAILED_LOGIN_LIMIT: variable(atLeastOne, {
    fallback: "10",
    meaning: "Failed logins per client address per window before 429, counted over all instances together",
  }),
  BRIDGELINE_SIGNUP_LIMIT: variable(atLeastOne, {
    fallback: "20",
    meaning: "Sign-up attempts per client address per window before 429, counted over all instances together",
  }),
  BRIDGELINE_THROTTLE_WINDOW_SECONDS: variable(atLeastOne, {
    fallback: "900",
    meaning: "The throttling window",
  }),
  BRIDGELINE_MAX_CONNECTIONS: variable(atLeastOne, {
    fallback: "10000",
    meaning:
      "Open connections each HTTPS/HTTP listener takes (so also requests in flight); more are closed unanswered ([docs/limits.md](docs/limits.md#http-api)). Keep the open-files limit above it",
  }),
  BRIDGELINE_MAX_EVENT_STREAMS: variable(atLeastOne, {
    fallback: "5000",
    meaning: "Event streams (SSE) one instance serves in all; more get 503 (and 20 per user, 429)",
  }),
  BRIDGELINE_SIP_ADDRESS: variable(text, {
    fallback: "0.0.0.0",
    meaning: "Address the SIP (UDP and TCP) and RTP sockets bind to",
  }),
  BRIDGELINE_SIP_PORT: variable(port, { fallback: "5060", meaning: "SIP port, UDP and TCP" }),
  BRIDGELINE_SIP_TLS_PORT: variable(port, {
    unset: "the SIP port + 1 (`5061`)",
    meaning:
      "SIP over TLS listener ([docs/telephony.md](docs/telephony.md#sip-over-tls)); instances sharing a host need SIP ports at least 2 apart, or one of these each",
  }),
  BRIDGELINE_SIP_TLS_CERT: variable(file, {
    unset: "the HTTPS pair",
    meaning: "PEM file of the SIP TLS listener's own certificate, with `BRIDGELINE_SIP_TLS_KEY`",
  }),
  BRIDGELINE_SIP_TLS_KEY: variable(file, {
    unset: "the HTTPS pair",
    meaning: "PEM file of the key of `BRIDGELINE_SIP_TLS_CERT`",
  }),
  BRIDGELINE_SIP_TLS_CA: variable(file, {
    unset: "the system's CAs",
    meaning: "PEM file of the CAs that TLS trunks' certificates must chain to",
  }),
  BRIDGELINE_STIR_CA_FILE: variable(file, {
    unset: "unset (no verification)",
    meaning:
      "PEM bundle of the STI-CA root certificates: set, the STIR/SHAKEN Identity header of calls taken is verified (signing certificate fetched from its `x5u`, chain, ES256 signature, age, numbers) and each call says passed, failed or none ([docs/telephony.md](docs/telephony.md#stirshaken)); unset, every call's verification is none, not configured",
  }),
  BRIDGELINE_SIP_TRUSTED: variable(commaList(readTrustedSource), {
    unset: "the trunk's and routes' addresses (anyone without a trunk)",
    meaning:
      "Addresses and CIDRs SIP requests may come from, comma-separated; others get 403, and their TCP/TLS connections are closed as accepted ([docs/telephony.md](docs/telephony.md#who-may-send-requests)). The other instances on the same database are trusted as well",
  }),
  BRIDGELINE_SIP_UNTRUSTED: variable(oneOf(["refuse", "drop"]), {
    fallback: "refuse",
    meaning: "`drop` leaves requests from untrusted sources unanswered instead of 403",
  }),
  BRIDGELINE_SIP_REQUEST_RATE: variable(atLeastOne, {
    fallback: "50",
    meaning:
      "SIP requests per second one source address may send (a burst of twice that): past it `503` with `Retry-After`, then dropped ([docs/limits.md](docs/limits.md#sip-and-rtp))",
  }),
  BRIDGELINE_SIP_MAX_CALLS: variable(atLeastOne, {
    fallback: "2000",
    meaning: "Calls in progress (placed and taken) past which an INVITE is refused `503`",
  }),
  BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE: variable(atLeastOne, {
    fallback: "16",
    meaning:
      "SIP TCP and TLS connections one source (an IPv4 address, an IPv6 /64) may hold; one more is closed at once ([docs/limits.md](docs/limits.md#sip-and-rtp)). At most `BRIDGELINE_SIP_MAX_CONNECTIONS`",
  }),
  BRIDGELINE_SIP_MAX_CONNECTIONS: variable(atLeastOne, {
    fallback: "2048",
    meaning: "SIP TCP and TLS connections open in all; one more is closed at once",
  }),
  BRIDGELINE_SIP_IDLE_SECONDS: variable(atLeastOne, {
    fallback: "60",
    meaning:
      "A SIP connection accepted that carries no message this long is closed, unless a call came over it",
  }),
  BRIDGELINE_SIP_TLS_HANDSHAKE_SECONDS: variable(atLeastOne, {
    fallback: "10",
    meaning: "A SIP over TLS handshake not done this long is abandoned (logged at warning with the source)",
  }),
  BRIDGELINE_SRTP: variable(oneOf(SRTP_POLICIES), {
    fallback: "optional",
    meaning:
      "SRTP for placed calls (a trunk's `;srtp=` overrides): `off`, `optional` or `required` ([docs/telephony.md](docs/telephony.md#srtp))",
  }),
  BRIDGELINE_DIAL_IN_SRTP: variable(oneOf(SRTP_POLICIES), {
    fallback: "optional",
    meaning: "SRTP for calls taken: `off`, `optional` or `required`",
  }),
  BRIDGELINE_SRTP_KEYS_OVER_PLAIN_SIP: variable(yesNo, {
    fallback: "false",
    meaning: "Let SRTP keys travel in SIP that is not over TLS",
  }),
  BRIDGELINE_SRTP_SUITES: variable(readBy(readSrtpSuites), {
    fallback: DEFAULT_SRTP_SUITES.join(","),
    meaning:
      "The SRTP suites offered and accepted, preferred first; also `AES_256_CM_HMAC_SHA1_80`, `AES_256_CM_HMAC_SHA1_32` (RFC 6188), `AEAD_AES_128_GCM`, `AEAD_AES_256_GCM` (RFC 7714)",
  }),
  BRIDGELINE_CODECS: variable(readBy(readCodecs), {
    fallback: WIDEBAND_AUDIO_CODECS.join(","),
    meaning:
      "The audio codecs offered and accepted, preferred first, by calls taken and by calls placed through a trunk whose profile names no `codecs` ([docs/telephony.md](docs/telephony.md#codecs))",
  }),
  BRIDGELINE_PUBLIC_ADDRESS: variable(text, {
    unset: "unset",
    meaning:
      "Address written into Via, Contact and SDP when the service is behind NAT; unset: the bind address",
  }),
  BRIDGELINE_BROWSER_JOIN: variable(yesNo, {
    fallback: "true",
    meaning:
      "`true`: callers may join from a browser at `/join` ([docs/browser.md](docs/browser.md)), so a started conference waits for callers as it does with access numbers (`BRIDGELINE_EMPTY_GRACE_SECONDS`, `BRIDGELINE_NO_SHOW_MINUTES`); `false`: no join page, and without access numbers a conference ends once nobody is on a call",
  }),
  BRIDGELINE_TURN_URLS: variable(commaList(readIceServerUrl), {
    unset: "unset (none)",
    meaning:
      "STUN/TURN servers given to browser participants as ICE servers, comma-separated `stun:`, `turn:` or `turns:` URIs, e.g. `turn:turn.example.com:3478?transport=udp,turns:turn.example.com:5349?transport=tcp` ([docs/browser.md](docs/browser.md#nat-and-turn), [deploy/coturn](deploy/coturn/README.md)); `turn:` and `turns:` need `BRIDGELINE_TURN_SECRET`",
  }),
  BRIDGELINE_TURN_SECRET: variable(text, {
    unset: "unset",
    meaning:
      "The TURN server's shared secret (coturn's `static-auth-secret`): each browser gets a user name `<expiry>:bridgeline` and its HMAC-SHA1 under this secret as the password (the TURN REST API scheme). Unset: the URLs are given without credentials, which only `stun:` servers take, so `turn:` URLs are refused at start",
  }),
  // An hour: the page asks for the servers when it joins, and the TURN server checks a user name's
  // expiry when the allocation is made, not while it is refreshed; a credential read off one page
  // lends the relay to others for at most that long.
  BRIDGELINE_TURN_TTL_SECONDS: variable(atLeastOne, {
    fallback: "3600",
    meaning:
      "How long a browser's TURN credentials are good for making an allocation (an allocation made in time lasts the whole call)",
  }),
  BRIDGELINE_SIP_TRUNKS_FILE: variable(file, {
    unset: "unset",
    meaning:
      "Trunk profiles in YAML: per-carrier credentials, number format, caller ID, extra headers, codecs, DTMF, registration, outbound proxy, and the routes ([docs/telephony.md](docs/telephony.md#trunk-profiles)); replaces the trunk variables (`BRIDGELINE_SIP_TRUNK`, `_TRUNK_USER`, `_TRUNK_PASSWORD`, `_REGISTRAR`, `_REGISTER_EXPIRES`, `_ROUTES`)",
  }),
  BRIDGELINE_SIP_TRUNK: variable(readBy(sipUri), {
    unset: "unset",
    meaning:
      "The SIP trunk calls go out through, e.g. `sip:127.0.0.1:5070` (`;transport=tcp` for TCP; `sips:` or `;transport=tls` for TLS, verified); unset: calls cannot be placed (a warning at start)",
  }),
  BRIDGELINE_SIP_TRUNK_USER: variable(text, {
    unset: "unset",
    meaning:
      "Digest user name for the trunk's 401/407 challenges (MD5 or SHA-256), with `BRIDGELINE_SIP_TRUNK_PASSWORD`; routes take them too",
  }),
  BRIDGELINE_SIP_TRUNK_PASSWORD: variable(text, {
    unset: "unset",
    meaning: "The password of `BRIDGELINE_SIP_TRUNK_USER`",
  }),
  BRIDGELINE_CALLER_ID: variable(readBy(readCallerIdSetting), {
    fallback: "bridgeline",
    meaning: "The From user part of placed calls, e.g. `+16045550100`",
  }),
  BRIDGELINE_SIP_ROUTES: variable(readBy(readRoutes), {
    unset: "unset",
    meaning:
      "Dial plan: `prefix=uri;prefix=uri`, e.g. `+1604555=sip:127.0.0.1:5071;+1778=sip:carrier-b.example:5060`; the longest prefix wins, else the trunk",
  }),
  BRIDGELINE_RTP_PORTS: variable(readBy(readPortRange), {
    fallback: "10000-20000",
    meaning: "RTP/RTCP port range, two ports per call",
  }),
  BRIDGELINE_RING_TIMEOUT_SECONDS: variable(atLeastOne, {
    fallback: "45",
    meaning: "An unanswered call is CANCELled after this",
  }),
  BRIDGELINE_SIP_REGISTRAR: variable(readBy(sipUri), {
    unset: "unset",
    meaning:
      "REGISTER as `BRIDGELINE_SIP_TRUNK_USER` with this registrar (a SIP URI), for a trunk that reaches us by registration ([docs/telephony.md](docs/telephony.md#registration-rfc-3261-section-10))",
  }),
  BRIDGELINE_SIP_REGISTER_EXPIRES: variable(atLeastOne, {
    fallback: "3600",
    meaning: "The registration lifetime asked for, in seconds",
  }),
  BRIDGELINE_DNS_SERVERS: variable(commaList(readDnsServer), {
    unset: "the system's",
    meaning:
      "DNS servers for finding trunk servers (NAPTR, SRV; [docs/telephony.md](docs/telephony.md#trunk-servers-in-dns-rfc-3263)), `address` or `address:port`, comma-separated",
  }),
  BRIDGELINE_SIP_SERVER_TIMEOUT_SECONDS: variable(atLeastOne, {
    fallback: "4",
    meaning: "A trunk server silent this long after an INVITE is skipped for the next one DNS names",
  }),
  BRIDGELINE_TRUNK_PROBE_SECONDS: variable(seconds, {
    fallback: "0",
    meaning:
      "An OPTIONS to every trunk server this often (30 is a good value), each given 5 s (at most this), a server up after 1 answer and down after 2 failures, and tried last while down; a trunk profile's `options:` sets its own. `0`: only trunks whose profile sets an interval are probed ([docs/telephony.md](docs/telephony.md#trunk-health))",
  }),
  BRIDGELINE_READY_TRUNKS: variable(oneOf(["any", "all"]), {
    fallback: "any",
    meaning:
      "What `/health/ready` asks of the probed trunks: `any`, 503 only when every trunk is down (no route can carry a call; one down is named, 200); `all`, 503 when any trunk is down",
  }),
  BRIDGELINE_MEDIA_TIMEOUT_SECONDS: variable(atLeastOne, {
    fallback: "30",
    meaning: "An answered call with no RTP for this long is hung up",
  }),
  BRIDGELINE_MEDIA_THREADS: variable(threads, {
    unset: "the number of cores",
    meaning:
      "Worker threads that carry the calls' media (RTP, mixing, prompts, recording), each room on one; `0` keeps the media on the main thread ([docs/telephony.md](docs/telephony.md#media-threads))",
  }),
  BRIDGELINE_MIX_TALKERS: variable(atLeastOne, {
    fallback: "3",
    meaning:
      "The loudest talkers a room mixes at once, each hearing the others; everyone else hears one shared mix of them, encoded once per codec ([docs/telephony.md](docs/telephony.md#codecs))",
  }),
  BRIDGELINE_ACCESS_NUMBERS: variable(commaList(readAccessNumber), {
    unset: "unset",
    meaning:
      "Numbers callers dial in on, comma-separated, e.g. `+16045550199`; calls to other numbers get 404 ([docs/keypad.md](docs/keypad.md))",
  }),
  BRIDGELINE_EMPTY_GRACE_SECONDS: variable(atLeastOne, {
    fallback: "120",
    meaning:
      "How long a conference callers can dial into stays open after the last person left ([docs/api.md](docs/api.md#states))",
  }),
  BRIDGELINE_NO_SHOW_MINUTES: variable(atLeastOne, {
    fallback: "60",
    meaning:
      "How long a started conference nobody has joined waits for its first caller (a PIN-only conference)",
  }),
  BRIDGELINE_MAX_PARTICIPANTS: variable(atLeastOne, {
    unset: "unset (no limit)",
    meaning:
      "Participants one instance takes on: it claims a due conference only while it has room for its attendees ([docs/deployment.md](docs/deployment.md))",
  }),
  BRIDGELINE_CONFERENCE_LEASE_SECONDS: variable(atLeastOne, {
    fallback: "3",
    meaning:
      "How long the instance running a conference may be silent (dead, paused, cut off from the database) before another instance takes the conference over and calls its attendees back; renewed every quarter of it ([docs/deployment.md](docs/deployment.md#when-an-instance-dies))",
  }),
  BRIDGELINE_TAKE_OVER_WITHIN_MINUTES: variable(atLeastOne, {
    fallback: "5",
    meaning:
      "A conference whose instance was last heard of longer ago than this (every instance was down meanwhile) is ended when found, not taken over: nobody is called back that late",
  }),
  BRIDGELINE_HAND_OVER_ON_STOP: variable(yesNo, {
    unset: "unset: `true` on PostgreSQL, `false` on SQLite",
    meaning:
      "`true`: an instance stopped with SIGTERM while another is alive hands its conferences over (the other calls their attendees back) instead of ending them",
  }),
  BRIDGELINE_DENIED_NUMBERS: variable(commaList(readDeniedPrefix), {
    unset: "unset",
    meaning:
      "Number prefixes attendees may not be called at, comma-separated, e.g. `+1876,+1809`, besides the fixed refusals (900, 976, N11, 555-1212); see [docs/api.md](docs/api.md#attendee)",
  }),
  // One full conference (250 attendees) at once; four an hour.
  BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER: variable(atLeastOne, {
    fallback: "250",
    meaning:
      "Calls one user's conferences may have in progress at once, over every instance (toll fraud); see [docs/limits.md](docs/limits.md#calls-placed-toll-fraud)",
  }),
  BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER: variable(atLeastOne, {
    fallback: "1000",
    meaning: "Calls one user's conferences may place in any hour, over every instance (toll fraud)",
  }),
  BRIDGELINE_WRONG_PIN_LIMIT: variable(atLeastOne, {
    fallback: "10",
    meaning:
      "Wrong PINs a caller (its number however written) may type within `BRIDGELINE_WRONG_PIN_WINDOW_MINUTES`, over any calls, before its calls are refused 403 ([docs/telephony.md](docs/telephony.md#who-may-send-requests))",
  }),
  BRIDGELINE_WRONG_PIN_WINDOW_MINUTES: variable(atLeastOne, {
    fallback: "15",
    meaning: "The window of `BRIDGELINE_WRONG_PIN_LIMIT`",
  }),
  BRIDGELINE_WRONG_PINS_PER_MINUTE: variable(atLeastOne, {
    fallback: "60",
    meaning:
      "Wrong PINs all callers together may type in a minute, over every instance, before new dial-in callers are refused 503 with `Retry-After` for the rest of that minute (a guesser rotating caller IDs)",
  }),
  BRIDGELINE_PIN_PROMPT_PLACES: variable(atLeastOne, {
    fallback: "100",
    meaning:
      "Callers at the PIN prompt at once, in all; past it, `503` with `Retry-After: 10` ([docs/limits.md](docs/limits.md#sip-and-rtp))",
  }),
  BRIDGELINE_PIN_PROMPT_PLACES_PER_SOURCE: variable(atLeastOne, {
    fallback: "10",
    meaning:
      "Callers at the PIN prompt at once from one source address that is not a configured trunk or edge; past it, `503` with `Retry-After: 10`",
  }),
  BRIDGELINE_INSTANCE_ID: variable(text, {
    unset: "`<hostname>:<data dir>`",
    meaning:
      "This instance's name as the runner of its conferences; keep it the same across restarts so that a restart takes over what the previous run left (and different on every instance)",
  }),
  BRIDGELINE_SMTP_URL: variable(
    z.string().regex(/^smtps?:\/\/[^\s/]+/, {
      error: "must be an smtp:// or smtps:// URL such as smtps://user:password@mail.example.com:465",
    }),
    {
      unset: "unset",
      meaning:
        "`smtp://user:password@host:587` or `smtps://…:465` for notification e-mails; unset: each message is written to `data/mail/*.eml` instead",
    },
  ),
  BRIDGELINE_MAIL_FROM: variable(readBy(readMailbox), {
    fallback: "Bridgeline <bridgeline@localhost>",
    meaning: "The From of notification e-mails",
  }),
  BRIDGELINE_SUPPORT_EMAIL: variable(readBy(readMailbox), {
    unset: "the From address",
    meaning: "Support e-mail address printed in every notification e-mail",
  }),
  BRIDGELINE_SUPPORT_PHONE: variable(
    z.string().transform((phone) => phone.trim() || undefined),
    { unset: "unset", meaning: "Support phone number printed in every notification e-mail" },
  ),
  BRIDGELINE_MAIL_RETRY_SECONDS: variable(atLeastOne, {
    fallback: "30",
    meaning:
      "Wait before retrying a message the mail server could not take; it doubles up to an hour, for up to three days",
  }),
  BRIDGELINE_WEBHOOK_ALLOW_PRIVATE: variable(yesNo, {
    fallback: "false",
    meaning:
      "`true` lets webhooks call private, loopback and link-local addresses (receivers on your own network); otherwise such URLs are refused, when created and at each delivery ([docs/api.md](docs/api.md#where-a-webhook-may-lead))",
  }),
  BRIDGELINE_WEBHOOK_TIMEOUT_SECONDS: variable(atLeastOne, {
    fallback: "15",
    meaning: "How long a webhook receiver has to answer an attempt",
  }),
  BRIDGELINE_WEBHOOK_RETRY_SECONDS: variable(atLeastOne, {
    fallback: "5",
    meaning:
      "The first wait before a failed webhook delivery is tried again; later waits are multiples of it (1 min, 5 min ... 8 h), for a day ([docs/operations.md](docs/operations.md#webhooks))",
  }),
};

type Variable = keyof typeof VARIABLES;
type Settings = z.output<z.ZodObject<typeof VARIABLES>>;

/** The variables with their rows, in the table's order (the README's). */
export function variableRows(): { name: string; row: VariableRow }[] {
  return Object.entries(VARIABLES).map(([name, schema]) => ({ name, row: ROWS.get(schema) as VariableRow }));
}

/** Two variables that are set together or not at all: the one missing is named. */
function pair(settings: Settings, first: Variable, second: Variable): void {
  if ((settings[first] === undefined) !== (settings[second] === undefined))
    throw new ConfigError(
      settings[first] === undefined ? first : second,
      `${first} and ${second} must be set together`,
    );
}

/** The ICE servers browsers are given: `turn:` and `turns:` servers ask for credentials, made from the secret. */
function browserTurn(settings: Settings): { urls: string[]; secret: string | null; ttlSeconds: number } {
  const urls = settings.BRIDGELINE_TURN_URLS ?? [];
  const secret = settings.BRIDGELINE_TURN_SECRET ?? null;
  const relays = urls.filter((url) => !url.startsWith("stun:"));
  if (secret === null && relays.length > 0)
    throw new ConfigError(
      "BRIDGELINE_TURN_URLS",
      `${relays.join(", ")} needs credentials: set BRIDGELINE_TURN_SECRET to the TURN server's static-auth-secret (see deploy/coturn), or give only stun: URLs`,
    );
  if (secret !== null && relays.length === 0)
    throw new ConfigError(
      "BRIDGELINE_TURN_SECRET",
      "is set but BRIDGELINE_TURN_URLS names no turn: or turns: server to use it with",
    );
  return { urls, secret, ttlSeconds: settings.BRIDGELINE_TURN_TTL_SECONDS };
}

/** Settings the trunk profile file replaces: one place says what a trunk is. */
const TRUNK_VARIABLES = [
  "BRIDGELINE_SIP_TRUNK",
  "BRIDGELINE_SIP_TRUNK_USER",
  "BRIDGELINE_SIP_TRUNK_PASSWORD",
  "BRIDGELINE_SIP_REGISTRAR",
  "BRIDGELINE_SIP_REGISTER_EXPIRES",
  "BRIDGELINE_SIP_ROUTES",
] as const satisfies readonly Variable[];

export interface SipRoute {
  prefix: string;
  /** The trunk's profile, or its URI alone. */
  trunk: Trunk | string;
}

/** The trunks: BRIDGELINE_SIP_TRUNKS_FILE, else the trunk variables. */
function dialPlan(settings: Settings, env: Env): { trunk: Trunk | string | null; routes: SipRoute[] } {
  const file = settings.BRIDGELINE_SIP_TRUNKS_FILE;
  if (file !== undefined) {
    const clashing = TRUNK_VARIABLES.filter((name) => env[name]);
    if (clashing.length > 0)
      throw new ConfigError(
        "BRIDGELINE_SIP_TRUNKS_FILE",
        `the profile file replaces ${clashing.join(", ")}: unset ${clashing.length === 1 ? "it" : "them"} or leave the file out`,
      );
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      throw new ConfigError("BRIDGELINE_SIP_TRUNKS_FILE", `cannot read ${file}: ${(error as Error).message}`);
    }
    try {
      const plan = parseTrunkProfiles(text);
      return { trunk: plan.trunk, routes: [...plan.routes] };
    } catch (error) {
      if (error instanceof TrunkProfileError)
        throw new ConfigError("BRIDGELINE_SIP_TRUNKS_FILE", `${file} ${error.message}`);
      throw error;
    }
  }

  pair(settings, "BRIDGELINE_SIP_TRUNK_USER", "BRIDGELINE_SIP_TRUNK_PASSWORD");
  const user = settings.BRIDGELINE_SIP_TRUNK_USER;
  const password = settings.BRIDGELINE_SIP_TRUNK_PASSWORD;
  const credentials = user === undefined || password === undefined ? null : { username: user, password };
  const registrar = settings.BRIDGELINE_SIP_REGISTRAR;
  if (registrar !== undefined && credentials === null)
    throw new ConfigError(
      "BRIDGELINE_SIP_REGISTRAR",
      "registering needs BRIDGELINE_SIP_TRUNK_USER and BRIDGELINE_SIP_TRUNK_PASSWORD",
    );
  const trunk = settings.BRIDGELINE_SIP_TRUNK;
  if (trunk === undefined && registrar !== undefined)
    throw new ConfigError(
      "BRIDGELINE_SIP_REGISTRAR",
      "registering needs BRIDGELINE_SIP_TRUNK, the trunk it is for",
    );
  const registration =
    registrar === undefined
      ? null
      : { registrar: registrar.uri, expires: settings.BRIDGELINE_SIP_REGISTER_EXPIRES };
  return {
    trunk: trunk === undefined ? null : { ...trunkOf(trunk), credentials, registration },
    // Each route's trunk takes the default trunk's credentials, as it always has; a profile file
    // gives routes credentials of their own.
    routes: (settings.BRIDGELINE_SIP_ROUTES ?? []).map((route) => ({
      prefix: route.prefix,
      trunk: { ...trunkOf(route.uri), credentials },
    })),
  };
}

type Env = Record<string, string | undefined>;

/**
 * The Config the service sees, shaped from the variables once each has been read; a rule over
 * several variables that is broken throws ConfigError naming the one to change.
 */
function shape(settings: Settings, env: Env) {
  pair(settings, "BRIDGELINE_TLS_CERT", "BRIDGELINE_TLS_KEY");
  pair(settings, "BRIDGELINE_SIP_TLS_CERT", "BRIDGELINE_SIP_TLS_KEY");
  const perSource = settings.BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE;
  const total = settings.BRIDGELINE_SIP_MAX_CONNECTIONS;
  if (perSource > total)
    throw new ConfigError(
      "BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE",
      `must not be more than BRIDGELINE_SIP_MAX_CONNECTIONS (${total}), got ${perSource}`,
    );
  const plan = dialPlan(settings, env);
  const from = settings.BRIDGELINE_MAIL_FROM;
  const dataDir = settings.BRIDGELINE_DATA_DIR;
  return {
    dataDir,
    /** PostgreSQL connection URL; null selects the embedded SQLite store in dataDir. */
    databaseUrl: settings.BRIDGELINE_DATABASE_URL ?? null,
    databaseWaitSeconds: settings.BRIDGELINE_DATABASE_WAIT_SECONDS,
    databaseTimeoutSeconds: settings.BRIDGELINE_DATABASE_TIMEOUT_SECONDS,
    host: settings.BRIDGELINE_HOST,
    httpsPort: settings.BRIDGELINE_HTTPS_PORT,
    httpPort: settings.BRIDGELINE_HTTP_PORT ?? null,
    metricsPort: settings.BRIDGELINE_METRICS_PORT ?? null,
    trustedProxies: settings.BRIDGELINE_TRUSTED_PROXIES ?? null,
    tlsCertFile: settings.BRIDGELINE_TLS_CERT ?? null,
    tlsKeyFile: settings.BRIDGELINE_TLS_KEY ?? null,
    logLevel: settings.BRIDGELINE_LOG_LEVEL,
    failedLoginLimit: settings.BRIDGELINE_FAILED_LOGIN_LIMIT,
    signupLimit: settings.BRIDGELINE_SIGNUP_LIMIT,
    throttleWindowSeconds: settings.BRIDGELINE_THROTTLE_WINDOW_SECONDS,
    maxConnections: settings.BRIDGELINE_MAX_CONNECTIONS,
    maxEventStreams: settings.BRIDGELINE_MAX_EVENT_STREAMS,
    /** Where people reach the web listener, e.g. `https://conference.example.com` (no trailing slash). */
    publicUrl:
      settings.BRIDGELINE_PUBLIC_URL ??
      fallbackPublicUrl(settings.BRIDGELINE_PUBLIC_ADDRESS ?? os.hostname(), settings.BRIDGELINE_HTTPS_PORT),
    /** Whether callers may join from a browser (the join page and its routes). */
    browserJoin: settings.BRIDGELINE_BROWSER_JOIN,
    /** The STUN/TURN servers browser participants are given (src/api/ice-servers.ts). */
    turn: browserTurn(settings),
    /** Must stay the same across this instance's restarts. */
    instanceId: settings.BRIDGELINE_INSTANCE_ID ?? `${os.hostname()}:${dataDir}`,
    sip: {
      bindAddress: settings.BRIDGELINE_SIP_ADDRESS,
      port: settings.BRIDGELINE_SIP_PORT,
      publicAddress: settings.BRIDGELINE_PUBLIC_ADDRESS ?? null,
      /** The default trunk; null when only routes, or nothing, can place calls. */
      trunk: plan.trunk,
      callerId: settings.BRIDGELINE_CALLER_ID,
      routes: plan.routes,
      rtpPorts: settings.BRIDGELINE_RTP_PORTS,
      ringTimeoutSeconds: settings.BRIDGELINE_RING_TIMEOUT_SECONDS,
      dnsServers: settings.BRIDGELINE_DNS_SERVERS ?? null,
      serverTimeoutSeconds: settings.BRIDGELINE_SIP_SERVER_TIMEOUT_SECONDS,
      /** OPTIONS to every trunk server this often; 0: only trunks whose profile says. */
      trunkProbeSeconds: settings.BRIDGELINE_TRUNK_PROBE_SECONDS,
      readyTrunks: settings.BRIDGELINE_READY_TRUNKS,
      mediaTimeoutSeconds: settings.BRIDGELINE_MEDIA_TIMEOUT_SECONDS,
      mediaThreads: settings.BRIDGELINE_MEDIA_THREADS ?? os.availableParallelism(),
      mixTalkers: settings.BRIDGELINE_MIX_TALKERS,
      accessNumbers: settings.BRIDGELINE_ACCESS_NUMBERS ?? [],
      tlsPort: settings.BRIDGELINE_SIP_TLS_PORT ?? null,
      tlsCertFile: settings.BRIDGELINE_SIP_TLS_CERT ?? null,
      tlsKeyFile: settings.BRIDGELINE_SIP_TLS_KEY ?? null,
      tlsCaFile: settings.BRIDGELINE_SIP_TLS_CA ?? null,
      /** STI-CA roots for STIR/SHAKEN verification of calls taken; null: not verified. */
      stirCaFile: settings.BRIDGELINE_STIR_CA_FILE ?? null,
      trusted: settings.BRIDGELINE_SIP_TRUSTED ?? null,
      untrusted: settings.BRIDGELINE_SIP_UNTRUSTED,
      srtp: settings.BRIDGELINE_SRTP,
      dialInSrtp: settings.BRIDGELINE_DIAL_IN_SRTP,
      srtpKeysOverPlainSip: settings.BRIDGELINE_SRTP_KEYS_OVER_PLAIN_SIP,
      requestRatePerSource: settings.BRIDGELINE_SIP_REQUEST_RATE,
      maxCalls: settings.BRIDGELINE_SIP_MAX_CALLS,
      connections: {
        perSource,
        total,
        idleSeconds: settings.BRIDGELINE_SIP_IDLE_SECONDS,
        tlsHandshakeSeconds: settings.BRIDGELINE_SIP_TLS_HANDSHAKE_SECONDS,
      },
      srtpSuites: settings.BRIDGELINE_SRTP_SUITES,
      codecs: settings.BRIDGELINE_CODECS,
    },
    mail: {
      /** null writes each message as an .eml file in dataDir/mail. */
      smtpUrl: settings.BRIDGELINE_SMTP_URL ?? null,
      from,
      supportEmail: settings.BRIDGELINE_SUPPORT_EMAIL ?? addressOf(from),
      supportPhone: settings.BRIDGELINE_SUPPORT_PHONE ?? null,
      retrySeconds: settings.BRIDGELINE_MAIL_RETRY_SECONDS,
    },
    conferences: {
      deniedNumberPrefixes: settings.BRIDGELINE_DENIED_NUMBERS ?? [],
      maxCallsInProgressPerUser: settings.BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER,
      maxCallsPerHourPerUser: settings.BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER,
      emptyGraceSeconds: settings.BRIDGELINE_EMPTY_GRACE_SECONDS,
      noShowMinutes: settings.BRIDGELINE_NO_SHOW_MINUTES,
      /** null: no limit. */
      maxParticipants: settings.BRIDGELINE_MAX_PARTICIPANTS ?? null,
      leaseSeconds: settings.BRIDGELINE_CONFERENCE_LEASE_SECONDS,
      takeOverWithinMinutes: settings.BRIDGELINE_TAKE_OVER_WITHIN_MINUTES,
      /** null: on with PostgreSQL, off with SQLite (main.ts decides once the store is open). */
      handOverOnStop: settings.BRIDGELINE_HAND_OVER_ON_STOP ?? null,
      wrongPinLimit: settings.BRIDGELINE_WRONG_PIN_LIMIT,
      wrongPinWindowMinutes: settings.BRIDGELINE_WRONG_PIN_WINDOW_MINUTES,
      wrongPinsPerMinute: settings.BRIDGELINE_WRONG_PINS_PER_MINUTE,
      pinPromptPlaces: settings.BRIDGELINE_PIN_PROMPT_PLACES,
      pinPromptPlacesPerSource: settings.BRIDGELINE_PIN_PROMPT_PLACES_PER_SOURCE,
    },
    webhooks: {
      allowPrivate: settings.BRIDGELINE_WEBHOOK_ALLOW_PRIVATE,
      timeoutSeconds: settings.BRIDGELINE_WEBHOOK_TIMEOUT_SECONDS,
      retrySeconds: settings.BRIDGELINE_WEBHOOK_RETRY_SECONDS,
    },
  };
}

/** Every setting of the service, as read from the environment. */
export type Config = ReturnType<typeof shape>;
export type SipConfig = Config["sip"];

const SETTINGS = z.object(VARIABLES);

/** Reads and checks the environment; a bad value throws ConfigError naming its variable. */
export function loadConfig(env: Env = process.env): Config {
  const result = SETTINGS.safeParse(env);
  if (result.success) return shape(result.data, env);
  // The first variable refused, in the table's order, is the one reported.
  const [issue] = result.error.issues;
  throw new ConfigError(String(issue?.path[0]), issue?.message ?? "is refused");
}

/** A BRIDGELINE_* variable the table has not, and the known one it is most likely a mistyping of. */
export interface UnknownVariable {
  readonly name: string;
  readonly likely: string | undefined;
}

const KNOWN = Object.keys(VARIABLES);

/** The BRIDGELINE_* variables set that nothing reads (a mistyped name would otherwise pass silently). */
export function unknownVariables(env: Env = process.env): UnknownVariable[] {
  return Object.keys(env)
    .filter((name) => name.startsWith("BRIDGELINE_") && !(name in VARIABLES))
    .map((name) => ({ name, likely: closestMatch(name, KNOWN, { maxDistance: 3 }) }));
}
