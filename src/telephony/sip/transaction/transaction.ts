/** What the four RFC 3261 section 17 transaction kinds share: the interfaces up (TU) and down (transport). */

import { systemClock } from "../../../clock.js";
import type { Clock, TimerHandle } from "../../../domain/clock.js";
import type { SipRequest, SipResponse } from "../message/sip-message.js";
import { TransactionState } from "./transaction-state.js";

/** Downward: sends a message; resolving its destination (section 18) is the transport's job. */
export interface TransactionTransport {
  readonly reliable: boolean;
  /** Throws on a transport error (section 17.1.4, 17.2.4). */
  send(message: SipRequest | SipResponse): void;
}

/** Upward: what a transaction tells its transaction user. Every callback is optional. */
export interface TransactionUser {
  /** Client transactions: a response the TU is to see (not an absorbed retransmission). */
  receiveResponse?(response: SipResponse): void;
  /** RFC 6026 INVITE server in Accepted: an ACK for the 2xx, which is the TU's to handle. */
  receiveAck?(ack: SipRequest): void;
  /** Timer B, F or H fired: to be treated as a 408 (Request Timeout) (sections 8.1.3.1, 17.2.1). */
  onTimeout?(): void;
  /** The transport failed to send: to be treated as a 503 (Service Unavailable) (section 8.1.3.1). */
  onTransportError?(error: Error): void;
  /** The transaction reached Terminated and may be forgotten. */
  onTerminated?(): void;
}

export interface TransactionOptions {
  /** The clock timers are armed on; the system timers by default. */
  readonly clock?: Clock;
}

export abstract class Transaction {
  readonly #clock: Clock;
  protected currentState: TransactionState;

  protected constructor(
    /** The request that created the transaction. */
    readonly request: SipRequest,
    /** The matching key (transaction-key.ts). */
    readonly key: string,
    protected readonly transport: TransactionTransport,
    protected readonly user: TransactionUser,
    initialState: TransactionState,
    options: TransactionOptions,
  ) {
    this.#clock = options.clock ?? systemClock;
    this.currentState = initialState;
  }

  get state(): TransactionState {
    return this.currentState;
  }

  get reliable(): boolean {
    return this.transport.reliable;
  }

  /** Commits a checked transition; the TU hears of termination once, after the timers are settled. */
  protected enter(to: TransactionState): void {
    this.currentState = to;
    if (to === TransactionState.Terminated) this.user.onTerminated?.();
  }

  protected startTimer(delayMs: number, callback: () => void): TimerHandle {
    return this.#clock.setTimeout(callback, delayMs);
  }

  /** Clears the timer if armed; returns undefined to assign back to its field. */
  protected stopTimer(handle: TimerHandle | undefined): undefined {
    if (handle !== undefined) this.#clock.clearTimeout(handle);
    return undefined;
  }

  /** Sends, turning a transport failure into onTransportError and termination; false when it failed. */
  protected sendMessage(message: SipRequest | SipResponse): boolean {
    try {
      this.transport.send(message);
      return true;
    } catch (error) {
      this.transportFailed(error instanceof Error ? error : new Error(String(error)));
      return false;
    }
  }

  /** An asynchronous send failed after `send` returned: handled as a synchronous failure would be. */
  transportError(error: Error): void {
    this.transportFailed(error);
  }

  /** Informs the TU of a transport error and terminates (sections 17.1.4, 17.2.4). */
  protected abstract transportFailed(error: Error): void;
}

/** The response class of a status code: 1 for provisional, 2 for success, 3 to 6 for the rest. */
export function statusClass(response: SipResponse): number {
  return Math.floor(response.status / 100);
}
