/**
 * INVITE sessions (RFC 3261 sections 12-15): what both sides of the call a dialog carries share, as a
 * state machine (session-state.ts) whose kinds are outgoing-invite-session.ts (UAC) and
 * incoming-invite-session.ts (UAS). Within the dialog: re-INVITE both ways (section 14), BYE (section
 * 15), INFO keys (RFC 6086), UPDATE and session timers (session-refresh.ts), and one offer/answer
 * negotiation (offer-answer.ts). SDP is opaque here.
 */
import type { CallCause } from "../../../domain/call-record.js";
import type { Dialog } from "../dialog/dialog.js";
import { formatReason, uriScheme } from "../message/header-values.js";
import type { SipRequest, SipResponse } from "../message/sip-message.js";
import type { InviteServerTransaction } from "../transaction/invite-server-transaction.js";
import type { ServerTransaction } from "../transaction/transaction-layer.js";
import { responseTo } from "../transaction/transaction-layer.js";
import { checkTransition } from "../transaction/transaction-state.js";
import type { Destination } from "../transport/sip-transport.js";
import { answerInfo } from "./dtmf-info.js";
import { OfferAnswer, OfferAnswerState } from "./offer-answer.js";
import { OkRetransmission } from "./ok-retransmission.js";
import { ReinviteClient } from "./reinvite-client.js";
import type { SessionEndedBy, SessionHost, SessionListener } from "./session-host.js";
import { SessionRefresh } from "./session-refresh.js";
import { type SessionEdges, SessionState } from "./session-state.js";

/** The cause of a BYE or CANCEL sent for no other reason: the call is over (Q.850 section 2.2.7.1). */
export const NORMAL_CLEARING: CallCause = { protocol: "Q.850", cause: 16, text: "Normal call clearing" };

/**
 * The cause of our BYE when the ACK of our 2xx never came (section 13.3.1.4): the request timed out,
 * as carriers write it.
 */
const ACK_TIMEOUT: CallCause = { protocol: "SIP", cause: 408, text: "ACK Timeout" };

export abstract class InviteSession {
  listener: SessionListener = {};
  protected dialog: Dialog | undefined;
  /** The one offer/answer negotiation of the session (RFC 3264), the initial INVITE's and every later one. */
  readonly offerAnswer = new OfferAnswer();
  protected readonly refresh: SessionRefresh;
  #state = SessionState.Initial;
  /** The CSeq of the offerless re-INVITE whose 2xx carried our offer: its ACK brings the answer. */
  #offerInOk: number | undefined;
  /** Our re-INVITE in progress (section 14.1: no second one until it completes). */
  #reinvite: ReinviteClient | undefined;
  readonly #ok: OkRetransmission;

  /**
   * Sections 8.1.1.8 and 12.1.1-2: a dialog set up by an INVITE to a SIPS URI (or record-routed
   * through one) is secure, and our Contact in it is a SIPS URI.
   */
  protected readonly secure: boolean;

  protected constructor(
    protected readonly host: SessionHost,
    invite: SipRequest,
    /** The session kind, for errors. */
    private readonly kind: string,
    /** The edges this kind of session has. */
    private readonly edges: SessionEdges,
    /** Which side of the dialog-creating INVITE we are (RFC 4028's uac or uas). */
    role: "uac" | "uas",
  ) {
    this.callId = invite.headers.callId ?? "";
    this.#ok = new OkRetransmission(host.clock);
    this.refresh = new SessionRefresh(
      host.clock,
      {
        hasEnded: () => this.ended,
        sendUpdate: (headers, onFinal) => this.#sendUpdate(headers, onFinal),
        refreshByReinvite: () => this.listener.refresh?.(),
        bye: (reason, cause) => this.bye(reason, cause),
      },
      role,
      host.sessionTimer.minimum,
    );
    const topRoute = invite.headers.recordRoute ?? invite.headers.route;
    this.secure =
      uriScheme(invite.uri) === "sips" || (topRoute !== undefined && uriScheme(topRoute.uri) === "sips");
  }

  readonly callId: string;

