/**
 * The trunk profile file (BRIDGELINE_SIP_TRUNKS_FILE): named trunks, the default one and the dial
 * plan, in YAML, for what environment variables cannot say readably (per-carrier credentials,
 * number formats, caller ID, extra headers). The format is in docs/telephony.md#trunk-profiles.
 * Every scalar is read as text (YAML's failsafe schema), so that `+16045550100` and `0011#` keep
 * their digits; each mistake is reported with its line.
 */
import { createRequire } from "node:module";
import type { Node, YAMLMap } from "yaml";
import { normalizeNanpNumber } from "./domain/phone.js";
import { SRTP_POLICIES } from "./telephony/media/rtp/srtp-suites.js";
import {
  AUDIO_CODECS,
  type AudioCodec,
  audioCodecNamed,
  WIDEBAND_AUDIO_CODECS,
} from "./telephony/sdp/session-description.js";
import { isToken } from "./telephony/sip/message/header-values.js";
import { RELIABLE_PROVISIONAL } from "./telephony/sip/user-agent/user-agent.js";
import {
  ASSERTED_IDENTITY_FORMS,
  DTMF_METHODS,
  NUMBER_FORMATS,
  readTrunkUri,
  STACK_HEADERS,
  type Trunk,
  type TrunkUri,
} from "./telephony/trunk.js";
import { MIN_CALLS_PER_SECOND } from "./telephony/trunk-pacing.js";

/** yaml, loaded when a profile file is read: most starts have none, and it takes 40 ms to load. */
let yamlModule: typeof import("yaml") | undefined;
function yaml(): typeof import("yaml") {
  yamlModule ??= createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return yamlModule;
}

/** A mistake in the file, at a line (1-based). */
export class TrunkProfileError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = "TrunkProfileError";
  }
}

export interface DialPlanSettings {
  /** The trunk for numbers no route takes; null: those cannot be called. */
  readonly trunk: Trunk | null;
  /** Number prefixes to trunks, longest prefix first. */
  readonly routes: readonly { readonly prefix: string; readonly trunk: Trunk }[];
}

const DEFAULT_REGISTER_EXPIRES = 3600;

/**
 * A caller ID as the From user: a North American number, kept as +1NPANXXXXXX so that each trunk
 * writes it its own way, or a plain user name (other digits as they are); undefined when neither.
 */
export function readCallerId(text: string): string | undefined {
  const number = /^[+\d\s().-]+$/.test(text) ? normalizeNanpNumber(text) : null;
  if (number !== null) return `+1${number.subscriberNumber}`;
  return /^\+?[A-Za-z0-9._-]+$/.test(text) ? text : undefined;
}

