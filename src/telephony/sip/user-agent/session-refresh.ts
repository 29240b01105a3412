/**
 * Session refresh (RFC 4028) within one confirmed dialog: the interval in force and who refreshes,
 * the refresh we send at half the interval (UPDATE when the peer allows it, RFC 3311, else a re-INVITE
 * the layer above makes), the refreshes the peer sends us, and BYE when an expected one never comes.
 */

import type { CallCause } from "../../../domain/call-record.js";
import type { Clock } from "../../../domain/clock.js";
import type { Refresher } from "../message/header-values.js";
import type { SipRequest, SipResponse } from "../message/sip-message.js";
import { SessionTimer, timerHeaders } from "./session-timer.js";

/** What a refresh needs of its session. */
export interface RefreshedSession {
  hasEnded(): boolean;
  /** Sends an UPDATE with these headers within the dialog; false when there is no dialog to send it in. */
  sendUpdate(
    headers: readonly [string, string][],
    onFinal: (response: SipResponse | undefined) => void,
  ): boolean;
  /** The peer does not allow UPDATE: the layer above re-INVITEs with its current description. */
  refreshByReinvite(): void;
  /** Ends the session with a BYE whose Reason says `cause`. */
  bye(reason: string, cause: CallCause): void;
}

/**
 * The cause of our BYE when the session expired without a refresh (section 10). RFC 4028 names none;
 * this is what the stacks that write one send (Sofia-SIP, FreeSWITCH's): the refresh timed out.
 */
const SESSION_EXPIRED: CallCause = { protocol: "SIP", cause: 408, text: "Session timeout" };

export class SessionRefresh {
  /** The session interval in force, in seconds; undefined without a timer. */
  #interval: number | undefined;
  #weRefresh = false;
  /** The peer's Allow (from its INVITE or 2xx): whether refreshes may use UPDATE. */
  peerAllowsUpdate = false;
  readonly #timer: SessionTimer;

  constructor(
    clock: Clock,
    private readonly session: RefreshedSession,
    /** Which side of the dialog-creating INVITE we are. */
    private readonly role: Refresher,
    /** The smallest interval we accept (our Min-SE). */
    private readonly minimum: number,
  ) {
    this.#timer = new SessionTimer(clock, {
      refresh: () => this.#refresh(),
      expire: () => this.session.bye("session expired: no refresh came", SESSION_EXPIRED),
    });
  }

  /**
   * Starts the timer the dialog-creating exchange agreed on (sections 7 and 9). `refresher` names the
   * UAC or UAS of that INVITE, which is `role` for us.
   */
  start(interval: number, refresher: Refresher): void {
    this.#interval = interval;
    this.#weRefresh = refresher === this.role;
    this.restart();
  }

  restart(): void {
    if (this.#interval !== undefined && !this.session.hasEnded())
      this.#timer.start(this.#interval, this.#weRefresh);
  }

  stop(): void {
    this.#timer.stop();
  }

  /**
   * Our re-INVITE completed: one that succeeded refreshes the session (section 10); after one that
   * failed (a glare, a refusal) our refresh timer runs again, so that the next one is tried.
   */
  reinviteCompleted(succeeded: boolean): void {
    if (succeeded || this.#weRefresh) this.restart();
  }

  /**
   * The Session-Expires and Supported a refresh we send carries, when a timer runs. In a refresh,
   * uac and uas name the sides of that transaction (section 4): we are its UAC.
   */
  requestHeaders(): [string, string][] {
    if (this.#interval === undefined) return [];
    return [
      ["Session-Expires", `${this.#interval};refresher=${this.#weRefresh ? "uac" : "uas"}`],
      ["Supported", "timer"],
    ];
  }

  /**
   * A refresh from the peer (a re-INVITE or UPDATE), of which we are the UAS: its Session-Expires,
   * if any, sets the interval and who refreshes (uac: the peer; uas, or none named: we keep who did);
   * the timer restarts; returns what our 2xx states of the timer (section 9).
   */
  receivedRefresh(request: SipRequest): [string, string][] {
    const asked = request.headers.sessionExpires;
    if (asked !== undefined && asked.interval >= this.minimum) {
      this.#interval = asked.interval;
      if (asked.refresher !== undefined) this.#weRefresh = asked.refresher === "uas";
    }
    this.restart();
    return this.#interval === undefined ? [] : timerHeaders(this.#interval, this.#weRefresh ? "uas" : "uac");
  }

  /** Half the interval has passed and we refresh: by UPDATE without a body when allowed, else re-INVITE. */
  #refresh(): void {
    if (this.session.hasEnded()) return;
    if (!this.peerAllowsUpdate) {
      this.session.refreshByReinvite();
      return;
    }
    this.session.sendUpdate(this.requestHeaders(), (response) => this.#updateAnswered(response));
  }

  #updateAnswered(response: SipResponse | undefined): void {
    if (this.session.hasEnded()) return;
    if (response !== undefined && response.status < 300) {
      // The 2xx to our refresh: uac is us, its sender's word on who refreshes next.
      const stated = response.headers.sessionExpires;
      if (stated !== undefined) {
        this.#interval = stated.interval;
        if (stated.refresher !== undefined) this.#weRefresh = stated.refresher === "uac";
      }
      this.restart();
      return;
    }
    // Section 10: a refresh that fails for good (481, 408, no answer) ends the session; the BYE
    // says how it failed (408 for no answer).
    if (response === undefined || response.status === 408 || response.status === 481)
      this.session.bye("session refresh failed", {
        protocol: "SIP",
        cause: response?.status ?? 408,
        text: "Session refresh failed",
      });
    else this.restart();
  }
}
