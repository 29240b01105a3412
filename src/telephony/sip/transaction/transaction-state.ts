/** States of the RFC 3261 section 17 transaction state machines (figures 5 to 8, RFC 6026 figure 7). */
export enum TransactionState {
  /** INVITE client: the request is sent, no response yet. */
  Calling = "Calling",
  /** Non-INVITE client and server: the request is sent (client) or received (server), no response yet. */
  Trying = "Trying",
  Proceeding = "Proceeding",
  /** RFC 6026: INVITE server after a 2xx, absorbing retransmitted INVITEs, passing 2xx ACKs to the TU. */
  Accepted = "Accepted",
  Completed = "Completed",
  /** INVITE server: the ACK for a non-2xx final response arrived. */
  Confirmed = "Confirmed",
  Terminated = "Terminated",
}

/**
 * Thrown when a transaction or a session is asked to take an edge its state machine does not have:
 * a bug, not a peer's doing.
 */
export class IllegalTransitionError extends Error {
  constructor(
    readonly kind: string,
    readonly from: string,
    readonly to: string,
  ) {
    super(`${kind}: illegal state transition from ${from} to ${to}`);
    this.name = "IllegalTransitionError";
  }
}

/** Throws IllegalTransitionError unless `to` is one of `edges[from]`. */
export function checkTransition<State extends string>(
  kind: string,
  edges: Readonly<Partial<Record<State, readonly State[]>>>,
  from: State,
  to: State,
): void {
  if (!(edges[from] ?? []).includes(to)) throw new IllegalTransitionError(kind, from, to);
}
