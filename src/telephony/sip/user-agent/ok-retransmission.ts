/**
 * RFC 3261 section 13.3.1.4: the UAS core, not the transaction, sends its 2xx to an INVITE again until
 * the ACK comes: at T1, doubling up to T2; after 64*T1 without one, the session is to be ended.
 */

import type { Clock, TimerHandle } from "../../../domain/clock.js";
import type { SipResponse } from "../message/sip-message.js";
import type { InviteServerTransaction } from "../transaction/invite-server-transaction.js";
import { T1, T2, TIMER_H } from "../transaction/timers.js";
import { TransactionState } from "../transaction/transaction-state.js";

export class OkRetransmission {
  #pending: { timer: TimerHandle | undefined; readonly cseq: number } | undefined;

  constructor(private readonly clock: Clock) {}

  /**
   * Sends `ok` again until `ackArrived` for its CSeq, or calls `timedOut`: after 64*T1, or once the
   * transaction has ended (the transport failed to send the 2xx, section 17.2.4: the ACK will never
   * come). Over a reliable transport nothing is sent again. Replaces any 2xx still pending.
   */
  start(ok: SipResponse, transaction: InviteServerTransaction, timedOut: () => void): void {
    this.stop();
    const reliable = transaction.reliable;
    let elapsed = 0;
    let interval = reliable ? TIMER_H : T1;
    const pending: { timer: TimerHandle | undefined; readonly cseq: number } = {
      timer: undefined,
      cseq: ok.headers.cseq?.seq ?? 0,
    };
    const fire = () => {
      if (this.#pending !== pending) return;
      elapsed += interval;
      if (elapsed >= TIMER_H || transaction.state === TransactionState.Terminated) {
        this.#pending = undefined;
        timedOut();
        return;
      }
      transaction.respond(ok);
      // Doubling up to T2, and never past 64*T1: the session ends when that has passed, not later.
      interval = Math.min(2 * interval, T2, TIMER_H - elapsed);
      pending.timer = this.clock.setTimeout(fire, interval);
    };
    pending.timer = this.clock.setTimeout(fire, interval);
    this.#pending = pending;
  }

  /** An ACK with this CSeq stops the 2xx it acknowledges; true when it acknowledged one. */
  ackArrived(cseq: number | undefined): boolean {
    const pending = this.#pending;
    if (pending === undefined || cseq !== pending.cseq) return false;
    this.stop();
    return true;
  }

  stop(): void {
    if (this.#pending?.timer !== undefined) this.clock.clearTimeout(this.#pending.timer);
    this.#pending = undefined;
  }
}
