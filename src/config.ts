import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import os from "node:os";
import path from "node:path";
import { normalizeNanpNumber } from "./domain/phone.js";
import { DEFAULT_SRTP_SUITES, SRTP_SUITES, type SrtpSuite } from "./telephony/media/rtp/srtp.js";
import { type Trunk, trunkOfUri } from "./telephony/trunk.js";
import { checkSipUri, parseTrunkProfiles, readCallerId, TrunkProfileError } from "./trunk-profiles.js";

/** Every setting of the service, read and validated here and nowhere else. */
export interface Config {
  dataDir: string;
  /** PostgreSQL connection URL; null selects the embedded SQLite store in dataDir. */
  databaseUrl: string | null;
  /** How long start-up waits for an unreachable PostgreSQL before it gives up. */
  databaseWaitSeconds: number;
  /** How long a PostgreSQL statement may run, and a connection be waited for, before 503. */
  databaseTimeoutSeconds: number;
  host: string;
  httpsPort: number;
  /** Plain-HTTP listener, only when BRIDGELINE_HTTP_PORT is set (behind a TLS proxy, or in tests). */
  httpPort: number | null;
  /** Prometheus metrics (GET /metrics) on a plain-HTTP port of their own; null: none. */
  metricsPort: number | null;
  /** Proxy addresses (comma-separated IPs/CIDRs) whose X-Forwarded-For names the client. */
  trustedProxies: string | null;
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  logLevel: LogLevel;
  /** Failed logins per client address within the window before 429. */
  failedLoginLimit: number;
  /** Sign-up attempts per client address within the window before 429. */
  signupLimit: number;
  throttleWindowSeconds: number;
  /** Open connections each HTTP(S) listener takes; past it new ones are closed at once. */
  maxConnections: number;
  /** Open event streams (SSE) this instance serves, over all users; past it 503. */
  maxEventStreams: number;
  /** This instance's name as the runner of its conferences; must stay the same across its restarts. */
  instanceId: string;
  sip: SipConfig;
  mail: MailConfig;
  conferences: ConferencesConfig;
  webhooks: WebhookConfig;
}

/** Webhook delivery (BRIDGELINE_WEBHOOK_*). */
export interface WebhookConfig {
  /** Let webhooks call private, loopback and link-local addresses (server-side request forgery). */
  allowPrivate: boolean;
  /** How long a receiver has to answer an attempt. */
  timeoutSeconds: number;
  /** The first wait before an attempt is made again; later waits are multiples of it, for a day. */
  retrySeconds: number;
}

/** How conferences run (BRIDGELINE_EMPTY_GRACE_SECONDS, _NO_SHOW_MINUTES, _MAX_PARTICIPANTS, _WRONG_PIN*, _PIN_PROMPT_*, _DENIED_NUMBERS, _MAX_CALLS_*). */
export interface ConferencesConfig {
  /** E.164 prefixes attendees' numbers may not start with, besides the fixed rules (toll fraud). */
  deniedNumberPrefixes: string[];
  /** Calls one user's conferences may have in progress at once, over every instance (toll fraud). */
  maxCallsInProgressPerUser: number;
  /** Calls one user's conferences may place in any hour, over every instance (toll fraud). */
  maxCallsPerHourPerUser: number;
  /** A conference everyone left stays open this long for callers to come back (with dial-in open). */
  emptyGraceSeconds: number;
  /** A started conference nobody has joined stays open this long for callers (with dial-in open). */
  noShowMinutes: number;
  /** Participants this instance takes on: it claims a due conference only while it has room for its attendees. */
  maxParticipants: number | null;
  /** Wrong PINs a caller may type within the window, over any calls, before its calls are refused. */
  wrongPinLimit: number;
  wrongPinWindowMinutes: number;
  /** Wrong PINs all callers together may type in a minute, over every instance, before dial-in is refused. */
  wrongPinsPerMinute: number;
  /** Callers at the PIN prompt at once, and from one source that is not a configured peer. */
  pinPromptPlaces: number;
  pinPromptPlacesPerSource: number;
}

