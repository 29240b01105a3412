/**
 * The transaction layer's dispatcher (RFC 3261 section 17): matches received messages to client and
 * server transactions by their keys, creates server transactions for new requests, and hands the core
 * only what is its to see. Sends go to the transport asynchronously; a failed send is reported to the
 * transaction as a transport error (sections 17.1.4, 17.2.4).
 */
import {
  SIP_VERSION,
  SipHeaders,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from "../message/sip-message.js";
import type { Destination, MessageSource } from "../transport/sip-transport.js";
import { sourceOf } from "../transport/source-address.js";
import { InviteClientTransaction } from "./invite-client-transaction.js";
import { InviteServerTransaction } from "./invite-server-transaction.js";
import { NonInviteClientTransaction } from "./non-invite-client-transaction.js";
import { NonInviteServerTransaction } from "./non-invite-server-transaction.js";
import type { TransactionOptions, TransactionUser } from "./transaction.js";
import { clientTransactionKey, serverTransactionKey } from "./transaction-key.js";

/** What the layer needs of the transport below it. */
export interface MessageSender {
  sendRequest(request: SipRequest, destination: Destination): Promise<SipRequest>;
  sendResponse(response: SipResponse): Promise<void>;
}

export type ServerTransaction = InviteServerTransaction | NonInviteServerTransaction;
export type ClientTransaction = InviteClientTransaction | NonInviteClientTransaction;

/** The transaction user above the layer: the UA core (section 8). */
export interface TransactionCore {
  /** A request that created a server transaction; the core must respond through it. */
  receiveRequest(request: SipRequest, transaction: ServerTransaction, source: MessageSource): void;
  /** An ACK no transaction matched: the ACK for a 2xx, which belongs to the dialog (section 17.2.3). */
  receiveAck(ack: SipRequest, source: MessageSource): void;
  /**
   * A CANCEL matched to a pending INVITE server transaction (section 9.2); it has been answered 200
   * already. The core answers the INVITE with 487 if it has not sent a final response.
   */
  receiveCancel(invite: InviteServerTransaction, cancel: SipRequest): void;
  /**
   * Whether a request that would start a server transaction may (its source's rate, say); one that
   * may not has been answered or dropped by the core. Retransmissions matched to a transaction are
   * not asked about.
   */
  admitRequest(request: SipRequest, source: MessageSource): boolean;
  /**
   * The answer to a request the core answers statelessly (section 8.2.7): sent, and no transaction
   * kept; undefined for one that needs a transaction.
   */
  answerStatelessly?(request: SipRequest): SipResponse | undefined;
  /**
   * A request that would start a server transaction when there are as many as the limits allow, in
   * all or from its source: the core answers it without one (503, section 21.5.4).
   */
  receiveOverload(request: SipRequest, source: MessageSource): void;
  /** A response no client transaction matched, such as a retransmitted 2xx after the transaction ended. */
  receiveStrayResponse(response: SipResponse): void;
  /** A message the layer dropped, for logging. */
  onDrop?(reason: string): void;
}

/** Server transactions kept at once: from one source (an IPv4 address, an IPv6 /64), and in all. */
export interface ServerTransactionLimits {
  readonly perSource: number;
  readonly total: number;
}

/**
 * A server transaction lives up to 64*T1 (32 s) after its final response over UDP, so a source within
 * the request rate limit holds well under this many; the total leaves room for many such sources.
 */
export const DEFAULT_SERVER_TRANSACTION_LIMITS: ServerTransactionLimits = { perSource: 2_048, total: 16_384 };

export class TransactionLayer {
  readonly #sender: MessageSender;
  readonly #core: TransactionCore;
  readonly #options: TransactionOptions;
  readonly #limits: ServerTransactionLimits;
  readonly #clients = new Map<string, ClientTransaction>();
  readonly #servers = new Map<string, ServerTransaction>();
  /** Server transactions by the source (sourceOf) that started them. */
  readonly #serversBySource = new Map<string, number>();

  constructor(
    sender: MessageSender,
    core: TransactionCore,
    options: TransactionOptions = {},
    limits: ServerTransactionLimits = DEFAULT_SERVER_TRANSACTION_LIMITS,
  ) {
    this.#sender = sender;
    this.#core = core;
    this.#options = options;
    this.#limits = limits;
  }

  /** Server transactions kept now. */
  get serverTransactions(): number {
    return this.#servers.size;
  }

  /** Every message the transport accepted. */
  receive(message: SipMessage, source: MessageSource): void {
    if (message.kind === "response") this.#receiveResponse(message);
    else this.#receiveRequest(message, source);
  }

  /**
   * Starts a client transaction for the request, whose top Via must already carry an RFC 3261 branch.
   * The transaction's user hears of responses, timeouts and transport errors.
   */
  sendRequest(request: SipRequest, destination: Destination, user: TransactionUser): ClientTransaction {
    const reliable = destination.transport !== "UDP";
    let transaction: ClientTransaction | undefined;
    const transport = {
      reliable,
      send: (message: SipRequest | SipResponse) => {
        this.#sender
          .sendRequest(message as SipRequest, destination)
          .catch((error: unknown) => transaction?.transportError(asError(error)));
      },
    };
    const tracked = this.#tracking(user, () => {
      if (transaction !== undefined) this.#clients.delete(transaction.key);
    });
    transaction =
      request.method === "INVITE"
        ? new InviteClientTransaction(request, transport, tracked, this.#options)
        : new NonInviteClientTransaction(request, transport, tracked, this.#options);
    this.#clients.set(transaction.key, transaction);
    return transaction;
  }

  /** Sends a request outside any transaction: the ACK for a 2xx (section 13.2.2.4). */
  sendAck(ack: SipRequest, destination: Destination): void {
    this.#sender.sendRequest(ack, destination).catch((error: unknown) => {
      this.#core.onDrop?.(`ACK not sent: ${asError(error).message}`);
    });
  }

  #receiveResponse(response: SipResponse): void {
    const key = clientTransactionKey(response);
    const transaction = key === undefined ? undefined : this.#clients.get(key);
    if (transaction !== undefined) transaction.receiveResponse(response);
    else this.#core.receiveStrayResponse(response);
  }

  #receiveRequest(request: SipRequest, source: MessageSource): void {
    const key = serverTransactionKey(request);
    if (key === undefined) {
      this.#core.onDrop?.(`${request.method} without a Via, Call-ID or CSeq to match it by dropped`);
      return;
    }
    const existing = this.#servers.get(key);
    if (existing !== undefined) {
      existing.receiveRequest(request);
      return;
    }
    if (request.method === "ACK") {
      this.#core.receiveAck(request, source);
      return;
    }
    if (!this.#core.admitRequest(request, source)) return;
    const stateless = this.#core.answerStatelessly?.(request);
    if (stateless !== undefined) {
      this.#sender.sendResponse(stateless).catch((error: unknown) => {
        this.#core.onDrop?.(`stateless ${stateless.status} not sent: ${asError(error).message}`);
      });
      return;
    }
    if (
      this.#servers.size >= this.#limits.total ||
      (this.#serversBySource.get(sourceOf(source.address)) ?? 0) >= this.#limits.perSource
    ) {
      this.#core.receiveOverload(request, source);
      return;
    }
    const transaction = this.#createServerTransaction(request, source);
    if (request.method === "CANCEL") {
      // Section 9.2: the CANCEL matches the INVITE transaction with the same branch and sent-by.
      const invite = this.#servers.get(`${key.slice(0, key.lastIndexOf("|"))}|INVITE`);
      if (invite instanceof InviteServerTransaction) {
        transaction.respond(responseTo(request, 200, "OK"));
        this.#core.receiveCancel(invite, request);
      } else {
        transaction.respond(responseTo(request, 481, "Call/Transaction Does Not Exist"));
      }
      return;
    }
    this.#core.receiveRequest(request, transaction, source);
  }

  #createServerTransaction(request: SipRequest, source: MessageSource): ServerTransaction {
    let transaction: ServerTransaction | undefined;
    const transport = {
      reliable: source.transport !== "UDP",
      send: (message: SipRequest | SipResponse) => {
        this.#sender
          .sendResponse(message as SipResponse)
          .catch((error: unknown) => transaction?.transportError(asError(error)));
      },
    };
    const address = sourceOf(source.address);
    const user = this.#tracking({ receiveAck: (ack) => this.#core.receiveAck(ack, source) }, () => {
      if (transaction === undefined) return;
      this.#servers.delete(transaction.key);
      const count = (this.#serversBySource.get(address) ?? 1) - 1;
      if (count === 0) this.#serversBySource.delete(address);
      else this.#serversBySource.set(address, count);
    });
    transaction =
      request.method === "INVITE"
        ? new InviteServerTransaction(request, transport, user, this.#options)
        : new NonInviteServerTransaction(request, transport, user, this.#options);
    this.#servers.set(transaction.key, transaction);
    this.#serversBySource.set(address, (this.#serversBySource.get(address) ?? 0) + 1);
    return transaction;
  }

  /** The user, also forgetting the transaction when it terminates. */
  #tracking(user: TransactionUser, forget: () => void): TransactionUser {
    return {
      receiveResponse: user.receiveResponse?.bind(user),
      receiveAck: user.receiveAck?.bind(user),
      onTimeout: user.onTimeout?.bind(user),
      onTransportError: user.onTransportError?.bind(user),
      onTerminated: () => {
        forget();
        user.onTerminated?.();
      },
    };
  }
}

