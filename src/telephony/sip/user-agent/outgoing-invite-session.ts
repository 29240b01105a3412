/**
 * The UAC side of an INVITE (RFC 3261 sections 13.2, 9.1): a call we place. It sends the INVITE, retries
 * once with digest credentials (section 22.2), once with a longer session interval (RFC 4028 section
 * 7.4) and once after a short Retry-After of a 503 (section 21.5.4), fails over to the next server (RFC
 * 3263 section 4.3), PRACKs reliable provisional responses in their own early dialogs (RFC 3262), ACKs
 * the 2xx itself (section 13.2.2.4), CANCELs only after a provisional response (section 9.1), with a
 * Reason (RFC 3326), and ends a 2xx that crosses its CANCEL with ACK then BYE.
 */

import type { CallCause } from "../../../domain/call-record.js";
import type { TimerHandle } from "../../../domain/clock.js";
import { formatReason } from "../message/header-values.js";
import { SIP_VERSION, SipHeaders, type SipRequest, type SipResponse } from "../message/sip-message.js";
import type { InviteClientTransaction } from "../transaction/invite-client-transaction.js";
import type { Destination } from "../transport/sip-transport.js";
import { chooseChallenge, digestAuthorization } from "./digest.js";
import { type EarlyDialog, EarlyDialogs } from "./early-dialogs.js";
import { InviteSession, NORMAL_CLEARING } from "./invite-session.js";
import { OfferAnswerState } from "./offer-answer.js";
import type { Credentials, InviteResponseHandler, SessionHost } from "./session-host.js";
import { type SessionEdges, SessionState } from "./session-state.js";

/**
 * Where an INVITE goes when its first server fails (RFC 3263 section 4.3): the next servers in order,
 * how long one may stay silent before the next is tried, and whom to tell of a server that failed.
 */
export interface Failover {
  readonly next: readonly Destination[];
  readonly targetTimeoutMs?: number;
  /**
   * The call has somewhere else to go once every server here failed (another trunk): the last server
   * too is given up when silent for targetTimeoutMs (408), rather than at Timer B.
   */
  readonly elsewhere?: boolean;
  readonly onTargetFailed?: (target: Destination, reason: string) => void;
}

const NO_BODY = Buffer.alloc(0);

/**
 * The longest Retry-After of a 503 that the INVITE is sent again after (once, to the same server):
 * a server busy for a moment (a carrier's burst limit) takes the call a few seconds on; one that asks
 * for longer, or names no time, fails the call at once, the caller being better told than kept
 * waiting in silence.
 */
export const MAX_RETRY_AFTER_SECONDS = 10;

/** The edges of an outgoing session; Initial to Initial is the INVITE sent again (a new attempt). */
export const OUTGOING_EDGES: SessionEdges = {
  [SessionState.Initial]: [
    SessionState.Early,
    SessionState.Retrying,
    SessionState.Cancelling,
    SessionState.Confirmed,
    SessionState.Initial,
    SessionState.Terminated,
  ],
  [SessionState.Early]: [
    SessionState.Initial,
    SessionState.Retrying,
    SessionState.Cancelling,
    SessionState.Confirmed,
    SessionState.Terminated,
  ],
  [SessionState.Retrying]: [SessionState.Initial, SessionState.Terminated],
  [SessionState.Cancelling]: [SessionState.Confirmed, SessionState.Terminated],
  [SessionState.Confirmed]: [SessionState.Terminated],
};

export class OutgoingInviteSession extends InviteSession implements InviteResponseHandler {
  #invite: SipRequest;
  #destination: Destination;
  readonly #next: Destination[];
  readonly #failover: Failover | undefined;
  #transaction: InviteClientTransaction | undefined;
  #targetTimer: TimerHandle | undefined;
  /** The early dialogs of the current attempt, by the To tag of the UAS that set each up. */
  readonly #early = new EarlyDialogs();
  /** Section 22.2: this server's challenge was answered already; a second one fails the call. */
  #challengeAnswered = false;
  /** A 503's Retry-After was waited out once already: another 503 fails the call. */
  #retriedAfter = false;
  /** The wait of the Retrying state. */
  #retryTimer: TimerHandle | undefined;
  /** Why the call is given up (the Reason of our CANCEL, or of the BYE to a 2xx that crossed it). */
  #cancelCause: CallCause = NORMAL_CLEARING;

