/**
 * INVITE sessions (RFC 3261 sections 13-15): the call a dialog carries, from either side. The UAC side
 * sends the INVITE, retries once with digest credentials, ACKs 2xx responses itself (section 13.2.2.4),
 * CANCELs only after a provisional response (section 9.1) and ends a 2xx that crosses its CANCEL with
 * ACK then BYE. The UAS side rings, answers and retransmits its 2xx until the ACK (section 13.3.1.4).
 * Both sides re-INVITE (section 14) and hang up with BYE (section 15). SDP is opaque here.
 */

import { randomInt } from "node:crypto";
import type { Clock, TimerHandle } from "../../../domain/clock.js";
import { Dialog } from "../dialog/dialog.js";
import { listsToken } from "../message/header-values.js";
import { SIP_VERSION, SipHeaders, type SipRequest, type SipResponse } from "../message/sip-message.js";
import type { InviteClientTransaction } from "../transaction/invite-client-transaction.js";
import type { InviteServerTransaction } from "../transaction/invite-server-transaction.js";
import { T1, T2, TIMER_H } from "../transaction/timers.js";
import type { ServerTransaction } from "../transaction/transaction-layer.js";
import { responseTo } from "../transaction/transaction-layer.js";
import { TransactionState } from "../transaction/transaction-state.js";
import type { Destination, MessageSource } from "../transport/sip-transport.js";
import { chooseChallenge, digestAuthorization } from "./digest.js";
import {
  parseMinSe,
  parseSessionExpires,
  type Refresher,
  SessionTimer,
  type SessionTimerSettings,
  timerForInvite,
  timerHeaders,
} from "./session-timer.js";

/** What the session needs of the user agent core that owns it. */
export interface SessionHost {
  readonly clock: Clock;
  /** A Via value with a fresh branch for a request over the transport. */
  via(transport: Destination["transport"]): string;
  /** Our Contact for a request or response over the transport; a SIPS URI in a secure dialog. */
  contact(transport: Destination["transport"], secure: boolean): string;
  readonly allow: string;
  readonly userAgent: string;
  sendInvite(
    request: SipRequest,
    destination: Destination,
    handler: InviteResponseHandler,
  ): InviteClientTransaction;
  sendNonInvite(
    request: SipRequest,
    destination: Destination,
    onFinal?: (response: SipResponse | undefined) => void,
  ): void;
  /** Session timers (RFC 4028): what we ask for and accept. */
  readonly sessionTimer: SessionTimerSettings;
  sendAck(ack: SipRequest, destination: Destination): void;
  dialogConfirmed(session: InviteSession): void;
  sessionEnded(session: InviteSession): void;
}

/** Who hears of the responses to an INVITE we sent. */
export interface InviteResponseHandler {
  receiveResponse(response: SipResponse): void;
  onTimeout(): void;
  onTransportError(error: Error): void;
}

export type SessionEndedBy = "local" | "remote" | "error";

/** What the layer above hears of a session. Every callback is optional. */
export interface SessionListener {
  /** UAC: a provisional response other than 100. */
  progress?(response: SipResponse): void;
  /** UAC: the 2xx, already ACKed. UAS: the ACK for our 2xx arrived. */
  confirmed?(remoteSdp: string): void;
  /** UAC: a final non-2xx (or 408 on timeout, 503 on transport error). UAS: CANCELled before answer. */
  failed?(status: number, reason: string): void;
  /**
   * The session ended: a confirmed one, or one that never was (after `failed`, which comes first; or
   * alone, as a UAS whose 2xx was never ACKed).
   */
  ended?(by: SessionEndedBy, reason: string): void;
  /** A re-INVITE offer from the peer: the answer SDP, or a status to refuse it with (488). */
  reoffer?(remoteSdp: string): { answer: string } | { status: number };
  /** A re-INVITE without an offer: ours, for the 2xx (RFC 3261 section 14.2, RFC 3264). */
  offer?(): string;
  /**
   * A session refresh is due and the peer does not allow UPDATE: the listener re-INVITEs with its
   * current description (through `reinvite`).
   */
  refresh?(): void;
  /** The answer to the offer in our 2xx to an offerless re-INVITE, from the peer's ACK. */
  lateAnswer?(remoteSdp: string): void;
  /** A key the peer sent by SIP INFO (application/dtmf-relay or application/dtmf). */
  digit?(key: string): void;
}

