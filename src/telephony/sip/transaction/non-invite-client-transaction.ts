/** Non-INVITE client transaction (RFC 3261 section 17.1.2, figure 6). */

import type { TimerHandle } from "../../../domain/clock.js";
import type { SipRequest, SipResponse } from "../message/sip-message.js";
import { nextInterval, T1, T2, TIMER_F, timerK } from "./timers.js";
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
  [TransactionState.Trying]: [
    TransactionState.Proceeding,
    TransactionState.Completed,
    TransactionState.Terminated,
  ],
  [TransactionState.Proceeding]: [TransactionState.Completed, TransactionState.Terminated],
  [TransactionState.Completed]: [TransactionState.Terminated],
} as const;

export class NonInviteClientTransaction extends Transaction {
  /** Request retransmissions, unreliable transports only. */
  private timerE: TimerHandle | undefined;
  private timerEInterval = T1;
  /** Transaction timeout. */
  private timerF: TimerHandle | undefined;
  /** Wait time for response retransmissions in Completed. */
  private timerK: TimerHandle | undefined;

  /** Enters Trying and sends the request. */
  constructor(
    request: SipRequest,
    transport: TransactionTransport,
    user: TransactionUser,
    options: TransactionOptions = {},
  ) {
    if (request.method === "INVITE" || request.method === "ACK") {
      throw new TypeError(`not a non-INVITE request with a transaction: ${request.method}`);
    }
    const key = clientTransactionKey(request);
    if (key === undefined) throw new TypeError(`${request.method} without a Via branch or CSeq`);
    super(request, key, transport, user, TransactionState.Trying, options);
    if (!transport.reliable) this.timerE = this.startTimer(this.timerEInterval, () => this.timerEFired());
    this.timerF = this.startTimer(TIMER_F, () => this.timerFFired());
    this.sendMessage(request);
  }

  /** A response matched to this transaction by its key. */
  receiveResponse(response: SipResponse): void {
    switch (this.currentState) {
      case TransactionState.Trying:
      case TransactionState.Proceeding:
        if (statusClass(response) === 1) {
          if (this.currentState === TransactionState.Trying)
            this.stateTransition(TransactionState.Proceeding);
        } else {
          this.stateTransition(TransactionState.Completed);
        }
        this.user.receiveResponse?.(response);
        return;
      default:
        // Completed absorbs retransmitted final responses.
        return;
    }
  }

  protected transportFailed(error: Error): void {
    if (this.currentState === TransactionState.Terminated) return;
    this.user.onTransportError?.(error);
    this.stateTransition(TransactionState.Terminated);
  }

  /** Section 17.1.2.2: doubling up to T2 in Trying, every T2 in Proceeding. */
  private timerEFired(): void {
    this.timerE = undefined;
    if (this.currentState === TransactionState.Trying) {
      this.timerEInterval = nextInterval(this.timerEInterval, true);
    } else if (this.currentState === TransactionState.Proceeding) {
      this.timerEInterval = T2;
    } else {
      return;
    }
    this.timerE = this.startTimer(this.timerEInterval, () => this.timerEFired());
    this.sendMessage(this.request);
  }

  private timerFFired(): void {
    this.timerF = undefined;
    if (this.currentState !== TransactionState.Trying && this.currentState !== TransactionState.Proceeding)
      return;
    this.user.onTimeout?.();
    this.stateTransition(TransactionState.Terminated);
  }

  private timerKFired(): void {
    this.timerK = undefined;
    if (this.currentState === TransactionState.Completed) this.stateTransition(TransactionState.Terminated);
  }

  /** The one way states change: refuses edges figure 6 lacks, then clears and arms timers on entry. */
  private stateTransition(to: TransactionState): void {
    checkTransition("non-INVITE client transaction", EDGES, this.currentState, to);
    switch (to) {
      case TransactionState.Completed:
        this.timerE = this.stopTimer(this.timerE);
        this.timerF = this.stopTimer(this.timerF);
        this.timerK = this.startTimer(timerK(this.reliable), () => this.timerKFired());
        break;
      case TransactionState.Terminated:
        this.timerE = this.stopTimer(this.timerE);
        this.timerF = this.stopTimer(this.timerF);
        this.timerK = this.stopTimer(this.timerK);
        break;
    }
    this.enter(to);
  }
}