/** Reads and checks the profile file's text; throws TrunkProfileError at the first mistake. */
export function parseTrunkProfiles(text: string): DialPlanSettings {
  const lines = new (yaml().LineCounter)();
  const document = yaml().parseDocument(text, { schema: "failsafe", lineCounter: lines, uniqueKeys: true });
  const lineOf = (node: Node | null | undefined): number =>
    node?.range == null ? 1 : lines.linePos(node.range[0]).line;
  const [syntax] = document.errors;
  if (syntax !== undefined)
    throw new TrunkProfileError(
      syntax.linePos?.[0].line ?? 1,
      // yaml's message repeats the position and quotes the source after it: the line is said once.
      (syntax.message.split("\n")[0] as string).replace(/ at line \d+, column \d+:?$/, ""),
    );

  const root = document.contents;
  if (!yaml().isMap(root)) throw new TrunkProfileError(lineOf(root), "the file must be a map with trunks:");
  const top = entries(root, lineOf, ["trunks", "default", "routes"]);
  const trunksNode = top.get("trunks");
  if (trunksNode === undefined) throw new TrunkProfileError(1, "trunks: is missing");
  if (!yaml().isMap(trunksNode.value) || trunksNode.value.items.length === 0)
    throw new TrunkProfileError(trunksNode.line, "trunks: must map each trunk's name to its settings");

  const trunks = new Map<string, Trunk>();
  for (const item of trunksNode.value.items) {
    const name = scalarText(item.key as Node, lineOf, "a trunk's name");
    if (!yaml().isMap(item.value))
      throw new TrunkProfileError(lineOf(item.key as Node), `trunk ${name}: its settings must be a map`);
    trunks.set(name, readTrunk(name, item.value, lineOf));
  }
  const named = (node: { value: unknown; line: number }, what: string): Trunk => {
    const name = scalarText(node.value as Node, lineOf, what);
    const trunk = trunks.get(name);
    if (trunk === undefined)
      throw new TrunkProfileError(
        node.line,
        `${what} names no trunk: "${name}" (trunks: ${[...trunks.keys()].join(", ")})`,
      );
    return trunk;
  };

  const defaultNode = top.get("default");
  const trunk =
    defaultNode !== undefined
      ? named(defaultNode, "default:")
      : trunks.size === 1
        ? ([...trunks.values()][0] as Trunk)
        : null;
  const routes: { prefix: string; trunk: Trunk }[] = [];
  const routesNode = top.get("routes");
  if (routesNode !== undefined) {
    if (!yaml().isMap(routesNode.value))
      throw new TrunkProfileError(routesNode.line, "routes: must map number prefixes to trunk names");
    for (const item of routesNode.value.items) {
      const line = lineOf(item.key as Node);
      const prefix = scalarText(item.key as Node, lineOf, "a route's prefix");
      if (!/^\+?\d+$/.test(prefix))
        throw new TrunkProfileError(
          line,
          `a route's prefix must be digits such as "+1604555", got "${prefix}"`,
        );
      routes.push({ prefix, trunk: named({ value: item.value, line }, `route ${prefix}`) });
    }
  }
  if (trunk === null && routes.length === 0)
    throw new TrunkProfileError(
      1,
      "with several trunks, default: or routes: must say which calls take which",
    );
  return { trunk, routes: routes.sort((a, b) => b.prefix.length - a.prefix.length) };
}

