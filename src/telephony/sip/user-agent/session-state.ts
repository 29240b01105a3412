/**
 * The states of an INVITE session (RFC 3261 sections 12-15: the dialog an INVITE sets up, from the
 * INVITE to its end); each session kind checks its edges with the transactions' checkTransition.
 */
export enum SessionState {
  /** UAC: the INVITE is sent (again, after a challenge or to the next server) and nothing has answered it. UAS: it came and nothing has answered it. */
  Initial = "Initial",
  /** UAC: a provisional response came, so a CANCEL may go (section 9.1). UAS: we sent one (180). */
  Early = "Early",
  /**
   * UAC: a 503 asked us to try again after a while (its Retry-After, RFC 3261 section 21.5.4): no
   * INVITE is outstanding until it goes again, once that has passed.
   */
  Retrying = "Retrying",
  /** UAC: the call is given up before its answer; a CANCEL goes with every provisional response. */
  Cancelling = "Cancelling",
  /** UAS: our 2xx is sent, and sent again until the ACK comes (section 13.3.1.4). */
  WaitingForAck = "WaitingForAck",
  /** The dialog is confirmed: the UAC sent its ACK, or the UAS received it. */
  Confirmed = "Confirmed",
  Terminated = "Terminated",
}

export type SessionEdges = Readonly<Partial<Record<SessionState, readonly SessionState[]>>>;
