/**
 * The UAS side of an INVITE (RFC 3261 section 13.3): a call that reaches us. It rings (reliably when
 * the caller requires it, RFC 3262 section 3; not at all when that would need an offer in the 180),
 * answers with a 2xx sent again until the ACK (section
 * 13.3.1.4), rejects, or is CANCELled (section 9.2). Our SDP in the 2xx answers the INVITE's offer, or
 * is the offer when it had none: then the ACK brings the answer (section 13.2.1).
 */
import { randomInt } from "node:crypto";
import type { TimerHandle } from "../../../domain/clock.js";
import { Dialog } from "../dialog/dialog.js";
import type { SipRequest } from "../message/sip-message.js";
import type { InviteServerTransaction } from "../transaction/invite-server-transaction.js";
import { T1, TIMER_H } from "../transaction/timers.js";
import type { ServerTransaction } from "../transaction/transaction-layer.js";
import { responseTo } from "../transaction/transaction-layer.js";
import type { Destination, MessageSource } from "../transport/sip-transport.js";
import { InviteSession, transportOf } from "./invite-session.js";
import { OfferAnswerState } from "./offer-answer.js";
import type { SessionHost } from "./session-host.js";
import { type SessionEdges, SessionState } from "./session-state.js";
import { timerForInvite, timerHeaders } from "./session-timer.js";

export const INCOMING_EDGES: SessionEdges = {
  [SessionState.Initial]: [SessionState.Early, SessionState.WaitingForAck, SessionState.Terminated],
  [SessionState.Early]: [SessionState.WaitingForAck, SessionState.Terminated],
  [SessionState.WaitingForAck]: [SessionState.Confirmed, SessionState.Terminated],
  [SessionState.Confirmed]: [SessionState.Terminated],
};

/** A reliable provisional response not yet PRACKed (RFC 3262 section 3). */
interface Unacked {
  readonly rseq: number;
  timer: TimerHandle | undefined;
}

export class IncomingInviteSession extends InviteSession {
  readonly #localTag: string;
  /** The session timer our 2xx states, started when the ACK comes. */
  #agreedTimer: { interval: number; refresher: "uac" | "uas" } | undefined;
  /** RFC 3262: the caller requires reliable provisional responses. */
  readonly #reliable: boolean;
  /** Whether a 180 may be sent at all (see the constructor). */
  readonly #mayRing: boolean;
  #rseq = randomInt(1, 2 ** 31);
  /** The reliable provisional response not yet PRACKed, retransmitted until it is. */
  #unacked: Unacked | undefined;

  constructor(
    host: SessionHost,
    readonly invite: SipRequest,
    readonly transaction: InviteServerTransaction,
    localTag: string,
    /** Where the INVITE came from (a caller behind NAT is reached there). */
    readonly source?: MessageSource,
  ) {
    super(host, invite, "incoming INVITE session", INCOMING_EDGES, "uas");
    this.#localTag = localTag;
    // Section 13.2.1: an INVITE whose body is blank carries no offer.
    const offer = invite.body.toString();
    const offered = offer.trim() !== "";
    if (offered) this.offerAnswer.receiveOffer(offer);
    // RFC 3262 section 5 would put our offer in the first reliable 180 to an offerless INVITE; ours
    // goes in the 2xx, so such a caller that requires 100rel hears no 180 at all: section 3 lets
    // no provisional response go unreliably to it.
    this.#reliable = invite.headers.requires("100rel");
    this.#mayRing = offered || !this.#reliable;
  }

  get localTag(): string {
    return this.#localTag;
  }

  /** Whether our final response is sent (a 2xx, or a refusal). */
  get answered(): boolean {
    return this.state !== SessionState.Initial && this.state !== SessionState.Early;
  }

