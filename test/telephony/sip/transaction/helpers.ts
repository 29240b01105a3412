/** A recording transport and message builders for the transaction tests. */
import {
  SIP_VERSION,
  SipHeaders,
  type SipRequest,
  type SipResponse,
} from "../../../../src/telephony/sip/message/sip-message.js";
import type {
  TransactionTransport,
  TransactionUser,
} from "../../../../src/telephony/sip/transaction/transaction.js";
import type { FakeClock } from "../../../helpers/fake-clock.js";

export interface Sent {
  readonly at: number;
  readonly message: SipRequest | SipResponse;
}

export class RecordingTransport implements TransactionTransport {
  readonly sent: Sent[] = [];
  failing = false;

  constructor(
    readonly reliable: boolean,
    private readonly clock: FakeClock,
  ) {}

  send(message: SipRequest | SipResponse): void {
    if (this.failing) throw new Error("ECONNREFUSED");
    this.sent.push({ at: this.clock.now(), message });
  }

  /** The send times of the messages for which `which` holds. */
  times(which: (message: SipRequest | SipResponse) => boolean = () => true): number[] {
    return this.sent.filter((sent) => which(sent.message)).map((sent) => sent.at);
  }
}

export class RecordingUser implements TransactionUser {
  readonly responses: SipResponse[] = [];
  readonly acks: SipRequest[] = [];
  readonly errors: Error[] = [];
  timeouts = 0;
  terminated = 0;

  receiveResponse(response: SipResponse): void {
    this.responses.push(response);
  }
  receiveAck(ack: SipRequest): void {
    this.acks.push(ack);
  }
  onTimeout(): void {
    this.timeouts++;
  }
  onTransportError(error: Error): void {
    this.errors.push(error);
  }
  onTerminated(): void {
    this.terminated++;
  }
}

export interface RequestOptions {
  readonly branch?: string;
  readonly sentBy?: string;
  readonly transport?: string;
  readonly cseq?: number;
  readonly toTag?: string;
  readonly route?: string;
}

export function request(method: string, options: RequestOptions = {}): SipRequest {
  const headers = new SipHeaders();
  headers.append(
    "Via",
    `SIP/2.0/${options.transport ?? "UDP"} ${options.sentBy ?? "client.example.com:5060"};branch=${options.branch ?? "z9hG4bK776asdhds"}`,
  );
  headers.append("Via", "SIP/2.0/UDP proxy.example.com;branch=z9hG4bKproxy1");
  if (options.route !== undefined) headers.append("Route", options.route);
  headers.append("Max-Forwards", "70");
  headers.append("From", "Alice <sip:alice@example.com>;tag=1928301774");
  headers.append(
    "To",
    `Bob <sip:bob@example.com>${options.toTag === undefined ? "" : `;tag=${options.toTag}`}`,
  );
  headers.append("Call-ID", "a84b4c76e66710@client.example.com");
  headers.append("CSeq", `${options.cseq ?? 314159} ${method === "ACK" ? "INVITE" : method}`);
  headers.append("Content-Length", "0");
  return {
    kind: "request",
    method,
    uri: "sip:bob@example.com",
    version: SIP_VERSION,
    headers,
    body: Buffer.alloc(0),
  };
}

/** A response to `to`: its Vias, From, Call-ID and CSeq, and To with a tag. */
export function response(to: SipRequest, status: number, reason = "Reason"): SipResponse {
  const headers = new SipHeaders();
  for (const via of to.headers.getAll("Via")) headers.append("Via", via);
  headers.append("From", to.headers.get("From") ?? "");
  headers.append("To", `${to.headers.get("To") ?? ""}${status === 100 ? "" : ";tag=a6c85cf"}`);
  headers.append("Call-ID", to.headers.get("Call-ID") ?? "");
  headers.append("CSeq", to.headers.get("CSeq") ?? "");
  headers.append("Content-Length", "0");
  return { kind: "response", status, reason, version: SIP_VERSION, headers, body: Buffer.alloc(0) };
}

export function isRequest(method: string): (message: SipRequest | SipResponse) => boolean {
  return (message) => message.kind === "request" && message.method === method;
}

export function isStatus(status: number): (message: SipRequest | SipResponse) => boolean {
  return (message) => message.kind === "response" && message.status === status;
}

/** Send times of a doubling schedule starting at `first`, optionally capped, strictly before `until`. */
export function schedule(first: number, cap: number, until: number): number[] {
  const times: number[] = [];
  let interval = first;
  let at = first;
  while (at < until) {
    times.push(at);
    interval = Math.min(2 * interval, cap);
    at += interval;
  }
  return times;
}
