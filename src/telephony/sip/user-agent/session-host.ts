/** What an INVITE session needs of the user agent core that owns it, and what it tells the layer above. */

import type { CallCause } from "../../../domain/call-record.js";
import type { Clock } from "../../../domain/clock.js";
import type { SipRequest, SipResponse } from "../message/sip-message.js";
import type { InviteClientTransaction } from "../transaction/invite-client-transaction.js";
import type { Destination } from "../transport/sip-transport.js";
import type { InviteSession } from "./invite-session.js";
import type { Negotiated } from "./offer-answer.js";
import type { SessionTimerSettings } from "./session-timer.js";

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
  /**
   * UAC: the 2xx, already ACKed. UAS: the ACK for our 2xx arrived. `answer`: the answer to our offer
   * that came with it (the 2xx's to the INVITE's offer, or the ACK's to the offer in our 2xx), with
   * that offer; undefined when the offer/answer exchange was done before (we answered the INVITE).
   */
  confirmed?(answer: Negotiated | undefined): void;
  /**
   * UAC: a final non-2xx (or 408 on timeout, 503 on transport error). UAS: CANCELled before answer.
   * `cause`: what the response's or CANCEL's Reason said (RFC 3326), null without one; `response`,
   * the UAC's final response when one came (a 3xx's Contact), undefined for a failure of our own.
   */
  failed?(status: number, reason: string, cause: CallCause | null, response?: SipResponse): void;
  /**
   * The session ended: a confirmed one, or one that never was (after `failed`, which comes first; or
   * alone, as a UAS whose 2xx was never ACKed). `cause`: the Reason of the BYE, the peer's or ours
   * (RFC 3326); null without one.
   */
  ended?(by: SessionEndedBy, reason: string, cause: CallCause | null): void;
  /** A re-INVITE (or UPDATE) offer from the peer: the answer SDP, or a status to refuse it with (488). */
  reoffer?(remoteSdp: string): { answer: string } | { status: number };
  /** A re-INVITE without an offer: ours, for the 2xx (RFC 3261 section 14.2, RFC 3264). */
  offer?(): string;
  /**
   * A session refresh is due and the peer does not allow UPDATE: the listener re-INVITEs with its
   * current description (through `reinvite`).
   */
  refresh?(): void;
  /** The answer to the offer in our 2xx to an offerless re-INVITE, from the peer's ACK, with that offer. */
  lateAnswer?(negotiated: Negotiated): void;
  /** A key the peer sent by SIP INFO (application/dtmf-relay or application/dtmf). */
  digit?(key: string): void;
}

export interface Credentials {
  readonly username: string;
  readonly password: string;
}