  get state(): SessionState {
    return this.#state;
  }

  get dialogId(): string | undefined {
    return this.dialog?.id;
  }

  get ended(): boolean {
    return this.#state === SessionState.Terminated;
  }

  /** The one way the state changes: refuses the edges this kind of session does not have. */
  protected transition(to: SessionState): void {
    checkTransition(this.kind, this.edges, this.#state, to);
    this.#state = to;
  }

  /**
   * Ends a session with a dialog by BYE (section 15.1.1), for `reason`, its Reason header saying
   * `cause` (RFC 3326); the session ends without waiting for the 200.
   */
  bye(reason = "hung up", cause: CallCause = NORMAL_CLEARING): void {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined || this.ended) return;
    this.host.sendNonInvite(
      this.#request(dialog, destination, "BYE", [["Reason", formatReason(cause)]]),
      destination,
    );
    this.end("local", reason, cause);
  }

  /**
   * Sends a key by SIP INFO (RFC 6086) as `application/dtmf-relay` (`Signal=5`, `Duration=` in ms),
   * the body carriers that take keys this way read; resolves true once the peer answers 2xx.
   */
  sendKey(key: string, durationMs: number): Promise<boolean> {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined || this.ended) return Promise.resolve(false);
    const request = this.#request(dialog, destination, "INFO", [], {
      contentType: "application/dtmf-relay",
      body: Buffer.from(`Signal=${key}\r\nDuration=${durationMs}\r\n`),
    });
    return new Promise((resolve) =>
      this.host.sendNonInvite(request, destination, (response) =>
        resolve(response !== undefined && response.status < 300),
      ),
    );
  }

  /**
   * Sends a re-INVITE with a new offer (section 14.1); resolves with the peer's answer, or undefined
   * when it refused the offer (the session continues unchanged, section 14.1), or when no offer may
   * be made now (section 14.1: another INVITE is in progress, or an offer is outstanding).
   */
  reinvite(offer: string): Promise<string | undefined> {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    if (
      dialog === undefined ||
      destination === undefined ||
      this.#state !== SessionState.Confirmed ||
      this.#reinvite !== undefined ||
      !this.offerAnswer.canOffer
    ) {
      return Promise.resolve(undefined);
    }
    const request = this.#request(
      dialog,
      destination,
      "INVITE",
      [["Allow", this.host.allow], ...this.refresh.requestHeaders()],
      { body: Buffer.from(offer) },
    );
    this.offerAnswer.sendOffer(offer);
    return new Promise((resolve) => {
      this.#reinvite = new ReinviteClient(dialog, {
        acknowledge: () => this.acknowledge(request),
        finish: (answer) => {
          this.#reinvite = undefined;
          if (answer === undefined) this.offerAnswer.rollback();
          else this.offerAnswer.receiveAnswer(answer);
          this.refresh.reinviteCompleted(answer !== undefined);
          resolve(answer);
        },
      });
      this.host.sendInvite(request, destination, this.#reinvite);
    });
  }

  /** A request within this session's dialog, answered through its server transaction. */
  receiveRequest(request: SipRequest, transaction: ServerTransaction): void {
    const dialog = this.dialog;
    if (dialog === undefined) return;
    if (!dialog.receiveRequest(request)) {
      transaction.respond(
        responseTo(request, 500, "Server Internal Error", { headers: [["Retry-After", "1"]] }),
      );
      return;
    }
    switch (request.method) {
      case "BYE":
        transaction.respond(responseTo(request, 200, "OK"));
        this.end("remote", "hung up", request.headers.reasonCause);
        return;
      case "INVITE":
        this.#receiveReinvite(request, transaction as InviteServerTransaction);
        return;
      case "OPTIONS":
        transaction.respond(responseTo(request, 200, "OK", { headers: [["Allow", this.host.allow]] }));
        return;
      case "INFO":
        answerInfo(request, transaction, (key) => this.listener.digit?.(key));
        return;
      case "UPDATE":
        this.#receiveUpdate(request, transaction);
        return;
      case "PRACK":
        this.receivePrack(request, transaction);
        return;
      default:
        transaction.respond(
          responseTo(request, 501, "Not Implemented", { headers: [["Allow", this.host.allow]] }),
        );
    }
  }

  /** A PRACK (RFC 3262): only a session that sent reliable provisional responses has one to match. */
  receivePrack(request: SipRequest, transaction: ServerTransaction): void {
    transaction.respond(responseTo(request, 481, "Call/Transaction Does Not Exist"));
  }

  /**
   * A peer's offer in a re-INVITE or UPDATE, taken when none is outstanding: the listener's answer,
   * or the status it refused the offer with (the session continues unchanged, RFC 3264 section 8).
   */
  #answerOffer(offer: string): { answer: string } | { status: number } {
    this.offerAnswer.receiveOffer(offer);
    const outcome = this.listener.reoffer?.(offer) ?? { status: 488 };
    if ("status" in outcome) this.offerAnswer.rollback();
    else this.offerAnswer.sendAnswer(outcome.answer);
    return outcome;
  }

  /**
   * UPDATE (RFC 3311): an offer in it is answered in the 2xx like a re-INVITE's (491 while an offer
   * is outstanding, section 5.2); with or without one, it refreshes the session timer (RFC 4028).
   */
  #receiveUpdate(request: SipRequest, transaction: ServerTransaction): void {
    let answer: string | undefined;
    if (request.body.length > 0) {
      if (!this.offerAnswer.canOffer) {
        transaction.respond(responseTo(request, 491, "Request Pending"));
        return;
      }
      const outcome = this.#answerOffer(request.body.toString());
      if ("status" in outcome) {
        transaction.respond(responseTo(request, outcome.status, "Not Acceptable Here"));
        return;
      }
      answer = outcome.answer;
    }
    transaction.respond(
      responseTo(request, 200, "OK", {
        headers: [
          ["Contact", this.host.contact(transportOf(request), this.secure)],
          ...this.refresh.receivedRefresh(request),
          ...(answer === undefined ? [] : ([["Content-Type", "application/sdp"]] as [string, string][])),
        ],
        ...(answer === undefined ? {} : { body: Buffer.from(answer) }),
      }),
    );
  }

  /** An UPDATE refresh (session-refresh.ts) within the dialog; false without one to send it in. */
  #sendUpdate(
    headers: readonly [string, string][],
    onFinal: (response: SipResponse | undefined) => void,
  ): boolean {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined || this.ended) return false;
    this.host.sendNonInvite(this.#request(dialog, destination, "UPDATE", headers), destination, onFinal);
    return true;
  }

  /** The ACK for a 2xx we sent within this dialog: it stops the 2xx's retransmissions. */
  receiveAck(ack: SipRequest): void {
    if (this.#ok.ackArrived(ack.headers.cseq?.seq)) this.acknowledged(ack);
  }

  /** The first ACK of our 2xx to a re-INVITE; after an offerless one it carries the answer. */
  protected acknowledged(ack: SipRequest): void {
    const cseq = ack.headers.cseq?.seq;
    if (cseq === undefined || cseq !== this.#offerInOk) return;
    this.#offerInOk = undefined;
    if (this.offerAnswer.state !== OfferAnswerState.HaveLocalOffer) return;
    this.listener.lateAnswer?.(this.offerAnswer.receiveAnswer(ack.body.toString()));
  }

  /** A 2xx the transaction layer could not match: the peer did not get our ACK (section 13.2.2.4). */
  receiveStray2xx(response: SipResponse): void {
    const ack = this.#sentAcks.get(response.headers.cseq?.seq ?? -1);
    const destination = this.dialog?.destination;
    if (ack !== undefined && destination !== undefined) this.host.sendAck(ack, destination);
  }

  /** ACKs by the CSeq of the INVITE they acknowledge, for 2xx retransmissions. */
  readonly #sentAcks = new Map<number, SipRequest>();

  /** Section 13.2.2.4: the UAC core ACKs each 2xx itself, within the dialog, with the INVITE's CSeq. */
  protected acknowledge(invite: SipRequest): void {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    const cseq = invite.headers.cseq?.seq;
    if (dialog === undefined || destination === undefined || cseq === undefined) return;
    let ack = this.#sentAcks.get(cseq);
    if (ack === undefined) {
      ack = dialog.createRequest("ACK", {
        via: this.host.via(destination.transport),
        contact: this.host.contact(destination.transport, this.secure),
        cseq,
      });
      this.#sentAcks.set(cseq, ack);
    }
    this.host.sendAck(ack, destination);
  }

  /**
   * Section 14.2: answers a re-INVITE; 491 while our own is in progress or an offer is outstanding
   * (RFC 3264 section 4). One without an offer gets ours in the 2xx, answered in the ACK.
   */
  #receiveReinvite(request: SipRequest, transaction: InviteServerTransaction): void {
    if (this.#reinvite !== undefined || !this.offerAnswer.canOffer) {
      transaction.respond(responseTo(request, 491, "Request Pending"));
      return;
    }
    let sdp: string;
    const offer = request.body.length === 0 ? this.listener.offer?.() : undefined;
    if (offer !== undefined) {
      this.offerAnswer.sendOffer(offer);
      this.#offerInOk = request.headers.cseq?.seq;
      sdp = offer;
    } else {
      const outcome = this.#answerOffer(request.body.toString());
      if ("status" in outcome) {
        transaction.respond(responseTo(request, outcome.status, "Not Acceptable Here"));
        return;
      }
      sdp = outcome.answer;
    }
    const ok = this.okResponse(request, sdp, this.refresh.receivedRefresh(request));
    transaction.respond(ok);
    this.retransmitUntilAcked(ok, transaction);
  }

  /** A 2xx to an INVITE with our SDP; `toTag` for the dialog-creating one (section 12.1.1). */
  protected okResponse(
    request: SipRequest,
    sdp: string,
    extra: [string, string][] = [],
    transport = transportOf(request),
    toTag?: string,
  ): SipResponse {
    return responseTo(request, 200, "OK", {
      ...(toTag === undefined ? {} : { toTag }),
      headers: [
        ["Contact", this.host.contact(transport, this.secure)],
        ["Allow", this.host.allow],
        ["Supported", "timer"],
        ...extra,
        ["Content-Type", "application/sdp"],
        ["User-Agent", this.host.userAgent],
      ],
      body: Buffer.from(sdp),
    });
  }

  /** Section 13.3.1.4: our 2xx, sent again until its ACK; without one, the session ends with BYE. */
  protected retransmitUntilAcked(ok: SipResponse, transaction: InviteServerTransaction): void {
    this.#ok.start(ok, transaction, () => this.ackTimedOut());
  }

  protected ackTimedOut(): void {
    this.bye("no ACK", ACK_TIMEOUT);
  }

  /**
   * Enters Terminated (once): every timer stopped, the user agent and the listener told; `cause`,
   * the Reason of the BYE that ended it, received or sent.
   */
  protected end(by: SessionEndedBy, reason: string, cause: CallCause | null = null): void {
    if (this.ended) return;
    this.transition(SessionState.Terminated);
    this.refresh.stop();
    this.#ok.stop();
    this.host.sessionEnded(this);
    this.listener.ended?.(by, reason, cause);
  }

  /** A request within the dialog, with our Via, Contact and User-Agent. */
  #request(
    dialog: Dialog,
    destination: Destination,
    method: string,
    headers: readonly [string, string][] = [],
    content: { readonly body?: Buffer; readonly contentType?: string } = {},
  ): SipRequest {
    return dialog.createRequest(method, {
      via: this.host.via(destination.transport),
      contact: this.host.contact(destination.transport, this.secure),
      headers: [["User-Agent", this.host.userAgent], ...headers],
      ...content,
    });
  }
}

/** The transport a request came over, from its top Via. */
export function transportOf(request: SipRequest): Destination["transport"] {
  const transport = request.headers.via?.transport;
  return transport === "TCP" || transport === "TLS" ? transport : "UDP";
}