  /**
   * 180 (Ringing) with our tag and Contact: an early dialog as far as the peer is concerned. When
   * the caller requires it, reliably (RFC 3262 section 3): with Require: 100rel and an RSeq, sent
   * again at T1, doubling, until its PRACK comes or 64*T1 have passed; one at a time. None to an
   * offerless INVITE that requires 100rel.
   */
  ring(): void {
    if (this.answered || this.#unacked !== undefined || !this.#mayRing) return;
    const rseq = this.#reliable ? this.#rseq++ : undefined;
    const ringing = responseTo(this.invite, 180, "Ringing", {
      toTag: this.#localTag,
      headers: [
        ["Contact", this.host.contact(this.transport, this.secure)],
        ...(rseq === undefined
          ? []
          : ([
              ["Require", "100rel"],
              ["RSeq", String(rseq)],
            ] as [string, string][])),
      ],
    });
    this.transaction.respond(ringing);
    if (this.state === SessionState.Initial) this.transition(SessionState.Early);
    if (rseq === undefined) return;
    const unacked: Unacked = { rseq, timer: undefined };
    let interval = T1;
    let elapsed = 0;
    const again = () => {
      elapsed += interval;
      if (this.#unacked !== unacked || this.answered || elapsed >= TIMER_H) {
        if (this.#unacked === unacked) this.#unacked = undefined;
        return;
      }
      this.transaction.respond(ringing);
      interval *= 2;
      unacked.timer = this.host.clock.setTimeout(again, interval);
    };
    unacked.timer = this.host.clock.setTimeout(again, interval);
    this.#unacked = unacked;
  }

  /** RFC 3262 section 3: a PRACK whose RAck names our outstanding reliable response is answered 200. */
  override receivePrack(request: SipRequest, transaction: ServerTransaction): void {
    const rack = request.headers.rack;
    const unacked = this.#unacked;
    const matches =
      unacked !== undefined &&
      rack !== undefined &&
      rack.rseq === unacked.rseq &&
      rack.cseq === this.invite.headers.cseq?.seq &&
      rack.method.toUpperCase() === "INVITE";
    if (!matches) {
      transaction.respond(responseTo(request, 481, "Call/Transaction Does Not Exist"));
      return;
    }
    if (unacked.timer !== undefined) this.host.clock.clearTimeout(unacked.timer);
    this.#unacked = undefined;
    transaction.respond(responseTo(request, 200, "OK"));
  }

  /**
   * 200 (OK) with our SDP: the answer to the INVITE's offer, or our offer when it had none. The
   * session is confirmed when the ACK arrives.
   */
  accept(sdp: string): boolean {
    if (this.answered) return false;
    const source = this.source;
    const dialog = Dialog.forUas(
      this.invite,
      this.#localTag,
      source === undefined
        ? undefined
        : { host: source.address, port: source.port, transport: source.transport },
    );
    if (dialog === undefined) {
      this.reject(400, "Bad Request");
      return false;
    }
    if (this.offerAnswer.state === OfferAnswerState.HaveRemoteOffer) this.offerAnswer.sendAnswer(sdp);
    else this.offerAnswer.sendOffer(sdp);
    this.dialog = dialog;
    this.transition(SessionState.WaitingForAck);
    this.refresh.peerAllowsUpdate = this.invite.headers.allows("UPDATE");
    // RFC 4028 section 9 (a Session-Expires below our minimum was refused 422 on arrival).
    const timer = timerForInvite(this.invite, this.host.sessionTimer);
    this.#agreedTimer = timer !== undefined && "interval" in timer ? timer : undefined;
    const ok = this.okResponse(
      this.invite,
      sdp,
      this.#agreedTimer === undefined
        ? []
        : timerHeaders(this.#agreedTimer.interval, this.#agreedTimer.refresher),
      this.transport,
      this.#localTag,
    );
    this.transaction.respond(ok);
    this.host.dialogConfirmed(this);
    this.retransmitUntilAcked(ok, this.transaction);
    return true;
  }

  reject(status: number, reason: string, headers: Iterable<readonly [string, string]> = []): void {
    if (this.answered) return;
    this.transaction.respond(responseTo(this.invite, status, reason, { toTag: this.#localTag, headers }));
    this.end("local", reason);
  }

  /**
   * Section 9.2: a CANCEL before our final response ends the call with 487; its Reason (RFC 3326)
   * says why the caller gave up.
   */
  cancelled(cancel: SipRequest): void {
    if (this.answered) return;
    this.transaction.respond(responseTo(this.invite, 487, "Request Terminated", { toTag: this.#localTag }));
    const cause = cancel.headers.reasonCause;
    this.listener.failed?.(487, "Request Terminated", cause);
    this.end("remote", "cancelled", cause);
  }

  /** The ACK of our 2xx confirms the session; after an offerless INVITE it carries the answer. */
  protected override acknowledged(ack: SipRequest): void {
    if (ack.headers.cseq?.seq !== this.invite.headers.cseq?.seq) {
      super.acknowledged(ack);
      return;
    }
    this.transition(SessionState.Confirmed);
    const timer = this.#agreedTimer;
    if (timer !== undefined) this.refresh.start(timer.interval, timer.refresher);
    const answer =
      this.offerAnswer.state === OfferAnswerState.HaveLocalOffer
        ? this.offerAnswer.receiveAnswer(ack.body.toString())
        : undefined;
    this.listener.confirmed?.(answer);
  }

  /**
   * The transport the INVITE came over (what our Contact names, so the dialog stays on it): where it
   * is known, the one it truly arrived on, not what its Via claims.
   */
  get transport(): Destination["transport"] {
    return this.source?.transport ?? transportOf(this.invite);
  }

  /** Whether the INVITE came over this flow: a connection the dialog's requests may go back over. */
  cameOver(flow: MessageSource): boolean {
    const source = this.source;
    return (
      source !== undefined &&
      source.transport === flow.transport &&
      source.address === flow.address &&
      source.port === flow.port
    );
  }
}
