/** INVITE client transaction (RFC 3261 section 17.1.1, figure 5). */

import type { TimerHandle } from "../../../domain/clock.js";
import { SIP_VERSION, SipHeaders, type SipRequest, type SipResponse } from "../message/sip-message.js";
import { nextInterval, T1, TIMER_B, timerD } from "./timers.js";
import {
  statusClass,
  Transaction,
  type TransactionOptions,
  type TransactionTransport,
  type TransactionUser,
} from "./transaction.js";
import { clientTransactionKey } from "./transaction-key.js";
import { checkTransition, TransactionState } from "./transaction-state.js";

const EDGES = {
  [TransactionState.Calling]: [
    TransactionState.Proceeding,
    TransactionState.Completed,
    TransactionState.Terminated,
  ],
  [TransactionState.Proceeding]: [TransactionState.Completed, TransactionState.Terminated],
  [TransactionState.Completed]: [TransactionState.Terminated],
} as const;

export class InviteClientTransaction extends Transaction {
  /** Request retransmissions, unreliable transports only. */
  private timerA: TimerHandle | undefined;
  private timerAInterval = T1;
  /** Transaction timeout. */
  private timerB: TimerHandle | undefined;
  /** Wait time for response retransmissions in Completed. */
  private timerD: TimerHandle | undefined;
  /** The ACK for the non-2xx final response, sent again for each retransmission of it. */
  private ack: SipRequest | undefined;

  /** Enters Calling and sends the request. */
  constructor(
    request: SipRequest,
    transport: TransactionTransport,
    user: TransactionUser,
    options: TransactionOptions = {},
  ) {
    if (request.method !== "INVITE") throw new TypeError(`not an INVITE: ${request.method}`);
    const key = clientTransactionKey(request);
    if (key === undefined) throw new TypeError("INVITE without a Via branch or CSeq");
    super(request, key, transport, user, TransactionState.Calling, options);
    if (!transport.reliable) this.timerA = this.startTimer(this.timerAInterval, () => this.timerAFired());
    this.timerB = this.startTimer(TIMER_B, () => this.timerBFired());
    this.sendMessage(request);
  }

  /** A response matched to this transaction by its key. */
  receiveResponse(response: SipResponse): void {
    const kind = statusClass(response);
    switch (this.currentState) {
      case TransactionState.Calling:
      case TransactionState.Proceeding:
        if (kind === 1) {
          if (this.currentState === TransactionState.Calling)
            this.stateTransition(TransactionState.Proceeding);
          this.user.receiveResponse?.(response);
        } else if (kind === 2) {
          // The ACK for a 2xx, and the 2xx retransmissions, are the TU's (section 17.1.1.2).
          this.user.receiveResponse?.(response);
          this.stateTransition(TransactionState.Terminated);
        } else {
          // The ACK leaves before the TU sees the response, so that a TU retrying at once (with
          // credentials after a 401/407) does not overtake it.
          this.stateTransition(TransactionState.Completed);
          this.ack = generateAck(this.request, response);
          if (!this.sendMessage(this.ack)) return;
          this.user.receiveResponse?.(response);
        }
        return;
      case TransactionState.Completed:
        // A retransmitted final response: ACK again, do not pass it up.
        if (kind >= 3 && this.ack !== undefined) this.sendMessage(this.ack);
        return;
      default:
        return;
    }
  }

  /**
   * The TU gives up on a request nothing answered yet, to send it to the next server (RFC 3263
   * section 4.3): no more retransmissions, and nothing passed up.
   */
  abandon(): void {
    if (this.currentState === TransactionState.Calling) this.stateTransition(TransactionState.Terminated);
  }

  protected transportFailed(error: Error): void {
    if (this.currentState === TransactionState.Terminated) return;
    this.user.onTransportError?.(error);
    this.stateTransition(TransactionState.Terminated);
  }

  private timerAFired(): void {
    this.timerA = undefined;
    if (this.currentState !== TransactionState.Calling) return;
    this.timerAInterval = nextInterval(this.timerAInterval, false);
    this.timerA = this.startTimer(this.timerAInterval, () => this.timerAFired());
    this.sendMessage(this.request);
  }

  private timerBFired(): void {
    this.timerB = undefined;
    if (this.currentState !== TransactionState.Calling) return;
    this.user.onTimeout?.();
    this.stateTransition(TransactionState.Terminated);
  }

  private timerDFired(): void {
    this.timerD = undefined;
    if (this.currentState === TransactionState.Completed) this.stateTransition(TransactionState.Terminated);
  }

  /** The one way states change: refuses edges figure 5 lacks, then clears and arms timers on entry. */
  private stateTransition(to: TransactionState): void {
    checkTransition("INVITE client transaction", EDGES, this.currentState, to);
    switch (to) {
      case TransactionState.Proceeding:
        this.timerA = this.stopTimer(this.timerA);
        this.timerB = this.stopTimer(this.timerB);
        break;
      case TransactionState.Completed:
        this.timerA = this.stopTimer(this.timerA);
        this.timerB = this.stopTimer(this.timerB);
        this.timerD = this.startTimer(timerD(this.reliable), () => this.timerDFired());
        break;
      case TransactionState.Terminated:
        this.timerA = this.stopTimer(this.timerA);
        this.timerB = this.stopTimer(this.timerB);
        this.timerD = this.stopTimer(this.timerD);
        break;
    }
    this.enter(to);
  }
}

/**
 * Section 17.1.1.3: the ACK for a non-2xx final response. Request-URI, Call-ID, From, CSeq number and
 * Route come from the INVITE, the single Via is the INVITE's top Via (so the same branch), and To comes
 * from the response (with its tag).
 */
export function generateAck(invite: SipRequest, response: SipResponse): SipRequest {
  const source = invite.headers;
  const headers = new SipHeaders();
  const via = source.get("Via");
  if (via !== undefined) headers.append("Via", via);
  for (const route of source.getAll("Route")) headers.append("Route", route);
  headers.append("Max-Forwards", "70");
  const from = source.get("From");
  if (from !== undefined) headers.append("From", from);
  const to = response.headers.get("To") ?? source.get("To");
  if (to !== undefined) headers.append("To", to);
  const callId = source.get("Call-ID");
  if (callId !== undefined) headers.append("Call-ID", callId);
  headers.append("CSeq", `${source.cseq?.seq ?? 1} ACK`);
  headers.append("Content-Length", "0");
  return {
    kind: "request",
    method: "ACK",
    uri: invite.uri,
    version: SIP_VERSION,
    headers,
    body: Buffer.alloc(0),
  };
}