/** The settings of one trunk profile (keys as in docs/telephony.md#trunk-profiles). */
function readTrunk(name: string, map: YAMLMap, lineOf: LineOf): Trunk {
  const settings = entries(map, lineOf, [
    "uri",
    "outbound-proxy",
    "username",
    "password",
    "register",
    "register-expires",
    "register-contact-user",
    "number-format",
    "tech-prefix",
    "caller-id",
    "caller-name",
    "asserted-identity",
    "privacy",
    "headers",
    "codecs",
    "dtmf",
    "srtp",
    "mutual-tls",
    "options",
    "from-domain",
    "user-phone",
    "session-timer",
    "100rel",
    "follow-redirects",
    "calls-per-second",
    "max-channels",
  ]);
  const fail: Fail = (line, message) => {
    throw new TrunkProfileError(line, `trunk ${name}: ${message}`);
  };
  const text = (key: string): { value: string; line: number } | undefined => {
    const entry = settings.get(key);
    if (entry === undefined) return undefined;
    if (!yaml().isScalar(entry.value) || typeof entry.value.value !== "string" || entry.value.value === "")
      return fail(entry.line, `${key} must be a value`);
    return { value: entry.value.value, line: entry.line };
  };
  const oneOf = <T extends string>(key: string, choices: readonly T[]): T | undefined => {
    const entry = text(key);
    if (entry === undefined) return undefined;
    // Spelling is forgiven, not case: "e164" is E164.
    const choice = choices.find((known) => known.toLowerCase() === entry.value.toLowerCase());
    return choice ?? fail(entry.line, `${key} must be one of ${choices.join(", ")}, got "${entry.value}"`);
  };
  const sipUri = (key: string): TrunkUri | undefined => {
    const entry = text(key);
    if (entry === undefined) return undefined;
    const read = readTrunkUri(entry.value);
    return typeof read === "string" ? fail(entry.line, `${key} ${read}`) : read;
  };

  const uri = sipUri("uri") ?? fail(lineOf(map), "uri: is missing");
  const username = text("username");
  const password = text("password");
  if ((username === undefined) !== (password === undefined))
    fail((username ?? password)?.line ?? 1, "username and password must be given together");
  const credentials =
    username === undefined || password === undefined
      ? null
      : { username: username.value, password: password.value };

  const register = text("register");
  const expires = text("register-expires");
  const contactUser = text("register-contact-user");
  if (contactUser !== undefined && !/^[A-Za-z0-9\-_.!~*'()&=+$,;?/]+$/.test(contactUser.value))
    fail(
      contactUser.line,
      `register-contact-user must be a SIP URI user such as +16045550100, got "${contactUser.value}"`,
    );
  let registration: Trunk["registration"] = null;
  if (register !== undefined && register.value !== "false") {
    if (credentials === null) fail(register.line, "register needs username and password");
    if (register.value !== "true" && typeof readTrunkUri(register.value) === "string")
      fail(register.line, `register must be true, false or a registrar's SIP URI, got "${register.value}"`);
    const seconds = expires === undefined ? DEFAULT_REGISTER_EXPIRES : Number(expires.value);
    if (expires !== undefined && (!/^\d+$/.test(expires.value) || seconds < 1))
      fail(expires.line, `register-expires must be a whole number of seconds, got "${expires.value}"`);
    registration = {
      ...(register.value === "true" ? {} : { registrar: register.value }),
      expires: seconds,
      ...(contactUser === undefined ? {} : { contactUser: contactUser.value }),
    };
  } else if (expires !== undefined) fail(expires.line, "register-expires is set but register is not");
  else if (contactUser !== undefined)
    fail(contactUser.line, "register-contact-user is set but register is not");

  const techPrefix = text("tech-prefix");
  if (techPrefix !== undefined && !/^[0-9A-Za-z*#+._-]+$/.test(techPrefix.value))
    fail(techPrefix.line, `tech-prefix must be digits, letters, *, # or +, got "${techPrefix.value}"`);
  const callerIdText = text("caller-id");
  const callerId = callerIdText === undefined ? undefined : readCallerId(callerIdText.value);
  if (callerIdText !== undefined && callerId === undefined)
    fail(
      callerIdText.line,
      `caller-id must be a number such as +16045550100 or a user name, got "${callerIdText.value}"`,
    );
  const callerName = text("caller-name");
  if (callerName !== undefined && /[\r\n\0]/.test(callerName.value))
    fail(callerName.line, "caller-name must be one line");
  const assertedIdentity = oneOf("asserted-identity", ["true", "false", ...ASSERTED_IDENTITY_FORMS] as const);
  const fromDomain = text("from-domain");
  if (
    fromDomain !== undefined &&
    !/^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.?$/.test(
      fromDomain.value,
    )
  )
    fail(
      fromDomain.line,
      `from-domain must be a host name such as carrier.example, got "${fromDomain.value}"`,
    );
  const reliableProvisional = oneOf("100rel", RELIABLE_PROVISIONAL);
  const sessionTimerText = text("session-timer");
  let sessionTimer: Trunk["sessionTimer"];
  if (sessionTimerText !== undefined) {
    sessionTimer = sessionTimerText.value === "off" ? "off" : Number(sessionTimerText.value);
    // RFC 4028 section 4: no interval below 90 s.
    if (sessionTimer !== "off" && (!/^\d+$/.test(sessionTimerText.value) || sessionTimer < 90))
      fail(
        sessionTimerText.line,
        `session-timer must be whole seconds, at least 90 (RFC 4028), or off, got "${sessionTimerText.value}"`,
      );
  }
  const callsPerSecond = text("calls-per-second");
  // A rate written as a decimal (0.5: one call every 2 s); 0 would stop calls altogether.
  if (
    callsPerSecond !== undefined &&
    !(/^\d+(\.\d+)?$/.test(callsPerSecond.value) && Number(callsPerSecond.value) >= MIN_CALLS_PER_SECOND)
  )
    fail(
      callsPerSecond.line,
      `calls-per-second must be a number of at least ${MIN_CALLS_PER_SECOND} such as 10 or 0.5, got "${callsPerSecond.value}"`,
    );
  const maxChannels = text("max-channels");
  if (maxChannels !== undefined && !(/^\d+$/.test(maxChannels.value) && Number(maxChannels.value) >= 1))
    fail(maxChannels.line, `max-channels must be a whole number of at least 1, got "${maxChannels.value}"`);
  const srtp = oneOf("srtp", SRTP_POLICIES);
  const mutualTls = oneOf("mutual-tls", ["true", "false"] as const);
  if (mutualTls === "true" && uri.transport !== "TLS")
    fail(
      settings.get("mutual-tls")?.line ?? 1,
      `mutual-tls needs a TLS trunk (sips: or ;transport=tls), got ${uri.uri}`,
    );

  return {
    uri: uri.uri,
    outboundProxy: sipUri("outbound-proxy")?.uri ?? null,
    credentials,
    registration,
    numberFormat: oneOf("number-format", NUMBER_FORMATS),
    techPrefix: techPrefix?.value,
    callerId,
    callerName: callerName?.value,
    assertedIdentity: assertedIdentity !== undefined && assertedIdentity !== "false",
    ...(assertedIdentity === "e164" || assertedIdentity === "tel"
      ? { assertedIdentityForm: assertedIdentity }
      : {}),
    ...(fromDomain === undefined ? {} : { fromDomain: fromDomain.value }),
    ...(oneOf("user-phone", ["true", "false"] as const) === "true" ? { userPhone: true } : {}),
    ...(sessionTimer === undefined ? {} : { sessionTimer }),
    ...(reliableProvisional === undefined ? {} : { reliableProvisional }),
    ...(oneOf("follow-redirects", ["true", "false"] as const) === "true" ? { followRedirects: true } : {}),
    privacy: oneOf("privacy", ["none", "id"] as const),
    headers: readHeaders(settings.get("headers"), lineOf, fail),
    codecs: readCodecs(settings.get("codecs"), lineOf, fail),
    dtmf: oneOf("dtmf", DTMF_METHODS),
    srtp: srtp ?? uri.srtp,
    mutualTls: mutualTls === "true",
    probe: readProbe(settings.get("options"), lineOf, fail),
    ...(callsPerSecond === undefined ? {} : { callsPerSecond: Number(callsPerSecond.value) }),
    ...(maxChannels === undefined ? {} : { maxChannels: Number(maxChannels.value) }),
  };
}

/**
 * `options:`, how the trunk's servers are probed with OPTIONS (docs/telephony.md#trunk-health):
 * `interval` and `timeout` in seconds (fractions allowed; an interval of 0 turns probing off for the
 * trunk), `up-after` and `down-after` whole numbers; each left out is the service's.
 */
function readProbe(entry: Entry | undefined, lineOf: LineOf, fail: Fail): Trunk["probe"] {
  if (entry === undefined) return undefined;
  if (!yaml().isMap(entry.value))
    return fail(entry.line, "options must map interval, timeout, up-after and down-after to values");
  const settings = entries(entry.value, lineOf, ["interval", "timeout", "up-after", "down-after"]);
  const number = (key: string, pattern: RegExp, what: string, least: number) => {
    const found = settings.get(key);
    if (found === undefined) return undefined;
    const text = yaml().isScalar(found.value) ? String(found.value.value) : "";
    if (!pattern.test(text) || Number(text) < least)
      return fail(found.line, `options: ${key} must be ${what}, got "${text}"`);
    return { value: Number(text), line: found.line };
  };
  const decimal = /^\d+(\.\d+)?$/;
  const interval = number("interval", decimal, "a number of seconds such as 30 or 0.5 (0: off)", 0);
  const timeout = number("timeout", decimal, "a number of seconds above 0 such as 5", Number.MIN_VALUE);
  const upAfter = number("up-after", /^\d+$/, "a whole number of at least 1", 1);
  const downAfter = number("down-after", /^\d+$/, "a whole number of at least 1", 1);
  if (interval !== undefined && timeout !== undefined && interval.value > 0 && timeout.value > interval.value)
    fail(
      timeout.line,
      `options: timeout must be at most the interval (${interval.value} s), got ${timeout.value}`,
    );
  return {
    ...(interval === undefined ? {} : { intervalMs: Math.round(interval.value * 1000) }),
    ...(timeout === undefined ? {} : { timeoutMs: Math.round(timeout.value * 1000) }),
    ...(upAfter === undefined ? {} : { upAfter: upAfter.value }),
    ...(downAfter === undefined ? {} : { downAfter: downAfter.value }),
  };
}

type Entry = { value: unknown; line: number };
type LineOf = (node: Node | null | undefined) => number;
type Fail = (line: number, message: string) => never;

function readHeaders(entry: Entry | undefined, lineOf: LineOf, fail: Fail) {
  if (entry === undefined) return undefined;
  if (!yaml().isMap(entry.value)) return fail(entry.line, "headers must map header names to values");
  return entry.value.items.map((item): [string, string] => {
    const key = item.key as Node;
    const line = lineOf(key);
    const name = yaml().isScalar(key) ? String(key.value) : "";
    const value = yaml().isScalar(item.value) ? String(item.value.value) : undefined;
    if (!isToken(name)) fail(line, `headers: "${name}" is not a header name`);
    if (STACK_HEADERS.has(name.toLowerCase()))
      fail(line, `headers: ${name} is written by Bridgeline itself (use the profile's own setting)`);
    if (value === undefined || value === "" || /[\r\n\0]/.test(value))
      fail(line, `headers: ${name} must have a one-line value`);
    return [name, value as string];
  });
}

function readCodecs(entry: Entry | undefined, lineOf: LineOf, fail: Fail) {
  if (entry === undefined) return undefined;
  if (!yaml().isSeq(entry.value) || entry.value.items.length === 0)
    return fail(entry.line, `codecs must be a list such as [${AUDIO_CODECS.join(", ")}]`);
  const codecs = entry.value.items.map((item): AudioCodec => {
    const name = yaml().isScalar(item) ? String(item.value) : "";
    return (
      audioCodecNamed(name) ??
      fail(lineOf(item as Node), `codecs: "${name}" is not one of ${WIDEBAND_AUDIO_CODECS.join(", ")}`)
    );
  });
  if (new Set(codecs).size !== codecs.length) fail(entry.line, "codecs names a codec twice");
  return codecs;
}

/** A map's entries by key, with their lines; a key not in `known` is a mistake. */
function entries(map: YAMLMap, lineOf: LineOf, known: readonly string[]): Map<string, Entry> {
  const found = new Map<string, Entry>();
  for (const item of map.items) {
    const key = scalarText(item.key as Node, lineOf, "a key");
    const line = lineOf(item.key as Node);
    if (!known.includes(key))
      throw new TrunkProfileError(line, `unknown setting "${key}" (known: ${known.join(", ")})`);
    found.set(key, { value: item.value, line });
  }
  return found;
}

function scalarText(node: Node | null | undefined, lineOf: LineOf, what: string): string {
  if (!yaml().isScalar(node) || typeof node.value !== "string" || node.value === "")
    throw new TrunkProfileError(lineOf(node), `${what} must be a single value`);
  return node.value;
}
