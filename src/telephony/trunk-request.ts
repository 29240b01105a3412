/**
 * What an INVITE placed through a trunk carries: the Request-URI with the number as the trunk wants
 * it, the caller in From (or an anonymous one), and the Route, Privacy and trunk's own headers.
 */
import type { Hop } from "./dial-plan.js";
import type { Identity } from "./sip/user-agent/user-agent.js";
import { dialString, formatNumber, type Trunk, uriUser } from "./trunk.js";

/**
 * The Request-URI of a call to `e164` through `trunk` (whose URI is `own`). The trunk's scheme and
 * transport carry over: a sips: or TLS trunk is called over TLS only.
 */
export function trunkRequestUri(trunk: Trunk, own: Hop, e164: string): string {
  const trunkUri = own.uri;
  const port = trunkUri.port === undefined ? "" : `:${trunkUri.port}`;
  const scheme = trunkUri.scheme === "sips" ? "sips" : "sip";
  // The trunk's own transport goes in the Request-URI, whatever the first hop (an outbound proxy).
  const transportName = own.destination.transport;
  const transport =
    transportName === "UDP" || scheme === "sips" ? "" : `;transport=${transportName.toLowerCase()}`;
  const dialled = dialString(trunk, e164);
  const userPhone = trunk.userPhone && isGlobalNumber(dialled) ? ";user=phone" : "";
  return `${scheme}:${uriUser(dialled)}@${trunkUri.host}${port}${userPhone}${transport}`;
}

/**
 * Whether a URI user (a caller ID, a number as dialled) is a global telephone number, +E.164:
 * readCallerId keeps North American caller IDs so. Only such a number is written with
 * `;user=phone` or as a tel: URI: a local one would need a phone-context (RFC 3966 section 5.1.5)
 * the trunk gives none of.
 */
function isGlobalNumber(user: string): boolean {
  return /^\+\d{8,15}$/.test(user);
}

/**
 * The caller as the trunk wants it written: `callerId` in its number format, with its caller name,
 * in its From domain, `;user=phone` on a number when it asks.
 */
export function trunkCaller(trunk: Trunk, callerId: string): Identity {
  const user = formatNumber(callerId, trunk.numberFormat ?? "+E164");
  return {
    user: uriUser(user),
    ...(trunk.callerName === undefined ? {} : { displayName: trunk.callerName }),
    ...(trunk.fromDomain === undefined ? {} : { host: trunk.fromDomain }),
    ...(trunk.userPhone && isGlobalNumber(user) ? { params: ";user=phone" } : {}),
  };
}

/**
 * Our P-Asserted-Identity (RFC 3325) in the trunk's form: as From, as +E.164 with `;user=phone`, or
 * a tel: URI (RFC 3966 global number); a caller ID that is not a number is written as From is.
 */
export function trunkAssertedIdentity(trunk: Trunk, callerId: string): Identity {
  const caller = trunkCaller(trunk, callerId);
  if (!isGlobalNumber(callerId)) return caller;
  const named = trunk.callerName === undefined ? {} : { displayName: trunk.callerName };
  switch (trunk.assertedIdentityForm ?? "sip") {
    case "sip":
      return caller;
    case "e164":
      return { ...caller, user: uriUser(callerId), params: ";user=phone" };
    case "tel":
      return { ...named, user: callerId, uri: `tel:${callerId}` };
  }
}

/** Whether the trunk withholds the caller's identity (RFC 3323): From is then ANONYMOUS. */
export function withholdsIdentity(trunk: Trunk): boolean {
  return trunk.privacy === "id";
}

/** The headers an INVITE through the trunk carries beside the stack's: Route, Privacy, its own. */
export function trunkHeaders(trunk: Trunk): (readonly [string, string])[] {
  const headers: (readonly [string, string])[] = [];
  if (trunk.outboundProxy != null) headers.push(["Route", looseRoute(trunk.outboundProxy)]);
  if (withholdsIdentity(trunk)) headers.push(["Privacy", "id"]);
  headers.push(...(trunk.headers ?? []));
  return headers;
}

/** A Route header value sending a request through `proxy` first (RFC 3261 section 16.12.1.1: lr). */
export function looseRoute(proxy: string): string {
  return /;lr(?:[;=?]|$)/i.test(proxy) ? `<${proxy}>` : `<${proxy};lr>`;
}

/** The From of a call whose caller withholds their identity (RFC 3323 section 4.1.1.3). */
export const ANONYMOUS = { user: "anonymous", displayName: "Anonymous", host: "anonymous.invalid" } as const;
