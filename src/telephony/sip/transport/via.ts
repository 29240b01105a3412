/** Via header field handling for the transport layer (RFC 3261 18.1.1, 18.2.1, 18.2.2; RFC 3581). */
import { randomBytes } from "node:crypto";
import { isIPv6 } from "node:net";
import type { Params, Via } from "../message/header-values.js";

/** The port a sent-by without one means for UDP and TCP (RFC 3261 18.1.1, 19.1.2). */
export const DEFAULT_SIP_PORT = 5060;
/** SIP over TLS (RFC 3261 section 26.2.1, sips: URIs). */
export const DEFAULT_SIPS_PORT = 5061;

/** The branch prefix of RFC 3261-compliant elements (section 8.1.1.7). */
export const MAGIC_COOKIE = "z9hG4bK";

/** A Via branch unique in space and time (section 8.1.1.7): the magic cookie and 96 random bits. */
export function newBranch(): string {
  return `${MAGIC_COOKIE}${randomBytes(12).toString("hex")}`;
}

/** An IPv4-mapped IPv6 address as its IPv4 form, an IPv6 reference without brackets, lower-cased. */
export function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.startsWith("::ffff:") && h.includes(".")) h = h.slice(7);
  return h;
}

/** A host as written in a sent-by: IPv6 addresses in brackets (RFC 3261 25.1 IPv6reference). */
export function formatHost(host: string): string {
  return isIPv6(host) ? `[${host}]` : host;
}

export function formatVia(via: Via, params: Params, sentBy?: { host: string; port: number }): string {
  const hostPort =
    sentBy === undefined
      ? `${via.host}${via.port === undefined ? "" : `:${via.port}`}`
      : `${formatHost(sentBy.host)}:${sentBy.port}`;
  return `${via.protocol}/${via.version}/${via.transport} ${hostPort}${formatParams(params)}`;
}

function formatParams(params: Params): string {
  let text = "";
  for (const [name, value] of params) text += value === undefined ? `;${name}` : `;${name}=${value}`;
  return text;
}

/**
 * The top Via of a received request as RFC 3261 18.2.1 and RFC 3581 section 4 want it: `received`
 * when the sent-by host is not the packet's source address (and always alongside a filled `rport`), and
 * `rport` set to the source port when it was requested without a value. Undefined when it stays as sent.
 */
export function stampReceivedVia(via: Via, sourceAddress: string, sourcePort: number): string | undefined {
  const source = normalizeHost(sourceAddress);
  const differs = normalizeHost(via.host) !== source;
  if (!differs && via.rport !== true) return undefined;
  const params = new Map(via.params);
  params.set("received", source);
  if (via.rport === true) params.set("rport", String(sourcePort));
  return formatVia(via, params);
}

/** Where a response goes over an unreliable transport (RFC 3261 18.2.2, RFC 3581 section 4). */
export function responseTarget(via: Via): { host: string; port: number } {
  const maddr = via.params.get("maddr");
  if (maddr !== undefined) return { host: normalizeHost(maddr), port: via.port ?? DEFAULT_SIP_PORT };
  if (via.received !== undefined) {
    return {
      host: normalizeHost(via.received),
      port: typeof via.rport === "number" ? via.rport : (via.port ?? DEFAULT_SIP_PORT),
    };
  }
  return { host: normalizeHost(via.host), port: via.port ?? DEFAULT_SIP_PORT };
}
