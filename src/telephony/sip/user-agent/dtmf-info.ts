/** Keys sent by SIP INFO (RFC 6086, legacy use without Info-Package), as phones and carriers send them. */
import type { SipRequest } from "../message/sip-message.js";
import { responseTo, type ServerTransaction } from "../transaction/transaction-layer.js";

/**
 * Answers an INFO within a dialog: keys in the two bodies phones and carriers send go to `onKey`; an
 * INFO without a body (a keep-alive) is taken; other bodies get 415 with what we accept.
 */
export function answerInfo(
  request: SipRequest,
  transaction: ServerTransaction,
  onKey: (key: string) => void,
): void {
  const type = request.headers.contentType?.mediaType ?? "";
  if (request.body.length > 0 && type !== "application/dtmf-relay" && type !== "application/dtmf") {
    transaction.respond(
      responseTo(request, 415, "Unsupported Media Type", {
        headers: [["Accept", "application/dtmf-relay, application/dtmf"]],
      }),
    );
    return;
  }
  transaction.respond(responseTo(request, 200, "OK"));
  const key = request.body.length === 0 ? undefined : dtmfKeyOf(type, request.body.toString());
  if (key !== undefined) onKey(key);
}

/** The event codes of RFC 4733 section 3.2 that are keys: 0-9, *, #, A-D (10 is *, 11 is #). */
const DTMF_KEYS = "0123456789*#ABCD";

/**
 * The key an INFO body names: `Signal=5` (application/dtmf-relay, one `Name=value` per line) or the key
 * itself (application/dtmf); an event code 0-15 counts as its key. Undefined for anything else.
 */
export function dtmfKeyOf(type: string, body: string): string | undefined {
  const value =
    type === "application/dtmf-relay" ? /^\s*signal\s*=\s*(\S+)\s*$/im.exec(body)?.[1] : body.trim();
  if (value === undefined) return undefined;
  const key = /^\d+$/.test(value) && Number(value) <= 15 ? DTMF_KEYS[Number(value)] : value.toUpperCase();
  return key !== undefined && key.length === 1 && DTMF_KEYS.includes(key) ? key : undefined;
}
