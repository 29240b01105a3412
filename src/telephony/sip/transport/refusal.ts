/** The answer to a request the parser refused, built from the header fields it could read (RFC 3261 8.2.6.2). */
import { randomBytes } from "node:crypto";
import { parseNameAddr, parseVia } from "../message/header-values.js";
import type { PartialRequest } from "../message/parser.js";
import { SIP_VERSION, SipHeaders, type SipResponse } from "../message/sip-message.js";
import type { MessageSource } from "./sip-transport.js";
import { stampReceivedVia } from "./via.js";

function reasonPhrase(status: number): string {
  return status === 505 ? "Version Not Supported" : "Bad Request";
}

/** The 400 (or 505) for a request the parser refused, its top Via stamped with where it came from. */
export function buildRefusal(partial: PartialRequest, status: number, source: MessageSource): SipResponse {
  const headers = new SipHeaders();
  partial.via.forEach((value, index) => {
    const via = index === 0 ? parseVia(value) : undefined;
    const stamped = via === undefined ? undefined : stampReceivedVia(via, source.address, source.port);
    headers.append("Via", stamped ?? value);
  });
  if (partial.from !== undefined) headers.append("From", partial.from);
  if (partial.to !== undefined) {
    const to = parseNameAddr(partial.to);
    const hasTag = to === undefined ? /;\s*tag\s*=/i.test(partial.to) : to.params.has("tag");
    headers.append("To", hasTag ? partial.to : `${partial.to};tag=${randomBytes(8).toString("hex")}`);
  }
  if (partial.callId !== undefined) headers.append("Call-ID", partial.callId);
  if (partial.cseq !== undefined) headers.append("CSeq", partial.cseq);
  return {
    kind: "response",
    status,
    reason: reasonPhrase(status),
    version: SIP_VERSION,
    headers,
    body: Buffer.alloc(0),
  };
}