/** Notification e-mail (BRIDGELINE_SMTP_URL, _MAIL_FROM, _SUPPORT_*, _MAIL_RETRY_SECONDS). */
export interface MailConfig {
  /** smtp:// or smtps:// with any credentials; null writes each message as an .eml file in dataDir/mail. */
  smtpUrl: string | null;
  /** The From header, e.g. `Bridgeline <conferences@example.com>`. */
  from: string;
  /** Support details printed in every message. */
  supportEmail: string;
  supportPhone: string | null;
  /** Wait before the first retry of a message the server could not take; it doubles up to an hour. */
  retrySeconds: number;
}

/** The SIP/RTP stack's settings (BRIDGELINE_SIP_*, _RTP_PORTS, _CALLER_ID, _PUBLIC_ADDRESS). */
export interface SipConfig {
  /** Address the SIP (UDP and TCP) and RTP sockets bind to. */
  bindAddress: string;
  port: number;
  /** Written into Via, Contact and SDP when the service sits behind NAT; else the bind address. */
  publicAddress: string | null;
  /**
   * The default trunk, from BRIDGELINE_SIP_TRUNKS_FILE or BRIDGELINE_SIP_TRUNK (with _USER,
   * _PASSWORD, _REGISTRAR), or its URI alone; null when only routes, or nothing, can place calls.
   */
  trunk: Trunk | string | null;
  /** The From user part of placed calls where the trunk names none: +1NPANXXXXXX or a user name. */
  callerId: string;
  /** Dial plan: number prefixes to other trunks, longest prefix first. */
  routes: SipRoute[];
  rtpPorts: { min: number; max: number };
  ringTimeoutSeconds: number;
  /** DNS servers for finding trunk servers (RFC 3263); null: the system's. */
  dnsServers: string[] | null;
  /** How long a trunk server may leave an INVITE unanswered before the next is tried. */
  serverTimeoutSeconds: number;
  mediaTimeoutSeconds: number;
  /** Worker threads for the media (RTP, mixing, playback, recording); 0 keeps it on the main thread. */
  mediaThreads: number;
  /** The numbers callers dial in on, E.164 (+1NPANXXXXXX). */
  accessNumbers: string[];
  /** SIP over TLS listener port; null: the SIP port + 1 (5061), a free one when the SIP port is 0. */
  tlsPort: number | null;
  /** The SIP TLS listener's own certificate and key; null: the HTTPS pair (BRIDGELINE_TLS_CERT/KEY). */
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  /** CA certificates (PEM file) that TLS trunks' certificates must chain to; null: the system's. */
  tlsCaFile: string | null;
  /** Addresses and CIDRs SIP requests may come from; null: the trunk's and routes' (anyone without). */
  trusted: string[] | null;
  /** What a request from an untrusted source gets: 403, or nothing. */
  untrusted: "refuse" | "drop";
  /** SRTP for placed calls (a trunk's `;srtp=` overrides it) and for calls taken. */
  srtp: SrtpPolicy;
  dialInSrtp: SrtpPolicy;
  /** Let SRTP keys travel in SIP that is not over TLS. */
  srtpKeysOverPlainSip: boolean;
  /** Requests per second one source address may send (a burst of twice that); past it 503, then dropped. */
  requestRatePerSource: number;
  /** Calls in progress (placed and taken) past which an INVITE is refused 503. */
  maxCalls: number;
  /** TCP and TLS connections taken: from one source, in all, and how long they may idle or handshake. */
  connections: SipConnectionsConfig;
  /** The SRTP suites offered and accepted, preferred first. */
  srtpSuites: SrtpSuite[];
}

export type SrtpPolicy = "off" | "optional" | "required";

/** BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE, _MAX_CONNECTIONS, _IDLE_SECONDS, _TLS_HANDSHAKE_SECONDS. */
export interface SipConnectionsConfig {
  /** Connections one source (an IPv4 address, an IPv6 /64) may hold open; one more is closed at once. */
  perSource: number;
  /** Connections open in all; one more is closed at once. */
  total: number;
  /** An accepted connection carrying no message (and no call) this long is closed. */
  idleSeconds: number;
  /** A TLS handshake not done in this long is abandoned and its connection closed. */
  tlsHandshakeSeconds: number;
}

