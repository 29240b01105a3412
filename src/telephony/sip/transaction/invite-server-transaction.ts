/** INVITE server transaction (RFC 3261 section 17.2.1, figure 7, with RFC 6026's Accepted state). */

import type { TimerHandle } from "../../../domain/clock.js";
import { SIP_VERSION, SipHeaders, type SipRequest, type SipResponse } from "../message/sip-message.js";
import { nextInterval, T1, TIMER_H, TIMER_L, TRYING_DELAY, timerI } from "./timers.js";
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
  [TransactionState.Proceeding]: [
    TransactionState.Accepted,
    TransactionState.Completed,
    TransactionState.Terminated,
  ],
  [TransactionState.Accepted]: [TransactionState.Terminated],
  [TransactionState.Completed]: [TransactionState.Confirmed, TransactionState.Terminated],
  [TransactionState.Confirmed]: [TransactionState.Terminated],
} as const;

export class InviteServerTransaction extends Transaction {
  /** Sends 100 (Trying) unless the TU responds first (section 17.2.1). Not an RFC-named timer. */
  private trying100Timer: TimerHandle | undefined;
  /** Final response retransmissions in Completed, unreliable transports only. */
  private timerG: TimerHandle | undefined;
  private timerGInterval = T1;
  /** Wait time for the ACK in Completed. */
  private timerH: TimerHandle | undefined;
  /** Wait time for ACK retransmissions in Confirmed. */
  private timerI: TimerHandle | undefined;
  /** RFC 6026: wait time in Accepted. */
  private timerL: TimerHandle | undefined;
  private lastProvisional: SipResponse | undefined;
  private lastFinal: SipResponse | undefined;

  /** Enters Proceeding for a received INVITE. */
  constructor(
    request: SipRequest,
    transport: TransactionTransport,
    user: TransactionUser,
    options: TransactionOptions = {},
  ) {
    if (request.method !== "INVITE") throw new TypeError(`not an INVITE: ${request.method}`);
    const key = serverTransactionKey(request);
    if (key === undefined) throw new TypeError("INVITE without an RFC 3261 branch (z9hG4bK)");
    super(request, key, transport, user, TransactionState.Proceeding, options);
    this.trying100Timer = this.startTimer(TRYING_DELAY, () => this.trying100TimerFired());
  }

  /** A request matched to this transaction by its key: a retransmitted INVITE or an ACK. */
  receiveRequest(request: SipRequest): void {
    if (request.method === "ACK") {
      if (this.currentState === TransactionState.Completed) this.stateTransition(TransactionState.Confirmed);
      else if (this.currentState === TransactionState.Accepted) this.user.receiveAck?.(request);
      // Confirmed absorbs ACK retransmissions.
      return;
    }
    if (request.method !== "INVITE") return;
    if (this.currentState === TransactionState.Proceeding && this.lastProvisional !== undefined) {
      this.sendMessage(this.lastProvisional);
    } else if (this.currentState === TransactionState.Completed && this.lastFinal !== undefined) {
      this.sendMessage(this.lastFinal);
    }
    // Accepted and Confirmed absorb retransmitted INVITEs.
  }

  /** The TU's response; throws IllegalTransitionError where the state machine takes no such response. */
  respond(response: SipResponse): void {
    const kind = statusClass(response);
    if (this.currentState === TransactionState.Accepted && kind === 2) {
      // RFC 6026 section 7.1: the TU retransmits 2xx responses itself, through the transaction.
      this.sendMessage(response);
      return;
    }
    if (this.currentState !== TransactionState.Proceeding) {
      // No such edge leaves Accepted, Completed, Confirmed or Terminated: this throws.
      const to =
        kind === 1
          ? TransactionState.Proceeding
          : kind === 2
            ? TransactionState.Accepted
            : TransactionState.Completed;
      this.stateTransition(to);
      return;
    }
    this.trying100Timer = this.stopTimer(this.trying100Timer);
    if (kind === 1) {
      this.lastProvisional = response;
    } else if (kind === 2) {
      this.stateTransition(TransactionState.Accepted);
    } else {
      this.lastFinal = response;
      this.stateTransition(TransactionState.Completed);
    }
    this.sendMessage(response);
  }

  protected transportFailed(error: Error): void {
    if (this.currentState === TransactionState.Terminated) return;
    this.user.onTransportError?.(error);
    this.stateTransition(TransactionState.Terminated);
  }

  private trying100TimerFired(): void {
    this.trying100Timer = undefined;
    if (this.currentState !== TransactionState.Proceeding || this.lastProvisional !== undefined) return;
    this.lastProvisional = trying100(this.request);
    this.sendMessage(this.lastProvisional);
  }

  private timerGFired(): void {
    this.timerG = undefined;
    if (this.currentState !== TransactionState.Completed || this.lastFinal === undefined) return;
    this.timerGInterval = nextInterval(this.timerGInterval, true);
    this.timerG = this.startTimer(this.timerGInterval, () => this.timerGFired());
    this.sendMessage(this.lastFinal);
  }

  private timerHFired(): void {
    this.timerH = undefined;
    if (this.currentState !== TransactionState.Completed) return;
    this.user.onTimeout?.();
    this.stateTransition(TransactionState.Terminated);
  }

  private timerIFired(): void {
    this.timerI = undefined;
    if (this.currentState === TransactionState.Confirmed) this.stateTransition(TransactionState.Terminated);
  }

  private timerLFired(): void {
    this.timerL = undefined;
    if (this.currentState === TransactionState.Accepted) this.stateTransition(TransactionState.Terminated);
  }

  /** The one way states change: refuses edges figure 7 lacks, then clears and arms timers on entry. */
  private stateTransition(to: TransactionState): void {
    checkTransition("INVITE server transaction", EDGES, this.currentState, to);
    this.trying100Timer = this.stopTimer(this.trying100Timer);
    switch (to) {
      case TransactionState.Accepted:
        this.timerL = this.startTimer(TIMER_L, () => this.timerLFired());
        break;
      case TransactionState.Completed:
        if (!this.reliable) this.timerG = this.startTimer(this.timerGInterval, () => this.timerGFired());
        this.timerH = this.startTimer(TIMER_H, () => this.timerHFired());
        break;
      case TransactionState.Confirmed:
        this.timerG = this.stopTimer(this.timerG);
        this.timerH = this.stopTimer(this.timerH);
        this.timerI = this.startTimer(timerI(this.reliable), () => this.timerIFired());
        break;
      case TransactionState.Terminated:
        this.timerG = this.stopTimer(this.timerG);
        this.timerH = this.stopTimer(this.timerH);
        this.timerI = this.stopTimer(this.timerI);
        this.timerL = this.stopTimer(this.timerL);
        break;
    }
    this.enter(to);
  }
}

/** A 100 (Trying) for the request (sections 8.2.6): Via, From, To, Call-ID, CSeq and Timestamp copied. */
export function trying100(request: SipRequest): SipResponse {
  const headers = new SipHeaders();
  for (const name of ["Via", "From", "To", "Call-ID", "CSeq", "Timestamp"]) {
    for (const value of request.headers.getAll(name)) headers.append(name, value);
  }
  headers.append("Content-Length", "0");
  return {
    kind: "response",
    status: 100,
    reason: "Trying",
    version: SIP_VERSION,
    headers,
    body: Buffer.alloc(0),
  };
}