  constructor(
    host: SessionHost,
    invite: SipRequest,
    destination: Destination,
    private readonly credentials: Credentials | undefined,
    failover?: Failover,
  ) {
    super(host, invite, "outgoing INVITE session", OUTGOING_EDGES, "uac");
    this.#invite = invite;
    this.#destination = destination;
    this.#next = [...(failover?.next ?? [])];
    this.#failover = failover;
    if (invite.body.length > 0) this.offerAnswer.sendOffer(invite.body.toString());
  }

  /** The server the INVITE went to last. */
  get destination(): Destination {
    return this.#destination;
  }

  start(): void {
    const transaction = this.host.sendInvite(this.#invite, this.#destination, this);
    this.#transaction = transaction;
    const timeout = this.#failover?.targetTimeoutMs;
    if ((this.#next.length > 0 || this.#failover?.elsewhere) && timeout !== undefined) {
      this.#targetTimer = this.host.clock.setTimeout(() => {
        // Only a silent server is left (nothing answered, and the call is not being given up: a
        // cancelled one keeps its transaction, for the CANCEL once a response comes).
        if (this.state !== SessionState.Initial || this.#transaction !== transaction) return;
        transaction.abandon();
        const reason = `no response within ${timeout} ms`;
        if (this.#failOver(reason)) return;
        this.listener.failed?.(408, "Request Timeout", null);
        this.end("error", reason);
      }, timeout);
    }
  }

  /** Whether the INVITE still waits for its final response. */
  get #awaitingFinal(): boolean {
    const state = this.state;
    return (
      state === SessionState.Initial || state === SessionState.Early || state === SessionState.Cancelling
    );
  }

  /**
   * Section 4.3 of RFC 3263: the same request in a new transaction (a new branch) to the next server.
   * False when there is none, or the call is being given up.
   */
  #failOver(reason: string): boolean {
    if (this.state === SessionState.Cancelling) return false;
    const next = this.#next.shift();
    if (next === undefined) return false;
    this.#failover?.onTargetFailed?.(this.#destination, reason);
    this.#destination = next;
    // A new server: the last one's credentials mean nothing to it.
    this.#challengeAnswered = false;
    this.#sendAgain({ Authorization: null, "Proxy-Authorization": null }, false);
    return true;
  }

