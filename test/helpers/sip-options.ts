import { randomBytes } from "node:crypto";

/**
 * An OPTIONS request over UDP from `from` (the probe's address and port) to the service on
 * 127.0.0.1:`servicePort`: what the flood tests and benches send to see whether a source is served.
 * The same `callId` and `branch` make a retransmission. With `toTag` it is within a dialog (one the
 * service does not have: answered 481 through a transaction, where one outside is answered statelessly).
 */
export function optionsRequest(
  from: { address: string; port: number },
  servicePort: number,
  callId = randomBytes(8).toString("hex"),
  branch = `z9hG4bK${callId}`,
  toTag?: string,
): string {
  return [
    `OPTIONS sip:service@127.0.0.1:${servicePort} SIP/2.0`,
    `Via: SIP/2.0/UDP ${from.address}:${from.port};branch=${branch}`,
    "Max-Forwards: 70",
    `From: <sip:probe@${from.address}>;tag=${callId}`,
    `To: <sip:service@127.0.0.1>${toTag === undefined ? "" : `;tag=${toTag}`}`,
    `Call-ID: ${callId}`,
    "CSeq: 1 OPTIONS",
    "Content-Length: 0",
    "",
    "",
  ].join("\r\n");
}