export interface SipRoute {
  prefix: string;
  /** The trunk's profile, or its URI alone. */
  trunk: Trunk | string;
}

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

function readPort(env: Env, name: string, fallback: number | null): number | null {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) {
    throw new ConfigError(name, `must be a port number from 0 to 65535, got "${raw}"`);
  }
  return port;
}

function readPositiveInteger(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) {
    throw new ConfigError(name, `must be a whole number of at least 1, got "${raw}"`);
  }
  return Number(raw);
}

function readCount(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > 256) {
    throw new ConfigError(name, `must be a whole number from 0 to 256, got "${raw}"`);
  }
  return Number(raw);
}

function readFile(env: Env, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw === "" ? null : path.resolve(raw);
}

function readSipUri(env: Env, name: string): string | null {
  const raw = env[name];
  if (raw === undefined || raw === "") return null;
  const problem = checkSipUri(raw);
  if (problem !== undefined) throw new ConfigError(name, problem);
  return raw;
}

/**
 * BRIDGELINE_SIP_ROUTES: `prefix=uri;prefix=uri`, e.g. `+1604555=sip:127.0.0.1:5071;+1778=sip:b.example`.
 * Each route's trunk takes the default trunk's credentials, as it always has; a profile file gives
 * routes credentials of their own.
 */
function readRoutes(env: Env, credentials: Trunk["credentials"]): SipRoute[] {
  const raw = env.BRIDGELINE_SIP_ROUTES;
  if (raw === undefined || raw.trim() === "") return [];
  const routes = raw
    .split(/[;\n]+(?=\s*\+?\d+\s*=)/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const match = /^(\+?\d+)\s*=\s*(sips?:\S+)$/i.exec(entry);
      if (match === null) {
        throw new ConfigError(
          "BRIDGELINE_SIP_ROUTES",
          `each entry must be <number prefix>=<SIP URI>, such as +1604555=sip:127.0.0.1:5071; got "${entry}"`,
        );
      }
      const uri = match[2] as string;
      const problem = checkSipUri(uri);
      if (problem !== undefined) throw new ConfigError("BRIDGELINE_SIP_ROUTES", problem);
      return { prefix: match[1] as string, trunk: { ...trunkOfUri(uri), credentials } };
    });
  return routes.sort((a, b) => b.prefix.length - a.prefix.length);
}

function readPortRange(env: Env): { min: number; max: number } {
  const raw = env.BRIDGELINE_RTP_PORTS || "10000-20000";
  const match = /^(\d+)-(\d+)$/.exec(raw.trim());
  const min = Number(match?.[1]);
  const max = Number(match?.[2]);
  if (match === null || min < 1024 || max > 65535 || max - min < 1) {
    throw new ConfigError(
      "BRIDGELINE_RTP_PORTS",
      `must be a range such as 10000-20000 within 1024-65535 holding at least one even/odd pair, got "${raw}"`,
    );
  }
  return { min, max };
}

/** BRIDGELINE_DENIED_NUMBERS: comma-separated E.164 prefixes such as `+1876,+1809`. */
function readDeniedNumbers(env: Env): string[] {
  const raw = env.BRIDGELINE_DENIED_NUMBERS;
  if (raw === undefined || raw.trim() === "") return [];
  return raw.split(",").map((entry) => {
    const prefix = entry.trim().replace(/[\s().-]/g, "");
    if (!/^\+1\d{1,10}$/.test(prefix))
      throw new ConfigError(
        "BRIDGELINE_DENIED_NUMBERS",
        `each entry must be the start of a +1 number such as +1876; got "${entry.trim()}"`,
      );
    return prefix;
  });
}

/** BRIDGELINE_ACCESS_NUMBERS: comma-separated North American numbers, kept as +1NPANXXXXXX. */
function readAccessNumbers(env: Env): string[] {
  const raw = env.BRIDGELINE_ACCESS_NUMBERS;
  if (raw === undefined || raw.trim() === "") return [];
  return raw.split(",").map((entry) => {
    const number = normalizeNanpNumber(entry.trim());
    if (number === null) {
      throw new ConfigError(
        "BRIDGELINE_ACCESS_NUMBERS",
        `each entry must be a North American number such as +16045550199; got "${entry.trim()}"`,
      );
    }
    return `+1${number.subscriberNumber}`;
  });
}

