/**
 * A placed call's attempts: after the call through one trunk fails, whether the next trunk is tried
 * (the failure says that trunk could not carry it) and whether a 3xx's number is called again through
 * our own dial plan (RFC 3261 section 8.1.3.4). Pure decisions; telephony.ts runs the attempts.
 */
import { normalizeNanpNumber } from "../domain/phone.js";
import { parseSipUri } from "./sip/message/header-values.js";

/** INVITEs through a trunk one call may send, a redirect's included. */
export const MAX_TRUNKS_PER_CALL = 3;

/** Where a placed call stands: the number called now, its trunks in order, the one tried. */
export interface Attempts<T> {
  /** The number called now, +1NPANXXXXXX: the one placed, or the one a 3xx named. */
  readonly number: string;
  /** The trunks for that number, in the order to try them (dial-plan.ts trunkCandidates, filtered). */
  readonly trunks: readonly T[];
  /** The trunk of `trunks` tried now. */
  readonly index: number;
  /** Attempts made for the call, this one included (1 for the first INVITE). */
  readonly attempt: number;
  /** The number a 3xx moved the call from; undefined until one did (a call follows one at most). */
  readonly redirectedFrom: string | undefined;
}

/**
 * Whether an attempt's failure says its trunk could not carry the call, so the next is tried: no
 * server answered (408 of Timer B or of the server timeout) or none was reached (503 of a transport
 * error or a failed lookup), both of our own making (`fromResponse` false); or the trunk's final 5xx
 * ("network out of order") but 501 and 505, which another trunk would answer the same. A 4xx or 6xx
 * is the callee's answer (busy, not found, declined), a 487 our own CANCEL: they end the call.
 */
export function failsOverTrunk(status: number, fromResponse: boolean): boolean {
  if (!fromResponse) return status === 408 || status === 503;
  return status >= 500 && status < 600 && status !== 501 && status !== 505;
}

/** What a 3xx leads to: the number to call through the dial plan, or why it is not followed. */
export type Redirect = { readonly number: string } | { readonly refused: string };

export interface RedirectRules {
  /** The trunk's `follow-redirects`: off, the default, refuses every 3xx (toll safety). */
  readonly follow: boolean;
  /** The caller's word on the number (its calling policy); absent, no redirect is followed. */
  readonly allow: ((e164: string) => boolean) | undefined;
  /** The number a 3xx moved the call from already, if one did: a second 3xx is not followed. */
  readonly redirectedFrom: string | undefined;
  /** The number the 3xx answered a call to. */
  readonly calling: string;
}

/**
 * RFC 3261 section 8.1.3.4, as far as a service that calls North American numbers through its own
 * trunks goes: a 301 or 302 whose (first) Contact is a sip:, sips: or tel: URI with a telephone
 * number for its user has that number called again through our dial plan, never through the
 * Contact's host, when the trunk follows redirects and the caller allows the number; one redirect per
 * call, and not back to the number called. 305 Use Proxy is refused (a proxy's, section 21.3.6: a
 * UAC that takes it sends its calls where a stranger says); 300 and 380 too. Undefined: not a 3xx.
 */
export function redirectOf(
  status: number,
  contact: string | undefined,
  rules: RedirectRules,
): Redirect | undefined {
  if (status < 300 || status >= 400) return undefined;
  if (status === 305)
    return { refused: "305 Use Proxy is not followed (a proxy's, RFC 3261 section 8.1.3.4)" };
  if (status !== 301 && status !== 302) return { refused: `${status} is not followed, only 301 and 302` };
  if (!rules.follow) return { refused: "the trunk does not follow redirects (follow-redirects)" };
  if (rules.allow === undefined) return { refused: "the caller allows no redirect" };
  if (rules.redirectedFrom !== undefined) return { refused: "the call was redirected once already" };
  const number = contact === undefined ? undefined : numberOfUri(contact);
  if (number === undefined)
    return { refused: `the Contact names no North American number: ${contact ?? "(none)"}` };
  if (number === rules.calling) return { refused: `the Contact names the number called, ${number}` };
  if (!rules.allow(number)) return { refused: `the caller does not allow calls to ${number}` };
  return { number };
}

/** The North American number a sip:, sips: or tel: URI's user is, as +1NPANXXXXXX; else undefined. */
function numberOfUri(text: string): string | undefined {
  const uri = parseSipUri(text);
  const user = uri?.user;
  // RFC 3966 visual separators allowed; anything else (a name, an extension) is not a number.
  if (user === undefined || !/^\+?[\d\-.()]+$/.test(user)) return undefined;
  const nanp = normalizeNanpNumber(user);
  return nanp === null ? undefined : `+1${nanp.subscriberNumber}`;
}
