/**
 * A trunk: where placed calls go and how each carrier wants them written. One per route and one
 * default (BRIDGELINE_SIP_TRUNK or the profile file, read in config.ts). Everything here but `uri`
 * has a default that suits a trunk taking plain E.164 over SIP.
 */
import { SRTP_POLICIES, type SrtpPolicy } from "./media/rtp/srtp-suites.js";
import type { AudioCodec } from "./sdp/session-description.js";
import { destinationOfUri } from "./sip/dialog/dialog.js";
import { parseSipUri } from "./sip/message/header-values.js";
import type { TransportName } from "./sip/transport/sip-transport.js";
import type { ReliableProvisional } from "./sip/user-agent/user-agent.js";
import type { ProbeSettings } from "./trunk-probe.js";

/**
 * How the number called is written in the Request-URI and To, for +16045550123:
 * `+E164` +16045550123, `E164` 16045550123, `11-digit` 16045550123 (the same as E164 for the
 * North American numbers this service calls; carriers name it either way), `national` 6045550123.
 */
export type NumberFormat = "+E164" | "E164" | "11-digit" | "national";
export const NUMBER_FORMATS: readonly NumberFormat[] = ["+E164", "E164", "11-digit", "national"];

/**
 * How keys go to the carrier (an attendee's extension): RFC 4733 events (offered in our SDP), SIP
 * INFO, or tones in the audio; with `info` or `inband` no telephone-event is offered, so the carrier
 * sends its own keys those ways. All three are received from every trunk whatever this says.
 */
export type DtmfMethod = "rfc4733" | "info" | "inband";
export const DTMF_METHODS: readonly DtmfMethod[] = ["rfc4733", "info", "inband"];

export interface Trunk {
  /** The trunk's SIP URI: scheme, host (an address, or a name found by RFC 3263), port, transport. */
  readonly uri: string;
  /** Every request goes through this SIP URI first (RFC 3261 section 8.1.2: a route set of one). */
  readonly outboundProxy?: string | null;
  /** Digest credentials, for challenges and for registration. */
  readonly credentials?: { readonly username: string; readonly password: string } | null;
  /** REGISTER as the credentials' user (RFC 3261 section 10) to `registrar`, default the trunk. */
  readonly registration?: {
    readonly registrar?: string;
    readonly expires: number;
    /** The user of the Contact registered (default `bridgeline`): what the carrier's INVITEs to us are addressed to. */
    readonly contactUser?: string;
  } | null;
  readonly numberFormat?: NumberFormat;
  /** Written before the number, e.g. `1234#` (after any `+`-less formatting). */
  readonly techPrefix?: string;
  /** The From user: a number, formatted like the number called when it is one, or a user name. */
  readonly callerId?: string;
  /** The From display name. */
  readonly callerName?: string;
  /** Our identity in P-Asserted-Identity too (RFC 3325), as carriers that bill by it ask. */
  readonly assertedIdentity?: boolean;
  /**
   * How P-Asserted-Identity writes a caller ID that is a number: `sip` as From does (the trunk's
   * number format), `e164` as +E.164 with `;user=phone`, `tel` as a tel: URI (RFC 3966); default sip.
   */
  readonly assertedIdentityForm?: AssertedIdentityForm;
  /** The host of From and P-Asserted-Identity, for carriers that check it (default our address). */
  readonly fromDomain?: string;
  /**
   * `;user=phone` (RFC 3261 section 19.1.1) on a Request-URI and To, From or P-Asserted-Identity
   * whose user is a +E.164 number; a number written nationally would need a phone-context.
   */
  readonly userPhone?: boolean;
  /** The session timer asked of the trunk (RFC 4028): its interval in seconds, or off; default the service's. */
  readonly sessionTimer?: number | "off";
  /** Reliable provisional responses (RFC 3262): offered (default), required of the trunk, or not offered. */
  readonly reliableProvisional?: ReliableProvisional;
  /** `id`: the identity withheld from the called party (RFC 3323): an anonymous From, `Privacy: id`. */
  readonly privacy?: "none" | "id";
  /** Headers added to every INVITE, as the carrier asks (account codes and the like). */
  readonly headers?: readonly (readonly [string, string])[];
  /** The codecs offered and accepted, preferred first, in this order; default the service's (TelephonyOptions.codecs). */
  readonly codecs?: readonly AudioCodec[];
  readonly dtmf?: DtmfMethod;
  /** SRTP for calls placed through it; default the service's. */
  readonly srtp?: SrtpPolicy;
  /**
   * Mutual TLS (a TLS trunk only): its connections to us must present a certificate that chains to
   * BRIDGELINE_SIP_TLS_CA and names its host. Ours is presented to any server that asks.
   */
  readonly mutualTls?: boolean;
  /**
   * A 301/302 of this trunk's to another North American number has that number called through the
   * dial plan (never the Contact's host), when the placer allows it (PlaceCallOptions.allowRedirect);
   * default off, every 3xx failing the call (toll safety).
   */
  readonly followRedirects?: boolean;
  /** How its servers are probed with OPTIONS (its profile's `options:`), over the service's settings. */
  readonly probe?: Partial<ProbeSettings> | null;
  /**
   * INVITEs a second through it at most, above 0, fractions allowed (0.5: one every 2 s): calls past
   * it wait their turn (trunk-pacing.ts); undefined: no limit.
   */
  readonly callsPerSecond?: number;
  /** Calls through it at once at most (from the INVITE sent until failed or ended); undefined: no limit. */
  readonly maxChannels?: number;
}