function readSipConfig(env: Env): SipConfig {
  const sipTlsCert = readFile(env, "BRIDGELINE_SIP_TLS_CERT");
  const sipTlsKey = readFile(env, "BRIDGELINE_SIP_TLS_KEY");
  if ((sipTlsCert === null) !== (sipTlsKey === null)) {
    throw new ConfigError(
      sipTlsCert === null ? "BRIDGELINE_SIP_TLS_CERT" : "BRIDGELINE_SIP_TLS_KEY",
      "BRIDGELINE_SIP_TLS_CERT and BRIDGELINE_SIP_TLS_KEY must be set together",
    );
  }
  const rawCallerId = env.BRIDGELINE_CALLER_ID || "bridgeline";
  const callerId = readCallerId(rawCallerId);
  if (callerId === undefined) {
    throw new ConfigError(
      "BRIDGELINE_CALLER_ID",
      `must be a number such as +16045550100, got "${rawCallerId}"`,
    );
  }
  const dialPlan = readDialPlan(env);
  return {
    bindAddress: env.BRIDGELINE_SIP_ADDRESS || "0.0.0.0",
    port: readPort(env, "BRIDGELINE_SIP_PORT", 5060) as number,
    publicAddress: env.BRIDGELINE_PUBLIC_ADDRESS || null,
    trunk: dialPlan.trunk,
    callerId,
    routes: dialPlan.routes,
    rtpPorts: readPortRange(env),
    ringTimeoutSeconds: readPositiveInteger(env, "BRIDGELINE_RING_TIMEOUT_SECONDS", 45),
    dnsServers: readDnsServers(env),
    serverTimeoutSeconds: readPositiveInteger(env, "BRIDGELINE_SIP_SERVER_TIMEOUT_SECONDS", 4),
    mediaTimeoutSeconds: readPositiveInteger(env, "BRIDGELINE_MEDIA_TIMEOUT_SECONDS", 30),
    mediaThreads: readCount(env, "BRIDGELINE_MEDIA_THREADS", os.availableParallelism()),
    accessNumbers: readAccessNumbers(env),
    tlsPort: readPort(env, "BRIDGELINE_SIP_TLS_PORT", null),
    tlsCertFile: sipTlsCert,
    tlsKeyFile: sipTlsKey,
    tlsCaFile: readFile(env, "BRIDGELINE_SIP_TLS_CA"),
    trusted: readTrusted(env),
    untrusted: readUntrusted(env),
    srtp: readSrtpPolicy(env, "BRIDGELINE_SRTP"),
    dialInSrtp: readSrtpPolicy(env, "BRIDGELINE_DIAL_IN_SRTP"),
    srtpKeysOverPlainSip: readBoolean(env, "BRIDGELINE_SRTP_KEYS_OVER_PLAIN_SIP", false),
    requestRatePerSource: readPositiveInteger(env, "BRIDGELINE_SIP_REQUEST_RATE", 50),
    maxCalls: readPositiveInteger(env, "BRIDGELINE_SIP_MAX_CALLS", 2000),
    connections: readSipConnections(env),
    srtpSuites: readSrtpSuites(env),
  };
}

function readSipConnections(env: Env): SipConnectionsConfig {
  const perSource = readPositiveInteger(env, "BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE", 16);
  const total = readPositiveInteger(env, "BRIDGELINE_SIP_MAX_CONNECTIONS", 2048);
  if (perSource > total)
    throw new ConfigError(
      "BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE",
      `must not be more than BRIDGELINE_SIP_MAX_CONNECTIONS (${total}), got ${perSource}`,
    );
  return {
    perSource,
    total,
    idleSeconds: readPositiveInteger(env, "BRIDGELINE_SIP_IDLE_SECONDS", 60),
    tlsHandshakeSeconds: readPositiveInteger(env, "BRIDGELINE_SIP_TLS_HANDSHAKE_SECONDS", 10),
  };
}

