/**
 * The offer/answer model (RFC 3264) as the signalling carries it (RFC 3261 section 13.2.1, RFC 3311):
 * one negotiation per session, the SDP opaque here. At most one offer is outstanding at a time; an
 * offer is answered, or refused and forgotten (the session keeps what it had, RFC 3264 section 8).
 */

/** Where the negotiation stands (the signalling states JSEP and SIP.js name alike). */
export enum OfferAnswerState {
  /** No offer has been made yet. */
  Initial = "Initial",
  /** We sent an offer (in an INVITE, a 2xx to an offerless one, or an UPDATE) and wait for its answer. */
  HaveLocalOffer = "HaveLocalOffer",
  /** The peer's offer came and we have not answered it. */
  HaveRemoteOffer = "HaveRemoteOffer",
  /** Every offer made has its answer. */
  Stable = "Stable",
}

/** One completed exchange: the offer and the answer to it. */
export interface Negotiated {
  readonly offer: string;
  readonly answer: string;
}

const EDGES: Readonly<Record<OfferAnswerState, readonly OfferAnswerState[]>> = {
  [OfferAnswerState.Initial]: [OfferAnswerState.HaveLocalOffer, OfferAnswerState.HaveRemoteOffer],
  [OfferAnswerState.HaveLocalOffer]: [OfferAnswerState.Stable, OfferAnswerState.Initial],
  [OfferAnswerState.HaveRemoteOffer]: [OfferAnswerState.Stable, OfferAnswerState.Initial],
  [OfferAnswerState.Stable]: [OfferAnswerState.HaveLocalOffer, OfferAnswerState.HaveRemoteOffer],
};

/** Thrown for an offer or answer at the wrong time: a bug in the session that called it. */
export class OfferAnswerStateError extends Error {
  constructor(
    readonly from: OfferAnswerState,
    readonly to: OfferAnswerState,
  ) {
    super(`offer/answer: illegal transition from ${from} to ${to}`);
    this.name = "OfferAnswerStateError";
  }
}

export class OfferAnswer {
  #state = OfferAnswerState.Initial;
  /** The outstanding offer, ours or the peer's. */
  #offer: string | undefined;
  /** Whether an exchange has completed (what a refused offer goes back to). */
  #negotiated = false;

  get state(): OfferAnswerState {
    return this.#state;
  }

  /** Whether an offer may be made now, by either side: none is outstanding (RFC 3264 section 4). */
  get canOffer(): boolean {
    return this.#state === OfferAnswerState.Initial || this.#state === OfferAnswerState.Stable;
  }

  /** The peer's offer waiting for our answer. */
  get remoteOffer(): string | undefined {
    return this.#state === OfferAnswerState.HaveRemoteOffer ? this.#offer : undefined;
  }

  sendOffer(offer: string): void {
    this.#transition(OfferAnswerState.HaveLocalOffer);
    this.#offer = offer;
  }

  receiveOffer(offer: string): void {
    this.#transition(OfferAnswerState.HaveRemoteOffer);
    this.#offer = offer;
  }

  /** The peer's answer to our offer: the exchange it completes. */
  receiveAnswer(answer: string): Negotiated {
    const offer = this.#offer ?? "";
    if (this.#state !== OfferAnswerState.HaveLocalOffer)
      throw new OfferAnswerStateError(this.#state, OfferAnswerState.Stable);
    this.#complete();
    return { offer, answer };
  }

  sendAnswer(answer: string): Negotiated {
    const offer = this.#offer ?? "";
    if (this.#state !== OfferAnswerState.HaveRemoteOffer)
      throw new OfferAnswerStateError(this.#state, OfferAnswerState.Stable);
    this.#complete();
    return { offer, answer };
  }

  /** The outstanding offer was refused (or its transaction failed): the last exchange stands. */
  rollback(): void {
    if (this.canOffer) return;
    this.#transition(this.#negotiated ? OfferAnswerState.Stable : OfferAnswerState.Initial);
    this.#offer = undefined;
  }

  #complete(): void {
    this.#transition(OfferAnswerState.Stable);
    this.#offer = undefined;
    this.#negotiated = true;
  }

  /** The one way the state changes: refuses the edges RFC 3264 does not have. */
  #transition(to: OfferAnswerState): void {
    if (!EDGES[this.#state].includes(to)) throw new OfferAnswerStateError(this.#state, to);
    this.#state = to;
  }
}
