/** Transaction matching keys (RFC 3261 sections 17.1.3 and 17.2.3). */
import type { SipRequest, SipResponse } from "../message/sip-message.js";
import { MAGIC_COOKIE } from "../transport/via.js";

/**
 * Section 17.1.3: a response matches a client transaction by the branch of its top Via and its CSeq
 * method (so a CANCEL, sharing the INVITE's branch, has a transaction of its own). Computed alike for
 * the request that creates the transaction and the responses to it; undefined without a branch or CSeq.
 */
export function clientTransactionKey(message: SipRequest | SipResponse): string | undefined {
  const branch = message.headers.via?.branch;
  const method = message.kind === "request" ? message.method : message.headers.cseq?.method;
  if (branch === undefined || method === undefined) return undefined;
  return `${branch}|${method}`;
}

/**
 * Section 17.2.3: with a branch starting with the magic cookie, a request matches a server transaction
 * by branch, sent-by of the top Via, and method (and Call-ID and CSeq number, see below), an ACK matching the INVITE it acknowledges (the
 * transaction of an INVITE answered with a non-2xx). A CANCEL keeps its own method, so its transaction
 * differs from the INVITE's. Without such a branch (RFC 2543 elements, RFC 4475 3.1.1.1) a request
 * matches by Request-URI, From tag, Call-ID, CSeq number, the whole top Via and method, an ACK again
 * as its INVITE; the To tag is left out so that the ACK, carrying the tag of our response, still
 * matches. Every key ends with "|method". Undefined without a top Via, Call-ID or CSeq.
 */
export function serverTransactionKey(request: SipRequest): string | undefined {
  const via = request.headers.via;
  if (via === undefined) return undefined;
  const method = request.method === "ACK" ? "INVITE" : request.method;
  const callId = request.headers.callId;
  const cseq = request.headers.cseq;
  if (via.branch?.startsWith(MAGIC_COOKIE)) {
    const sentBy = `${via.host.toLowerCase()}${via.port === undefined ? "" : `:${via.port}`}`;
    // Call-ID and CSeq number are the same in every retransmission, ACK and CANCEL of a request;
    // with them, a client that reuses a branch for new requests (RFC 4475 does) is not mistaken
    // for retransmitting.
    return `${via.branch}|${sentBy}|${callId ?? ""}|${cseq?.seq ?? ""}|${method}`;
  }
  if (callId === undefined || cseq === undefined) return undefined;
  const fromTag = request.headers.from?.tag ?? "";
  // The Via as sent: without what our transport stamped (received, rport's value).
  const sentVia = `${via.transport} ${via.host.toLowerCase()}:${via.port ?? ""};${via.branch ?? ""}`;
  return `rfc2543|${request.uri}|${fromTag}|${callId}|${cseq.seq}|${sentVia}|${method}`;
}