/** Settings the trunk profile file replaces: one place says what a trunk is. */
const TRUNK_VARIABLES = [
  "BRIDGELINE_SIP_TRUNK",
  "BRIDGELINE_SIP_TRUNK_USER",
  "BRIDGELINE_SIP_TRUNK_PASSWORD",
  "BRIDGELINE_SIP_REGISTRAR",
  "BRIDGELINE_SIP_REGISTER_EXPIRES",
  "BRIDGELINE_SIP_ROUTES",
];

/** The trunks: BRIDGELINE_SIP_TRUNKS_FILE, else the trunk variables. */
function readDialPlan(env: Env): { trunk: Trunk | null; routes: SipRoute[] } {
  const file = readFile(env, "BRIDGELINE_SIP_TRUNKS_FILE");
  if (file !== null) {
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

  const user = env.BRIDGELINE_SIP_TRUNK_USER || null;
  const password = env.BRIDGELINE_SIP_TRUNK_PASSWORD || null;
  if ((user === null) !== (password === null)) {
    throw new ConfigError(
      user === null ? "BRIDGELINE_SIP_TRUNK_USER" : "BRIDGELINE_SIP_TRUNK_PASSWORD",
      "BRIDGELINE_SIP_TRUNK_USER and BRIDGELINE_SIP_TRUNK_PASSWORD must be set together",
    );
  }
  const credentials = user === null || password === null ? null : { username: user, password };
  const registrar = readSipUri(env, "BRIDGELINE_SIP_REGISTRAR");
  if (registrar !== null && credentials === null)
    throw new ConfigError(
      "BRIDGELINE_SIP_REGISTRAR",
      "registering needs BRIDGELINE_SIP_TRUNK_USER and BRIDGELINE_SIP_TRUNK_PASSWORD",
    );
  const registration =
    registrar === null
      ? null
      : { registrar, expires: readPositiveInteger(env, "BRIDGELINE_SIP_REGISTER_EXPIRES", 3600) };
  const uri = readSipUri(env, "BRIDGELINE_SIP_TRUNK");
  if (uri === null && registration !== null)
    throw new ConfigError(
      "BRIDGELINE_SIP_REGISTRAR",
      "registering needs BRIDGELINE_SIP_TRUNK, the trunk it is for",
    );
  return {
    trunk: uri === null ? null : { ...trunkOfUri(uri), credentials, registration },
    routes: readRoutes(env, credentials),
  };
}

/** BRIDGELINE_DNS_SERVERS: comma-separated IPv4 `address` or `address:port` (queries go over UDP/IPv4). */
function readDnsServers(env: Env): string[] | null {
  const raw = env.BRIDGELINE_DNS_SERVERS;
  if (raw === undefined || raw.trim() === "") return null;
  return raw.split(",").map((entry) => {
    const server = entry.trim();
    const [address = "", port = "53", extra] = server.split(":");
    if (
      isIP(address) !== 4 ||
      extra !== undefined ||
      !/^\d+$/.test(port) ||
      Number(port) < 1 ||
      Number(port) > 65535
    )
      throw new ConfigError("BRIDGELINE_DNS_SERVERS", `"${server}" is not an IPv4 address or address:port`);
    return server;
  });
}

/** BRIDGELINE_SRTP_SUITES: the suites to offer and accept, preferred first, comma-separated. */
function readSrtpSuites(env: Env): SrtpSuite[] {
  const raw = env.BRIDGELINE_SRTP_SUITES;
  if (raw === undefined || raw.trim() === "") return [...DEFAULT_SRTP_SUITES];
  const suites = raw.split(",").map((entry) => {
    const name = entry.trim();
    const suite = SRTP_SUITES.find((known) => known === name);
    if (suite === undefined)
      throw new ConfigError("BRIDGELINE_SRTP_SUITES", `"${name}" is not one of ${SRTP_SUITES.join(", ")}`);
    return suite;
  });
  if (new Set(suites).size !== suites.length)
    throw new ConfigError("BRIDGELINE_SRTP_SUITES", `names a suite twice: "${raw}"`);
  return suites;
}

function readSrtpPolicy(env: Env, name: string): SrtpPolicy {
  const raw = env[name] || "optional";
  if (raw !== "off" && raw !== "optional" && raw !== "required")
    throw new ConfigError(name, `must be off, optional or required, got "${raw}"`);
  return raw;
}

function readBoolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw !== "true" && raw !== "false") throw new ConfigError(name, `must be true or false, got "${raw}"`);
  return raw === "true";
}