  /**
   * The INVITE again in a new transaction (a new branch, over the current server's transport; the
   * next CSeq unless it only goes to another server, RFC 3263 section 4.3): `changes` sets, or with
   * null drops, headers; the attempt starts afresh (Initial: no provisional response, no early dialog).
   */
  #sendAgain(changes: Readonly<Record<string, string | null>>, nextCSeq: boolean): void {
    const previous = this.#invite;
    const cseq = (previous.headers.cseq?.seq ?? 1) + 1;
    const transport = this.#destination.transport;
    const headers = new SipHeaders();
    for (const [name, value] of previous.headers) {
      if (name === "Via") headers.append(name, this.host.via(transport));
      else if (name === "Contact") headers.append(name, this.host.contact(transport, this.secure));
      else if (name === "CSeq" && nextCSeq) headers.append(name, `${cseq} INVITE`);
      else if (name !== "Content-Length" && !(name in changes)) headers.append(name, value);
    }
    for (const [name, value] of Object.entries(changes)) if (value !== null) headers.append(name, value);
    headers.append("Content-Length", String(previous.body.length));
    this.#invite = { ...previous, headers };
    this.transition(SessionState.Initial);
    this.#early.clear();
    this.start();
  }

  /**
   * Gives the call up for `cause` (the Reason it carries, RFC 3326): before its answer by CANCEL
   * (section 9.1), at once when a provisional response has come, else with the first one; while
   * waiting to retry, at once, nothing being outstanding; after its answer, by BYE.
   */
  cancel(cause: CallCause = NORMAL_CLEARING): void {
    switch (this.state) {
      case SessionState.Initial:
        this.#cancelCause = cause;
        this.transition(SessionState.Cancelling);
        return;
      case SessionState.Early:
        this.#cancelCause = cause;
        this.transition(SessionState.Cancelling);
        this.#sendCancel();
        return;
      case SessionState.Retrying:
        this.host.clock.clearTimeout(this.#retryTimer);
        this.#retryTimer = undefined;
        this.end("local", "cancelled", cause);
        return;
      case SessionState.Confirmed:
        this.bye("hung up", cause);
        return;
      default:
        return;
    }
  }

  receiveResponse(response: SipResponse): void {
    if (this.#targetTimer !== undefined) this.host.clock.clearTimeout(this.#targetTimer);
    this.#targetTimer = undefined;
    if (!this.#awaitingFinal) return;
    // RFC 3263 section 4.3: a server that answers 503 is failed over like one that does not answer;
    // the last one's Retry-After may be waited out.
    if (response.status === 503 && (this.#failOver(`503 ${response.reason}`) || this.#retryAfter(response)))
      return;
    if (response.status < 200) {
      this.#provisional(response);
      return;
    }
    if (response.status < 300) {
      this.#confirm(response);
      return;
    }
    if ((response.status === 401 || response.status === 407) && this.#retryWithCredentials(response)) return;
    if (response.status === 422 && this.#retryWithLongerInterval(response)) return;
    // RFC 3326 (and RFC 6432 for Q.850 causes in responses): the Reason says why, when given.
    const cause = response.headers.reasonCause;
    this.listener.failed?.(response.status, response.reason, cause, response);
    this.end("error", response.reason, cause);
  }

  onTimeout(): void {
    if (!this.#awaitingFinal || this.#failOver("no answer (Timer B)")) return;
    this.listener.failed?.(408, "Request Timeout", null);
    this.end("error", "timeout");
  }

  onTransportError(error: Error): void {
    if (!this.#awaitingFinal || this.#failOver(error.message)) return;
    // The reason says what failed (a refused connection, a TLS certificate that did not verify).
    this.listener.failed?.(503, `Service Unavailable: ${error.message}`, null);
    this.end("error", error.message);
  }

  /**
   * Section 21.5.4: a 503 whose Retry-After is at most MAX_RETRY_AFTER_SECONDS has the INVITE sent
   * again (next CSeq, new branch) once that has passed: the Retrying state until then. Once per
   * call, and not for a call being given up.
   */
  #retryAfter(response: SipResponse): boolean {
    const seconds = response.headers.retryAfter;
    if (
      seconds === undefined ||
      seconds > MAX_RETRY_AFTER_SECONDS ||
      this.#retriedAfter ||
      this.state === SessionState.Cancelling
    )
      return false;
    this.#retriedAfter = true;
    this.transition(SessionState.Retrying);
    this.#retryTimer = this.host.clock.setTimeout(() => {
      this.#retryTimer = undefined;
      if (this.state !== SessionState.Retrying) return;
      // A new request: its credentials are answered afresh should the server challenge it (a
      // nonce's count is not replayed, RFC 2617 section 3.2.2).
      this.#challengeAnswered = false;
      this.#sendAgain({ Authorization: null, "Proxy-Authorization": null }, true);
    }, seconds * 1000);
    return true;
  }

  /**
   * A provisional response: a CANCEL may go now (section 9.1), and goes at once when the call is being
   * given up; one with a To tag is in its UAS's early dialog (section 12.1.2), and PRACKed there when
   * reliable (RFC 3262 section 4).
   */
  #provisional(response: SipResponse): void {
    if (this.state === SessionState.Initial) this.transition(SessionState.Early);
    const early = response.status > 100 ? this.#early.receive(this.#invite, response) : undefined;
    if (early !== undefined && response.headers.requires("100rel")) this.#prack(early, response);
    if (this.state === SessionState.Cancelling) this.#sendCancel();
    else if (response.status > 100) this.listener.progress?.(response);
  }

  /**
   * RFC 3262 section 4: a reliable provisional response is acknowledged with PRACK in its own early
   * dialog (RAck: its RSeq, the INVITE's CSeq), when its RSeq is the one that dialog takes next.
   */
  #prack(early: EarlyDialog, response: SipResponse): void {
    const rseq = response.headers.rseq;
    if (rseq === undefined || !early.takeRSeq(rseq)) return;
    const destination = early.dialog.destination;
    if (destination === undefined) return;
    const cseq = this.#invite.headers.cseq?.seq ?? 1;
    const prack = early.dialog.createRequest("PRACK", {
      via: this.host.via(destination.transport),
      contact: this.host.contact(destination.transport, this.secure),
      headers: [
        ["RAck", `${rseq} ${cseq} INVITE`],
        ["User-Agent", this.host.userAgent],
      ],
    });
    this.host.sendNonInvite(prack, destination);
  }

  /**
   * Section 13.2.2.4: the 2xx confirms the early dialog of the UAS that answered (its To tag), or makes
   * the dialog; the UAC core ACKs it. The answer to our offer is in it (section 13.2.1).
   */
  #confirm(response: SipResponse): void {
    const dialog = this.#early.confirm(this.#invite, response);
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined) {
      this.listener.failed?.(502, "Bad Gateway", null);
      this.end("error", "unusable 2xx");
      return;
    }
    const cancelled = this.state === SessionState.Cancelling;
    this.dialog = dialog;
    this.transition(SessionState.Confirmed);
    this.acknowledge(this.#invite);
    this.host.dialogConfirmed(this);
    // RFC 4028 section 7.2: the 2xx says whether a timer runs and who refreshes.
    this.refresh.peerAllowsUpdate = response.headers.allows("UPDATE");
    const timer = response.headers.sessionExpires;
    if (timer !== undefined) this.refresh.start(timer.interval, timer.refresher ?? "uac");
    if (cancelled) {
      // Section 9.1 / 15: the 2xx crossed our CANCEL; the call is ended with BYE, for the same cause.
      this.listener.failed?.(487, "Request Terminated", this.#cancelCause);
      this.bye("cancelled", this.#cancelCause);
      return;
    }
    const answer =
      this.offerAnswer.state === OfferAnswerState.HaveLocalOffer
        ? this.offerAnswer.receiveAnswer(response.body.toString())
        : undefined;
    this.listener.confirmed?.(answer);
  }

  /** Section 22.2: one retry with credentials per challenge; a second challenge fails the call. */
  #retryWithCredentials(response: SipResponse): boolean {
    if (this.credentials === undefined || this.#challengeAnswered || this.state === SessionState.Cancelling)
      return false;
    const proxy = response.status === 407;
    const challenge = chooseChallenge(
      response.headers.getAll(proxy ? "Proxy-Authenticate" : "WWW-Authenticate"),
    );
    if (challenge === undefined) return false;
    this.#challengeAnswered = true;
    const authorization = digestAuthorization(challenge, {
      username: this.credentials.username,
      password: this.credentials.password,
      method: "INVITE",
      uri: this.#invite.uri,
      nonceCount: 1,
      body: this.#invite.body,
    });
    this.#sendAgain({ [proxy ? "Proxy-Authorization" : "Authorization"]: authorization }, true);
    return true;
  }

  /**
   * RFC 4028 section 7.4: a 422 names the smallest interval the peer takes; the INVITE goes again
   * (next CSeq, new branch) asking for that. Once: a second 422 fails the call.
   */
  #retryWithLongerInterval(response: SipResponse): boolean {
    const minimum = response.headers.minSe;
    const asked = this.#invite.headers.sessionExpires?.interval ?? 0;
    if (minimum === undefined || minimum <= asked || this.state === SessionState.Cancelling) return false;
    this.#sendAgain({ "Session-Expires": String(minimum), "Min-SE": String(minimum) }, true);
    return true;
  }

  /**
   * Section 9.1: same Request-URI, Call-ID, From, To, CSeq number and the INVITE's top Via (so
   * branch); and why (RFC 3326 section 2).
   */
  #sendCancel(): void {
    const invite = this.#invite;
    const headers = new SipHeaders();
    const via = invite.headers.get("Via");
    if (via !== undefined) headers.append("Via", via);
    for (const route of invite.headers.getAll("Route")) headers.append("Route", route);
    headers.append("Max-Forwards", "70");
    for (const name of ["From", "To", "Call-ID"]) {
      const value = invite.headers.get(name);
      if (value !== undefined) headers.append(name, value);
    }
    const seq = invite.headers.cseq?.seq ?? 1;
    headers.append("CSeq", `${seq} CANCEL`);
    headers.append("Reason", formatReason(this.#cancelCause));
    headers.append("Content-Length", "0");
    const cancel: SipRequest = {
      kind: "request",
      method: "CANCEL",
      uri: invite.uri,
      version: SIP_VERSION,
      headers,
      body: NO_BODY,
    };
    this.host.sendNonInvite(cancel, this.#destination);
  }
}