export interface Credentials {
  readonly username: string;
  readonly password: string;
}

const NO_BODY = Buffer.alloc(0);

export abstract class InviteSession {
  listener: SessionListener = {};
  protected dialog: Dialog | undefined;
  protected endedAlready = false;
  /** Our re-INVITE in progress (section 14.1: no second one until it completes). */
  protected reinviteInProgress = false;

  /**
   * Sections 8.1.1.8 and 12.1.1-2: a dialog set up by an INVITE to a SIPS URI (or record-routed
   * through one) is secure, and our Contact in it is a SIPS URI.
   */
  protected readonly secure: boolean;

  /** RFC 4028: the session interval in force, and who refreshes; undefined without a timer. */
  #interval: number | undefined;
  #weRefresh = false;
  /** Which side of the dialog-creating INVITE we are. */
  protected abstract readonly role: Refresher;
  /** The peer's Allow (from its INVITE or 2xx): whether refreshes may use UPDATE. */
  protected peerAllowsUpdate = false;
  readonly #timer: SessionTimer;

  protected constructor(
    protected readonly host: SessionHost,
    invite: SipRequest,
  ) {
    this.callId = invite.headers.callId ?? "";
    this.#timer = new SessionTimer(host.clock, {
      refresh: () => this.#refresh(),
      expire: () => this.#expired(),
    });
    const topRoute = invite.headers.get("Record-Route") ?? invite.headers.get("Route") ?? "";
    this.secure = /^sips:/i.test(invite.uri) || /^\s*(?:[^<]*<)?sips:/i.test(topRoute);
  }

  readonly callId: string;

  get dialogId(): string | undefined {
    return this.dialog?.id;
  }

  get ended(): boolean {
    return this.endedAlready;
  }

  /**
   * Ends a confirmed session with BYE (section 15.1.1), for `reason`; the session ends without
   * waiting for the 200.
   */
  bye(reason = "hung up"): void {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined || this.endedAlready) return;
    const request = dialog.createRequest("BYE", {
      via: this.host.via(destination.transport),
      contact: this.host.contact(destination.transport, this.secure),
      headers: [["User-Agent", this.host.userAgent]],
    });
    this.host.sendNonInvite(request, destination);
    this.end("local", reason);
  }

  /**
   * Sends a key by SIP INFO (RFC 6086) as `application/dtmf-relay` (`Signal=5`, `Duration=` in ms),
   * the body carriers that take keys this way read; resolves true once the peer answers 2xx.
   */
  sendKey(key: string, durationMs: number): Promise<boolean> {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined || this.endedAlready) return Promise.resolve(false);
    const request = dialog.createRequest("INFO", {
      via: this.host.via(destination.transport),
      contact: this.host.contact(destination.transport, this.secure),
      headers: [["User-Agent", this.host.userAgent]],
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
   * Sends a re-INVITE with a new offer (section 14.1); resolves with the peer's answer, or undefined when
   * it refused the offer (the session continues unchanged, section 14.1).
   */
  reinvite(offer: string): Promise<string | undefined> {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined || this.endedAlready || this.reinviteInProgress) {
      return Promise.resolve(undefined);
    }
    this.reinviteInProgress = true;
    const request = dialog.createRequest("INVITE", {
      via: this.host.via(destination.transport),
      contact: this.host.contact(destination.transport, this.secure),
      headers: [["Allow", this.host.allow], ["User-Agent", this.host.userAgent], ...this.#refreshHeaders()],
      body: Buffer.from(offer),
    });
    return new Promise((resolve) => {
      const finish = (answer: string | undefined) => {
        this.reinviteInProgress = false;
        // A re-INVITE that succeeds refreshes the session (RFC 4028 section 10); after one that
        // failed (a glare, a refusal) our refresh timer runs again, so that the next one is tried.
        if (answer !== undefined || this.#weRefresh) this.#restartTimer();
        resolve(answer);
      };
      const reinvite = new Reinvite(dialog, () => this.acknowledge(request), finish);
      this.host.sendInvite(request, destination, reinvite);
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
        this.end("remote", "hung up");
        return;
      case "INVITE":
        this.receiveReinvite(request, transaction as InviteServerTransaction);
        return;
      case "OPTIONS":
        transaction.respond(responseTo(request, 200, "OK", { headers: [["Allow", this.host.allow]] }));
        return;
      case "INFO":
        this.#receiveInfo(request, transaction);
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

  /**
   * UPDATE (RFC 3311): an offer in it is answered in the 2xx like a re-INVITE's; with or without one,
   * it refreshes the session timer (RFC 4028).
   */
  #receiveUpdate(request: SipRequest, transaction: ServerTransaction): void {
    let answer: string | undefined;
    if (request.body.length > 0) {
      const outcome = this.listener.reoffer?.(request.body.toString()) ?? { status: 488 };
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
          ...this.#refreshedBy(request),
          ...(answer === undefined ? [] : ([["Content-Type", "application/sdp"]] as [string, string][])),
        ],
        ...(answer === undefined ? {} : { body: Buffer.from(answer) }),
      }),
    );
  }

  /**
   * Starts the session timer the dialog-creating exchange agreed on (RFC 4028 sections 7 and 9).
   * `refresher` names the UAC or UAS of that INVITE, which is `role` for us.
   */
  protected startSessionTimer(interval: number, refresher: Refresher): void {
    this.#interval = interval;
    this.#weRefresh = refresher === this.role;
    this.#restartTimer();
  }

  #restartTimer(): void {
    if (this.#interval !== undefined && !this.endedAlready)
      this.#timer.start(this.#interval, this.#weRefresh);
  }

  /**
   * The Session-Expires and Supported a refresh we send carries, when a timer runs. In a refresh,
   * uac and uas name the sides of that transaction (section 4): we are its UAC.
   */
  #refreshHeaders(): [string, string][] {
    if (this.#interval === undefined) return [];
    return [
      ["Session-Expires", `${this.#interval};refresher=${this.#weRefresh ? "uac" : "uas"}`],
      ["Supported", "timer"],
    ];
  }

  /**
   * A refresh from the peer (a re-INVITE or UPDATE), of which we are the UAS: its Session-Expires,
   * if any, sets the interval and who refreshes (uac: the peer; uas, or none named: we keep who did);
   * the timer restarts; our 2xx states the timer (section 9).
   */
  #refreshedBy(request: SipRequest): [string, string][] {
    const asked = parseSessionExpires(request.headers.get("Session-Expires"));
    if (asked !== undefined && asked.interval >= this.host.sessionTimer.minimum) {
      this.#interval = asked.interval;
      if (asked.refresher !== undefined) this.#weRefresh = asked.refresher === "uas";
    }
    this.#restartTimer();
    return this.#interval === undefined ? [] : timerHeaders(this.#interval, this.#weRefresh ? "uas" : "uac");
  }

  /** Half the interval has passed and we refresh: by UPDATE without a body when allowed, else re-INVITE. */
  #refresh(): void {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined || this.endedAlready) return;
    if (!this.peerAllowsUpdate) {
      this.listener.refresh?.();
      return;
    }
    const update = dialog.createRequest("UPDATE", {
      via: this.host.via(destination.transport),
      contact: this.host.contact(destination.transport, this.secure),
      headers: [["User-Agent", this.host.userAgent], ...this.#refreshHeaders()],
    });
    this.host.sendNonInvite(update, destination, (response) => {
      if (this.endedAlready) return;
      if (response !== undefined && response.status < 300) {
        // The 2xx to our refresh: uac is us, its sender's word on who refreshes next.
        const stated = parseSessionExpires(response.headers.get("Session-Expires"));
        if (stated !== undefined) {
          this.#interval = stated.interval;
          if (stated.refresher !== undefined) this.#weRefresh = stated.refresher === "uac";
        }
        this.#restartTimer();
        return;
      }
      // Section 10: a refresh that fails for good (481, 408, no answer) ends the session.
      if (response === undefined || [408, 481].includes(response.status)) this.bye("session refresh failed");
      else this.#restartTimer();
    });
  }

  /** The peer should have refreshed and has not (section 10): BYE. */
  #expired(): void {
    this.bye("session expired: no refresh came");
  }

  /**
   * INFO (RFC 6086, legacy use without Info-Package): keys in the two bodies phones and carriers
   * send; an INFO without a body (a keep-alive) is taken; other bodies get 415 with what we accept.
   */
  #receiveInfo(request: SipRequest, transaction: ServerTransaction): void {
    const type = (request.headers.get("Content-Type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
    if (request.body.length > 0 && type !== "application/dtmf-relay" && type !== "application/dtmf") {
      transaction.respond(
        responseTo(request, 415, "Unsupported Media Type", {
          headers: [["Accept", "application/dtmf-relay, application/dtmf"]],
        }),
      );
      return;
    }
    transaction.respond(responseTo(request, 200, "OK"));
    const key = request.body.length === 0 ? undefined : dtmfKeyOf(type, request.body.toString());
    if (key !== undefined) this.listener.digit?.(key);
  }

  /** A PRACK (RFC 3262): only a session that sent reliable provisional responses has one to match. */
  receivePrack(request: SipRequest, transaction: ServerTransaction): void {
    transaction.respond(responseTo(request, 481, "Call/Transaction Does Not Exist"));
  }

  /** Our offer went in a 2xx to a re-INVITE without one: its ACK brings the answer. */
  #offerInOk = false;

  /** The ACK for a 2xx we sent within this dialog: it stops the 2xx's retransmissions. */
  receiveAck(ack: SipRequest): void {
    if (this.ackArrived(ack)) this.acknowledged(ack);
  }

  /** The first ACK of our 2xx to a re-INVITE; after an offerless one it carries the answer. */
  protected acknowledged(ack: SipRequest): void {
    if (!this.#offerInOk) return;
    this.#offerInOk = false;
    this.listener.lateAnswer?.(ack.body.toString());
  }

  /** A 2xx the transaction layer could not match: the peer did not get our ACK (section 13.2.2.4). */
  receiveStray2xx(response: SipResponse): void {
    const ack = this.sentAcks.get(response.headers.cseq?.seq ?? -1);
    const destination = this.dialog?.destination;
    if (ack !== undefined && destination !== undefined) this.host.sendAck(ack, destination);
  }

  /** ACKs by the CSeq of the INVITE they acknowledge, for 2xx retransmissions. */
  private readonly sentAcks = new Map<number, SipRequest>();

  /** Section 13.2.2.4: the UAC core ACKs each 2xx itself, within the dialog, with the INVITE's CSeq. */
  protected acknowledge(invite: SipRequest): void {
    const dialog = this.dialog;
    const destination = dialog?.destination;
    const cseq = invite.headers.cseq?.seq;
    if (dialog === undefined || destination === undefined || cseq === undefined) return;
    let ack = this.sentAcks.get(cseq);
    if (ack === undefined) {
      ack = dialog.createRequest("ACK", {
        via: this.host.via(destination.transport),
        contact: this.host.contact(destination.transport, this.secure),
        cseq,
      });
      this.sentAcks.set(cseq, ack);
    }
    this.host.sendAck(ack, destination);
  }

  /** Section 14.2: answers a re-INVITE, with 491 when ours is in progress. */
  private receiveReinvite(request: SipRequest, transaction: InviteServerTransaction): void {
    if (this.reinviteInProgress) {
      transaction.respond(responseTo(request, 491, "Request Pending"));
      return;
    }
    // Section 14.2: a re-INVITE without an offer gets ours in the 2xx, answered in the ACK.
    const offer = request.body.length === 0 ? this.listener.offer?.() : undefined;
    const outcome =
      offer !== undefined
        ? { answer: offer }
        : (this.listener.reoffer?.(request.body.toString()) ?? { status: 488 });
    if ("status" in outcome) {
      transaction.respond(responseTo(request, outcome.status, "Not Acceptable Here"));
      return;
    }
    this.#offerInOk = offer !== undefined;
    const ok = this.okResponse(request, outcome.answer, this.#refreshedBy(request));
    transaction.respond(ok);
    this.retransmitUntilAcked(ok, transaction);
  }

  protected okResponse(request: SipRequest, sdp: string, extra: [string, string][] = []): SipResponse {
    const transport = transportOf(request);
    return responseTo(request, 200, "OK", {
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

  private pendingOk: { timer: TimerHandle | undefined; cseq: number } | undefined;

  /**
   * Section 13.3.1.4: the 2xx is retransmitted at T1, doubling up to T2, until the ACK arrives; without
   * an ACK after 64*T1 the session is confirmed and then ended with BYE. A transaction that ended
   * before that (the transport failed to send the 2xx, section 17.2.4) takes no more: the ACK will
   * never come, so the session ends as if it had timed out.
   */
  protected retransmitUntilAcked(ok: SipResponse, transaction: InviteServerTransaction): void {
    const cseq = ok.headers.cseq?.seq ?? 0;
    const reliable = transaction.reliable;
    let elapsed = 0;
    let interval = reliable ? TIMER_H : T1;
    const pending: { timer: TimerHandle | undefined; cseq: number } = { timer: undefined, cseq };
    const fire = () => {
      if (this.pendingOk !== pending) return;
      elapsed += interval;
      if (elapsed >= TIMER_H || transaction.state === TransactionState.Terminated) {
        this.pendingOk = undefined;
        this.ackTimedOut();
        return;
      }
      transaction.respond(ok);
      // Doubling up to T2, and never past 64*T1: the session ends when that has passed, not later.
      interval = Math.min(2 * interval, T2, TIMER_H - elapsed);
      pending.timer = this.host.clock.setTimeout(fire, interval);
    };
    pending.timer = this.host.clock.setTimeout(fire, interval);
    this.pendingOk = pending;
  }

  /** An ACK stops the 2xx retransmissions it acknowledges; true when it acknowledged one. */
  protected ackArrived(ack: SipRequest): boolean {
    const pending = this.pendingOk;
    const cseq = ack.headers.cseq?.seq;
    if (pending === undefined || cseq !== pending.cseq) return false;
    if (pending.timer !== undefined) this.host.clock.clearTimeout(pending.timer);
    this.pendingOk = undefined;
    return true;
  }

  protected ackTimedOut(): void {
    this.bye("no ACK");
  }

  protected end(by: SessionEndedBy, reason: string): void {
    if (this.endedAlready) return;
    this.endedAlready = true;
    this.#timer.stop();
    if (this.pendingOk?.timer !== undefined) this.host.clock.clearTimeout(this.pendingOk.timer);
    this.pendingOk = undefined;
    this.host.sessionEnded(this);
    this.listener.ended?.(by, reason);
  }
}

/**
 * Where an INVITE goes when its first server fails (RFC 3263 section 4.3): the next servers in order,
 * how long one may stay silent before the next is tried, and whom to tell of a server that failed.
 */
export interface Failover {
  readonly next: readonly Destination[];
  readonly targetTimeoutMs?: number;
  readonly onTargetFailed?: (target: Destination, reason: string) => void;
}

/** The UAC side of an INVITE: a call we place. */
export class OutgoingInviteSession extends InviteSession implements InviteResponseHandler {
  protected readonly role = "uac";
  #invite: SipRequest;
  #destination: Destination;
  readonly #next: Destination[];
  readonly #failover: Failover | undefined;
  #transaction: InviteClientTransaction | undefined;
  #targetTimer: TimerHandle | undefined;
  #responded = false;
  /**
   * RFC 3262 section 4: the early dialogs reliable provisional responses set up, by the To tag of the
   * UAS that sent them (a forking proxy's branches each send theirs), each with the last RSeq PRACKed.
   */
  readonly #early = new Map<string, { readonly dialog: Dialog; lastRSeq: number }>();
  #provisionalReceived = false;
  #final = false;
  #cancelRequested = false;
  #authenticated = false;

  constructor(
    host: SessionHost,
    invite: SipRequest,
    destination: Destination,
    private readonly credentials: Credentials | undefined,
    failover?: Failover,
  ) {
    super(host, invite);
    this.#invite = invite;
    this.#destination = destination;
    this.#next = [...(failover?.next ?? [])];
    this.#failover = failover;
  }

  /** The server the INVITE went to last. */
  get destination(): Destination {
    return this.#destination;
  }

  start(): void {
    this.#responded = false;
    this.#transaction = this.host.sendInvite(this.#invite, this.#destination, this);
    const timeout = this.#failover?.targetTimeoutMs;
    if (this.#next.length > 0 && timeout !== undefined) {
      const transaction = this.#transaction;
      this.#targetTimer = this.host.clock.setTimeout(() => {
        // A call being given up keeps its transaction: the CANCEL goes once a response comes.
        if (this.#responded || this.#transaction !== transaction || this.#cancelRequested) return;
        transaction.abandon();
        this.#failOver(`no response within ${timeout} ms`);
      }, timeout);
    }
  }

  /**
   * Section 4.3 of RFC 3263: the same request in a new transaction (a new branch) to the next server.
   * False when there is none, or the call is being given up.
   */
  #failOver(reason: string): boolean {
    if (this.#cancelRequested) return false;
    const next = this.#next.shift();
    if (next === undefined) return false;
    this.#failover?.onTargetFailed?.(this.#destination, reason);
    this.#destination = next;
    // A new server: the last one's credentials mean nothing to it.
    this.#authenticated = false;
    this.#sendAgain({ Authorization: null, "Proxy-Authorization": null }, false);
    return true;
  }

  /**
   * The INVITE again in a new transaction (a new branch, over the current server's transport; the
   * next CSeq unless it only goes to another server, RFC 3263 section 4.3): `changes` sets, or with
   * null drops, headers; the attempt starts afresh (no provisional response, no early dialog).
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
    this.#final = false;
    this.#provisionalReceived = false;
    this.#early.clear();
    this.start();
  }

  /** Section 9.1: CANCEL a call not yet answered, once a provisional response has arrived. */
  cancel(): void {
    if (this.#final || this.#cancelRequested) {
      if (this.dialog !== undefined) this.bye();
      return;
    }
    this.#cancelRequested = true;
    if (this.#provisionalReceived) this.#sendCancel();
  }

  receiveResponse(response: SipResponse): void {
    this.#responded = true;
    if (this.#targetTimer !== undefined) this.host.clock.clearTimeout(this.#targetTimer);
    this.#targetTimer = undefined;
    // RFC 3263 section 4.3: a server that answers 503 is failed over like one that does not answer.
    if (response.status === 503 && this.#failOver(`503 ${response.reason}`)) return;
    if (response.status < 200) {
      if (response.status > 100 && listsToken(response.headers.getAll("Require"), "100rel"))
        this.#prack(response);
      this.#provisionalReceived = true;
      if (this.#cancelRequested) this.#sendCancel();
      else if (response.status > 100) this.listener.progress?.(response);
      return;
    }
    this.#final = true;
    if (response.status < 300) {
      this.#confirm(response);
      return;
    }
    if ((response.status === 401 || response.status === 407) && this.#retryWithCredentials(response)) return;
    if (response.status === 422 && this.#retryWithLongerInterval(response)) return;
    this.listener.failed?.(response.status, response.reason);
    this.end("error", response.reason);
  }

  onTimeout(): void {
    if (this.#final || this.#failOver("no answer (Timer B)")) return;
    this.#final = true;
    this.listener.failed?.(408, "Request Timeout");
    this.end("error", "timeout");
  }

  onTransportError(error: Error): void {
    if (this.#final || this.#failOver(error.message)) return;
    this.#final = true;
    // The reason says what failed (a refused connection, a TLS certificate that did not verify).
    this.listener.failed?.(503, `Service Unavailable: ${error.message}`);
    this.end("error", error.message);
  }

  /**
   * RFC 3262 section 4: a reliable provisional response is acknowledged with PRACK in its own early
   * dialog (RAck: its RSeq, the INVITE's CSeq), each early dialog with its own RSeq space. The first
   * sets the dialog's sequence; a later one is PRACKed only when one higher (in order): a
   * retransmission of one already PRACKed is ignored (the PRACK's own transaction retransmits until
   * answered), and one out of order is not processed.
   */
  #prack(response: SipResponse): void {
    const rseq = Number(response.headers.get("RSeq"));
    const tag = response.headers.to?.tag;
    if (!Number.isInteger(rseq) || tag === undefined) return;
    let early = this.#early.get(tag);
    if (early !== undefined && rseq !== early.lastRSeq + 1) return;
    if (early === undefined) {
      const dialog = Dialog.forUac(this.#invite, response);
      if (dialog === undefined) return;
      early = { dialog, lastRSeq: rseq };
      this.#early.set(tag, early);
    }
    early.lastRSeq = rseq;
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

  #confirm(response: SipResponse): void {
    // The early dialog of the UAS that answered (the 2xx's To tag) becomes the dialog, its CSeq
    // count going on and its target refreshed by the 2xx; otherwise the 2xx makes one.
    const tag = response.headers.to?.tag;
    const early = tag === undefined ? undefined : this.#early.get(tag)?.dialog;
    early?.receiveTargetRefreshResponse(response);
    const dialog = early ?? Dialog.forUac(this.#invite, response);
    const destination = dialog?.destination;
    if (dialog === undefined || destination === undefined) {
      this.listener.failed?.(502, "Bad Gateway");
      this.end("error", "unusable 2xx");
      return;
    }
    this.dialog = dialog;
    this.acknowledge(this.#invite);
    this.host.dialogConfirmed(this);
    // RFC 4028 section 7.2: the 2xx says whether a timer runs and who refreshes.
    this.peerAllowsUpdate = listsToken(response.headers.getAll("Allow"), "UPDATE");
    const timer = parseSessionExpires(response.headers.get("Session-Expires"));
    if (timer !== undefined) this.startSessionTimer(timer.interval, timer.refresher ?? "uac");
    if (this.#cancelRequested) {
      // Section 9.1 / 15: the 2xx crossed our CANCEL; the call is ended with BYE.
      this.listener.failed?.(487, "Request Terminated");
      this.bye();
      return;
    }
    this.listener.confirmed?.(response.body.toString());
  }

  /** Section 22.2: one retry with credentials per challenge; a second challenge fails the call. */
  #retryWithCredentials(response: SipResponse): boolean {
    if (this.credentials === undefined || this.#authenticated || this.#cancelRequested) return false;
    const proxy = response.status === 407;
    const challenge = chooseChallenge(
      response.headers.getAll(proxy ? "Proxy-Authenticate" : "WWW-Authenticate"),
    );
    if (challenge === undefined) return false;
    this.#authenticated = true;
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
    const minimum = parseMinSe(response.headers.get("Min-SE"));
    const asked = parseSessionExpires(this.#invite.headers.get("Session-Expires"))?.interval ?? 0;
    if (minimum === undefined || minimum <= asked || this.#cancelRequested) return false;
    this.#sendAgain({ "Session-Expires": String(minimum), "Min-SE": String(minimum) }, true);
    return true;
  }

  /** Section 9.1: same Request-URI, Call-ID, From, To, CSeq number and the INVITE's top Via (so branch). */
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

/** Our re-INVITE within a confirmed dialog (section 14.1): ACKs its 2xx and reports the answer. */
class Reinvite implements InviteResponseHandler {
  #done = false;

  constructor(
    private readonly dialog: Dialog,
    private readonly acknowledge: () => void,
    private readonly finish: (answer: string | undefined) => void,
  ) {}

  receiveResponse(response: SipResponse): void {
    if (response.status < 200) return;
    if (response.status >= 300) {
      this.#complete(undefined);
      return;
    }
    this.dialog.receiveTargetRefreshResponse(response);
    this.acknowledge();
    this.#complete(response.body.toString());
  }

  onTimeout(): void {
    this.#complete(undefined);
  }

  onTransportError(): void {
    this.#complete(undefined);
  }

  #complete(answer: string | undefined): void {
    if (this.#done) return;
    this.#done = true;
    this.finish(answer);
  }
}

/** The UAS side of an INVITE: a call that reaches us. */
export class IncomingInviteSession extends InviteSession {
  protected readonly role = "uas";
  #final = false;
  readonly #localTag: string;
  /** The session timer our 2xx states, started when the ACK comes. */
  #agreedTimer: { interval: number; refresher: Refresher } | undefined;
  /** RFC 3262: the caller requires reliable provisional responses. */
  readonly #reliable: boolean;
  #rseq = randomInt(1, 2 ** 31);
  /** The reliable provisional response not yet PRACKed, retransmitted until it is. */
  #unacked: { rseq: number; timer: TimerHandle | undefined } | undefined;

  constructor(
    host: SessionHost,
    readonly invite: SipRequest,
    readonly transaction: InviteServerTransaction,
    localTag: string,
    /** Where the INVITE came from (a caller behind NAT is reached there). */
    readonly source?: MessageSource,
  ) {
    super(host, invite);
    this.#localTag = localTag;
    // RFC 3262 section 5 would put our offer in a reliable 180 to an offerless INVITE; ours goes in
    // the 2xx, so that 180 is sent unreliably.
    this.#reliable = listsToken(invite.headers.getAll("Require"), "100rel") && invite.body.length > 0;
  }

  get localTag(): string {
    return this.#localTag;
  }

  get answered(): boolean {
    return this.#final;
  }

  /**
   * 180 (Ringing) with our tag and Contact: an early dialog as far as the peer is concerned. When
   * the caller requires it, reliably (RFC 3262 section 3): with Require: 100rel and an RSeq, sent
   * again at T1, doubling, until its PRACK comes or 64*T1 have passed; one at a time.
   */
  ring(): void {
    if (this.#final || this.#unacked !== undefined) return;
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
    if (rseq === undefined) return;
    const unacked: { rseq: number; timer: TimerHandle | undefined } = { rseq, timer: undefined };
    let interval = T1;
    let elapsed = 0;
    const again = () => {
      elapsed += interval;
      if (this.#unacked !== unacked || this.#final || elapsed >= TIMER_H) {
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
    const [rseq, cseq, method] = (request.headers.get("RAck") ?? "").trim().split(/\s+/);
    const unacked = this.#unacked;
    const matches =
      unacked !== undefined &&
      Number(rseq) === unacked.rseq &&
      Number(cseq) === this.invite.headers.cseq?.seq &&
      method?.toUpperCase() === "INVITE";
    if (!matches) {
      transaction.respond(responseTo(request, 481, "Call/Transaction Does Not Exist"));
      return;
    }
    if (unacked.timer !== undefined) this.host.clock.clearTimeout(unacked.timer);
    this.#unacked = undefined;
    transaction.respond(responseTo(request, 200, "OK"));
  }

  /** 200 (OK) with the answer; the session is confirmed when the ACK arrives. */
  accept(answerSdp: string): boolean {
    if (this.#final) return false;
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
    this.#final = true;
    this.dialog = dialog;
    this.peerAllowsUpdate = listsToken(this.invite.headers.getAll("Allow"), "UPDATE");
    // RFC 4028 section 9 (a Session-Expires below our minimum was refused 422 on arrival).
    const timer = timerForInvite(this.invite, this.host.sessionTimer);
    this.#agreedTimer = timer !== undefined && "interval" in timer ? timer : undefined;
    const ok = responseTo(this.invite, 200, "OK", {
      toTag: this.#localTag,
      headers: [
        ["Contact", this.host.contact(this.transport, this.secure)],
        ["Allow", this.host.allow],
        ["Supported", "timer"],
        ...(this.#agreedTimer === undefined
          ? []
          : timerHeaders(this.#agreedTimer.interval, this.#agreedTimer.refresher)),
        ["Content-Type", "application/sdp"],
        ["User-Agent", this.host.userAgent],
      ],
      body: Buffer.from(answerSdp),
    });
    this.transaction.respond(ok);
    this.host.dialogConfirmed(this);
    this.retransmitUntilAcked(ok, this.transaction);
    return true;
  }

  reject(status: number, reason: string, headers: Iterable<readonly [string, string]> = []): void {
    if (this.#final) return;
    this.#final = true;
    this.transaction.respond(responseTo(this.invite, status, reason, { toTag: this.#localTag, headers }));
    this.end("local", reason);
  }

  /** Section 9.2: a CANCEL before our final response ends the call with 487. */
  cancelled(): void {
    if (this.#final) return;
    this.#final = true;
    this.transaction.respond(responseTo(this.invite, 487, "Request Terminated", { toTag: this.#localTag }));
    this.listener.failed?.(487, "Request Terminated");
    this.end("remote", "cancelled");
  }

  protected override acknowledged(ack: SipRequest): void {
    const cseq = ack.headers.cseq?.seq;
    if (cseq !== this.invite.headers.cseq?.seq) {
      super.acknowledged(ack);
      return;
    }
    const timer = this.#agreedTimer;
    if (timer !== undefined) this.startSessionTimer(timer.interval, timer.refresher);
    this.listener.confirmed?.(ack.body.toString());
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

/** The transport a request came over, from its top Via. */
function transportOf(request: SipRequest): Destination["transport"] {
  const transport = request.headers.via?.transport;
  return transport === "TCP" || transport === "TLS" ? transport : "UDP";
}

/** The event codes of RFC 4733 section 3.2 that are keys: 0-9, *, #, A-D (10 is *, 11 is #). */
const DTMF_KEYS = "0123456789*#ABCD";

/**
 * The key an INFO body names: `Signal=5` (application/dtmf-relay, one `Name=value` per line) or the key
 * itself (application/dtmf); an event code 0-15 counts as its key. Undefined for anything else.
 */
export function dtmfKeyOf(type: string, body: string): string | undefined {
  const value =
    type === "application/dtmf-relay" ? /^\s*signal\s*=\s*(\S+)\s*$/im.exec(body)?.[1] : body.trim();
  if (value === undefined) return undefined;
  const key = /^\d+$/.test(value) && Number(value) <= 15 ? DTMF_KEYS[Number(value)] : value.toUpperCase();
  return key !== undefined && key.length === 1 && DTMF_KEYS.includes(key) ? key : undefined;
}