/** BRIDGELINE_SIP_TRUSTED: comma-separated IPv4/IPv6 addresses and CIDRs, e.g. `203.0.113.0/24,2001:db8::1`. */
function readTrusted(env: Env): string[] | null {
  const raw = env.BRIDGELINE_SIP_TRUSTED;
  if (raw === undefined || raw.trim() === "") return null;
  return raw.split(",").map((entry) => {
    const trimmed = entry.trim();
    const [address = "", prefix, extra] = trimmed.split("/");
    const family = isIP(address);
    const maxPrefix = family === 6 ? 128 : 32;
    if (
      family === 0 ||
      extra !== undefined ||
      (prefix !== undefined && (!/^\d+$/.test(prefix) || Number(prefix) > maxPrefix))
    )
      throw new ConfigError(
        "BRIDGELINE_SIP_TRUSTED",
        `must be IP addresses or CIDRs such as 203.0.113.0/24, got "${trimmed}"`,
      );
    return trimmed;
  });
}

function readUntrusted(env: Env): "refuse" | "drop" {
  const raw = env.BRIDGELINE_SIP_UNTRUSTED || "refuse";
  if (raw !== "refuse" && raw !== "drop")
    throw new ConfigError("BRIDGELINE_SIP_UNTRUSTED", `must be refuse or drop, got "${raw}"`);
  return raw;
}

const MAILBOX = /^[^\s@<>",;]+@[^\s@<>",;]+$/;

/** A mailbox, bare or with a display name: `a@b.example` or `Name <a@b.example>`. */
function readMailbox(env: Env, name: string, fallback: string): string {
  const raw = (env[name] || fallback).trim();
  const address = /<([^<>]*)>$/.exec(raw)?.[1] ?? raw;
  if (!MAILBOX.test(address) || /[\r\n]/.test(raw)) {
    throw new ConfigError(
      name,
      `must be an e-mail address such as "Bridgeline <conferences@example.com>", got "${raw}"`,
    );
  }
  return raw;
}

function readMailConfig(env: Env): MailConfig {
  const smtpUrl = env.BRIDGELINE_SMTP_URL || null;
  if (smtpUrl !== null && !/^smtps?:\/\/[^\s/]+/.test(smtpUrl)) {
    throw new ConfigError(
      "BRIDGELINE_SMTP_URL",
      "must be an smtp:// or smtps:// URL such as smtps://user:password@mail.example.com:465",
    );
  }
  const from = readMailbox(env, "BRIDGELINE_MAIL_FROM", "Bridgeline <bridgeline@localhost>");
  return {
    smtpUrl,
    from,
    supportEmail: readMailbox(env, "BRIDGELINE_SUPPORT_EMAIL", /<([^<>]*)>$/.exec(from)?.[1] ?? from),
    supportPhone: env.BRIDGELINE_SUPPORT_PHONE?.trim() || null,
    retrySeconds: readPositiveInteger(env, "BRIDGELINE_MAIL_RETRY_SECONDS", 30),
  };
}

