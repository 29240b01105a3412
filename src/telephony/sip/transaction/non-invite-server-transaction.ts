/** Non-INVITE server transaction (RFC 3261 section 17.2.2, figure 8). */

import type { TimerHandle } from "../../../domain/clock.js";
import type { SipRequest, SipResponse } from "../message/sip-message.js";
import { timerJ } from "./timers.js";
import {
  statusClass,
  Transaction,
  type TransactionOptions,
  type TransactionTransport,
  type TransactionUser,
} from "./transaction.js";
import { serverTransactionKey } from "./transaction-key.js";
import { checkTransition, TransactionState } from "./transaction-state.js";

const EDGES = {
  [TransactionState.Trying]: [
    TransactionState.Proceeding,
    TransactionState.Completed,
    TransactionState.Terminated,
  ],
  [TransactionState.Proceeding]: [TransactionState.Completed, TransactionState.Terminated],
  [TransactionState.Completed]: [TransactionState.Terminated],
} as const;

export class NonInviteServerTransaction extends Transaction {
  /** Wait time for request retransmissions in Completed. */
  private timerJ: TimerHandle | undefined;
  private lastProvisional: SipResponse | undefined;
  private lastFinal: SipResponse | undefined;

  /** Enters Trying for a received non-INVITE request. */
  constructor(
    request: SipRequest,
    transport: TransactionTransport,
    user: TransactionUser,
    options: TransactionOptions = {},
  ) {
    if (request.method === "INVITE" || request.method === "ACK") {
      throw new TypeError(`not a non-INVITE request with a transaction: ${request.method}`);
    }
    const key = serverTransactionKey(request);
    if (key === undefined) throw new TypeError(`${request.method} without an RFC 3261 branch (z9hG4bK)`);
    super(request, key, transport, user, TransactionState.Trying, options);
  }

  /** A retransmission of the request: discarded in Trying, answered with the last response after. */
  receiveRequest(_request: SipRequest): void {
    if (this.currentState === TransactionState.Proceeding && this.lastProvisional !== undefined) {
      this.sendMessage(this.lastProvisional);
    } else if (this.currentState === TransactionState.Completed && this.lastFinal !== undefined) {
      this.sendMessage(this.lastFinal);
    }
  }

  /** The TU's response; throws IllegalTransitionError where the state machine takes no such response. */
  respond(response: SipResponse): void {
    if (statusClass(response) === 1) {
      if (this.currentState !== TransactionState.Proceeding)
        this.stateTransition(TransactionState.Proceeding);
      this.lastProvisional = response;
    } else {
      this.stateTransition(TransactionState.Completed);
      this.lastFinal = response;
    }
    this.sendMessage(response);
  }

  protected transportFailed(error: Error): void {
    if (this.currentState === TransactionState.Terminated) return;
    this.user.onTransportError?.(error);
    this.stateTransition(TransactionState.Terminated);
  }

  private timerJFired(): void {
    this.timerJ = undefined;
    if (this.currentState === TransactionState.Completed) this.stateTransition(TransactionState.Terminated);
  }

  /** The one way states change: refuses edges figure 8 lacks, then clears and arms timers on entry. */
  private stateTransition(to: TransactionState): void {
    checkTransition("non-INVITE server transaction", EDGES, this.currentState, to);
    switch (to) {
      case TransactionState.Completed:
        this.timerJ = this.startTimer(timerJ(this.reliable), () => this.timerJFired());
        break;
      case TransactionState.Terminated:
        this.timerJ = this.stopTimer(this.timerJ);
        break;
    }
    this.enter(to);
  }
}