/**
 * A response to a request (section 8.2.6.2): Via, From, Call-ID and CSeq copied, To copied with the
 * tag given (added when the request's To has none), optional extra headers and body.
 */
export function responseTo(
  request: SipRequest,
  status: number,
  reason: string,
  options: { toTag?: string; headers?: Iterable<readonly [string, string]>; body?: Buffer } = {},
): SipResponse {
  const headers = new SipHeaders();
  for (const value of request.headers.getAll("Via")) headers.append("Via", value);
  const from = request.headers.get("From");
  if (from !== undefined) headers.append("From", from);
  const to = request.headers.get("To");
  if (to !== undefined) {
    const tagged =
      options.toTag !== undefined && request.headers.to?.tag === undefined
        ? `${to};tag=${options.toTag}`
        : to;
    headers.append("To", tagged);
  }
  const callId = request.headers.get("Call-ID");
  if (callId !== undefined) headers.append("Call-ID", callId);
  const cseq = request.headers.get("CSeq");
  if (cseq !== undefined) headers.append("CSeq", cseq);
  // Section 12.1.1: a response that may establish a dialog (101-299) carries the request's
  // Record-Route, all of it and in order, so the far end's route set runs through the same proxies.
  if (status > 100 && status < 300)
    for (const value of request.headers.getAll("Record-Route")) headers.append("Record-Route", value);
  for (const [name, value] of options.headers ?? []) headers.append(name, value);
  const body = options.body ?? Buffer.alloc(0);
  headers.append("Content-Length", String(body.length));
  return { kind: "response", status, reason, version: SIP_VERSION, headers, body };
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
