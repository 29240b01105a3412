/**
 * Valid SIP messages to start mutations from: each request method the service meets (INVITE with
 * SDP to the access number and to another number, OPTIONS, REGISTER, BYE, CANCEL, ACK, INFO, UPDATE,
 * PRACK, methods it does not know), responses to nothing, short sequences (an INVITE then its CANCEL
 * or a BYE before the ACK), and the RFC 4475 torture messages. Fresh Call-ID, tags and branch each.
 */
import { TORTURE_CASES, tortureBytes } from "../../test/helpers/torture.js";
import type { Random } from "./random.js";
import { offerSdp } from "./sip-peer.js";

export interface Origin {
  readonly transport: "UDP" | "TCP" | "TLS";
  readonly host: string;
  readonly port: number;
  readonly servicePort: number;
  readonly accessNumber: string;
}

const TORTURE = TORTURE_CASES.map((torture) => tortureBytes(torture).toString("latin1"));

function ids(rng: Random) {
  const id = rng.uint32().toString(36) + rng.uint32().toString(36);
  return { callId: `${id}@fuzz`, tag: `t${id}`, branch: `z9hG4bK${id}` };
}

function request(
  origin: Origin,
  method: string,
  to: string,
  seed: ReturnType<typeof ids>,
  extra: string[] = [],
  body = "",
  cseqMethod = method,
): string {
  const uri = `sip:${to}@127.0.0.1:${origin.servicePort}`;
  return [
    `${method} ${uri} SIP/2.0`,
    `Via: SIP/2.0/${origin.transport} ${origin.host}:${origin.port};branch=${seed.branch};rport`,
    `From: "Fuzz" <sip:+16045550123@${origin.host}>;tag=${seed.tag}`,
    `To: <${uri}>`,
    `Call-ID: ${seed.callId}`,
    `CSeq: 1 ${cseqMethod}`,
    `Contact: <sip:fuzz@${origin.host}:${origin.port};transport=${origin.transport.toLowerCase()}>`,
    "Max-Forwards: 70",
    ...extra,
    `Content-Length: ${Buffer.byteLength(body)}`,
    "",
    body,
  ].join("\r\n");
}

function response(
  origin: Origin,
  status: string,
  seed: ReturnType<typeof ids>,
  method: string,
  body = "",
): string {
  return [
    `SIP/2.0 ${status}`,
    `Via: SIP/2.0/${origin.transport} 127.0.0.1:${origin.servicePort};branch=${seed.branch}`,
    `From: <sip:bridgeline@127.0.0.1>;tag=${seed.tag}`,
    `To: <sip:+16045550123@${origin.host}>;tag=r${seed.tag}`,
    `Call-ID: ${seed.callId}`,
    `CSeq: 1 ${method}`,
    `Contact: <sip:peer@${origin.host}:${origin.port}>`,
    ...(body === "" ? [] : ["Content-Type: application/sdp"]),
    `Content-Length: ${Buffer.byteLength(body)}`,
    "",
    body,
  ].join("\r\n");
}

/** One seed: a message, or a short sequence sent back to back. */
export function sipSeed(rng: Random, origin: Origin): string[] {
  const seed = ids(rng);
  const sdp = offerSdp(9, origin.host);
  const access = origin.accessNumber;
  const sdpType = ["Content-Type: application/sdp"];
  switch (rng.below(16)) {
    case 0:
    case 1:
      return [request(origin, "INVITE", access, seed, sdpType, sdp)];
    case 2:
      return [request(origin, "INVITE", "+16045550000", seed, sdpType, sdp)];
    case 3:
      return [request(origin, "OPTIONS", "bridgeline", seed, ["Accept: application/sdp"])];
    case 4:
      return [request(origin, "REGISTER", "bridgeline", seed, ["Expires: 3600"])];
    case 5:
      return [request(origin, rng.pick(["BYE", "CANCEL", "ACK", "UPDATE", "PRACK"]), access, seed)];
    case 6:
      return [
        request(
          origin,
          "INFO",
          access,
          seed,
          ["Content-Type: application/dtmf-relay"],
          "Signal=5\r\nDuration=160\r\n",
        ),
      ];
    case 7:
      return [
        request(
          origin,
          rng.pick(["MESSAGE", "SUBSCRIBE", "NOTIFY", "REFER", "PUBLISH", "FOO"]),
          access,
          seed,
        ),
      ];
    case 8:
      return [
        response(
          origin,
          rng.pick(["100 Trying", "180 Ringing", "486 Busy Here", "401 Unauthorized"]),
          seed,
          "INVITE",
        ),
      ];
    case 9:
      return [response(origin, "200 OK", seed, rng.pick(["INVITE", "BYE", "OPTIONS"]), sdp)];
    case 10: {
      // An INVITE and at once its CANCEL (same branch), or a BYE before the ACK.
      const invite = request(origin, "INVITE", access, seed, sdpType, sdp);
      const second = rng.chance(0.5)
        ? request(origin, "CANCEL", access, seed, [], "", "CANCEL")
        : request(origin, "BYE", access, { ...seed, branch: `${seed.branch}b` }).replace(
            "CSeq: 1 BYE",
            "CSeq: 2 BYE",
          );
      return [invite, second];
    }
    case 11: {
      // The same INVITE twice (a retransmission), or twice with another branch (a second transaction).
      const invite = request(origin, "INVITE", access, seed, sdpType, sdp);
      return [invite, rng.chance(0.5) ? invite : invite.replace(seed.branch, `${seed.branch}x`)];
    }
    case 12:
    case 13: {
      // An RFC 4475 message with our own Via sent-by, so that answers come back to us.
      const torture = rng.pick(TORTURE);
      return [
        torture.replace(
          /^(Via|v)[ \t]*:[ \t]*SIP\/2\.0\/UDP[ \t]+[^;\r\n]+/im,
          `Via: SIP/2.0/${origin.transport} ${origin.host}:${origin.port}`,
        ),
      ];
    }
    default:
      return [
        request(
          origin,
          "INVITE",
          access,
          seed,
          [...sdpType, "Supported: timer, 100rel", "Session-Expires: 1800"],
          sdp,
        ),
      ];
  }
}