export type AssertedIdentityForm = "sip" | "e164" | "tel";
export const ASSERTED_IDENTITY_FORMS: readonly AssertedIdentityForm[] = ["sip", "e164", "tel"];

/** A trunk's or proxy's URI, read once when the settings are. */
export interface TrunkUri {
  readonly uri: string;
  /** Its `;srtp=` parameter: how a trunk given by its URI alone sets its SRTP. */
  readonly srtp: SrtpPolicy | undefined;
  /** What requests to it travel over: TLS for sips: or `;transport=tls`, else the parameter or UDP. */
  readonly transport: TransportName;
}

/** Reads a trunk's or proxy's SIP URI; a string is why the text is not one. */
export function readTrunkUri(text: string): TrunkUri | string {
  const parsed = parseSipUri(text);
  const destination = parsed === undefined ? undefined : destinationOfUri(parsed);
  if (parsed === undefined || destination === undefined)
    return `must be a SIP URI such as sip:127.0.0.1:5070, got "${text}"`;
  const srtpText = parsed.params.get("srtp");
  if (srtpText === undefined) return { uri: text, srtp: undefined, transport: destination.transport };
  const srtp = SRTP_POLICIES.find((policy) => policy === srtpText);
  if (srtp === undefined)
    return `a trunk's ;srtp= must be ${SRTP_POLICIES.join(", ")}, got "${srtpText}" in ${text}`;
  return { uri: text, srtp, transport: destination.transport };
}

/** A trunk given by its URI alone: every setting its default but SRTP, from `;srtp=`. */
export function trunkOf(read: TrunkUri): Trunk {
  return read.srtp === undefined ? { uri: read.uri } : { uri: read.uri, srtp: read.srtp };
}

/** A trunk given by its URI alone, unchecked (a test's or a tool's): its `;srtp=` is taken when valid. */
export function trunkOfUri(uri: string): Trunk {
  const read = readTrunkUri(uri);
  return typeof read === "string" ? { uri } : trunkOf(read);
}

/** The number called, +1NPANXXXXXX, written the way `trunk` wants it. */
export function dialString(trunk: Trunk, e164: string): string {
  return `${trunk.techPrefix ?? ""}${formatNumber(e164, trunk.numberFormat ?? "+E164")}`;
}

/** A +E.164 number in `format`; anything else (a user name) as it is. */
export function formatNumber(number: string, format: NumberFormat): string {
  const match = /^\+1(\d{10})$/.exec(number);
  if (match === null) return number;
  switch (format) {
    case "+E164":
      return number;
    case "E164":
    case "11-digit":
      return number.slice(1);
    case "national":
      return match[1] as string;
  }
}

/** Headers the stack writes itself: a profile's extra headers may not be one of them. */
export const STACK_HEADERS: ReadonlySet<string> = new Set([
  "via",
  "v",
  "from",
  "f",
  "to",
  "t",
  "call-id",
  "i",
  "cseq",
  "contact",
  "m",
  "max-forwards",
  "route",
  "record-route",
  "content-type",
  "c",
  "content-length",
  "l",
  "allow",
  "supported",
  "k",
  "require",
  "session-expires",
  "x",
  "min-se",
  "authorization",
  "proxy-authorization",
  "p-asserted-identity",
  "privacy",
]);

/**
 * Text as a SIP URI's user part (RFC 3261 section 25.1: unreserved and user-unreserved characters
 * as they are, the rest escaped), so that a tech prefix's `#` goes out as `%23`.
 */
export function uriUser(text: string): string {
  return text.replace(/[^A-Za-z0-9\-_.!~*'()&=+$,;?/]/g, (character) =>
    [...Buffer.from(character)]
      .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`)
      .join(""),
  );
}