export function loadConfig(env: Env = process.env): Config {
  const logLevel = (env.BRIDGELINE_LOG_LEVEL || "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(
      "BRIDGELINE_LOG_LEVEL",
      `must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`,
    );
  }
  const tlsCertFile = readFile(env, "BRIDGELINE_TLS_CERT");
  const tlsKeyFile = readFile(env, "BRIDGELINE_TLS_KEY");
  if ((tlsCertFile === null) !== (tlsKeyFile === null)) {
    throw new ConfigError(
      tlsCertFile === null ? "BRIDGELINE_TLS_CERT" : "BRIDGELINE_TLS_KEY",
      "BRIDGELINE_TLS_CERT and BRIDGELINE_TLS_KEY must be set together",
    );
  }
  const databaseUrl = env.BRIDGELINE_DATABASE_URL || null;
  const dataDir = path.resolve(env.BRIDGELINE_DATA_DIR || "./data");
  if (databaseUrl !== null && !/^postgres(ql)?:\/\/\S+$/.test(databaseUrl)) {
    throw new ConfigError("BRIDGELINE_DATABASE_URL", "must be a postgres:// or postgresql:// URL");
  }
  return {
    dataDir,
    databaseUrl,
    databaseWaitSeconds: readPositiveInteger(env, "BRIDGELINE_DATABASE_WAIT_SECONDS", 60),
    databaseTimeoutSeconds: readPositiveInteger(env, "BRIDGELINE_DATABASE_TIMEOUT_SECONDS", 5),
    host: env.BRIDGELINE_HOST || "0.0.0.0",
    httpsPort: readPort(env, "BRIDGELINE_HTTPS_PORT", 8443) as number,
    httpPort: readPort(env, "BRIDGELINE_HTTP_PORT", null),
    metricsPort: readPort(env, "BRIDGELINE_METRICS_PORT", null),
    trustedProxies: env.BRIDGELINE_TRUSTED_PROXIES || null,
    tlsCertFile,
    tlsKeyFile,
    logLevel,
    failedLoginLimit: readPositiveInteger(env, "BRIDGELINE_FAILED_LOGIN_LIMIT", 10),
    signupLimit: readPositiveInteger(env, "BRIDGELINE_SIGNUP_LIMIT", 20),
    throttleWindowSeconds: readPositiveInteger(env, "BRIDGELINE_THROTTLE_WINDOW_SECONDS", 900),
    maxConnections: readPositiveInteger(env, "BRIDGELINE_MAX_CONNECTIONS", 10_000),
    maxEventStreams: readPositiveInteger(env, "BRIDGELINE_MAX_EVENT_STREAMS", 5_000),
    instanceId: env.BRIDGELINE_INSTANCE_ID || `${os.hostname()}:${dataDir}`,
    sip: readSipConfig(env),
    mail: readMailConfig(env),
    webhooks: {
      allowPrivate: readBoolean(env, "BRIDGELINE_WEBHOOK_ALLOW_PRIVATE", false),
      timeoutSeconds: readPositiveInteger(env, "BRIDGELINE_WEBHOOK_TIMEOUT_SECONDS", 15),
      retrySeconds: readPositiveInteger(env, "BRIDGELINE_WEBHOOK_RETRY_SECONDS", 5),
    },
    conferences: {
      deniedNumberPrefixes: readDeniedNumbers(env),
      // One full conference (250 attendees) at once; four an hour.
      maxCallsInProgressPerUser: readPositiveInteger(env, "BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER", 250),
      maxCallsPerHourPerUser: readPositiveInteger(env, "BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER", 1000),
      emptyGraceSeconds: readPositiveInteger(env, "BRIDGELINE_EMPTY_GRACE_SECONDS", 120),
      noShowMinutes: readPositiveInteger(env, "BRIDGELINE_NO_SHOW_MINUTES", 60),
      maxParticipants: env.BRIDGELINE_MAX_PARTICIPANTS
        ? readPositiveInteger(env, "BRIDGELINE_MAX_PARTICIPANTS", 0)
        : null,
      wrongPinLimit: readPositiveInteger(env, "BRIDGELINE_WRONG_PIN_LIMIT", 10),
      wrongPinWindowMinutes: readPositiveInteger(env, "BRIDGELINE_WRONG_PIN_WINDOW_MINUTES", 15),
      wrongPinsPerMinute: readPositiveInteger(env, "BRIDGELINE_WRONG_PINS_PER_MINUTE", 60),
      pinPromptPlaces: readPositiveInteger(env, "BRIDGELINE_PIN_PROMPT_PLACES", 100),
      pinPromptPlacesPerSource: readPositiveInteger(env, "BRIDGELINE_PIN_PROMPT_PLACES_PER_SOURCE", 10),
    },
  };
}
