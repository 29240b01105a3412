/**
 * Joining a conference from a browser (the join page): what the page asks, what it is refused and
 * why, what it gets. The API answers each refusal with its status; the conferences decide them.
 */

export interface BrowserJoinRequest {
  readonly pin: string;
  /** The page's SDP offer, its ICE candidates gathered (no trickle). */
  readonly offer: string;
  /** The client's address as limits count it (request.ip). */
  readonly source: string;
  /** Whether the offer came over HTTPS: with DTLS-SRTP media, the call counts as TLS and SRTP. */
  readonly signallingTls: boolean;
}

export type BrowserJoinRefusal =
  | { readonly refused: "wrong-pin" }
  /** This source's wrong PINs: the same limit and window as a dial-in caller's. */
  | { readonly refused: "too-many-wrong-pins"; readonly retryAfterSeconds: number }
  /** Every caller's wrong PINs together, dial-in's and browsers'. */
  | { readonly refused: "service-wrong-pins"; readonly retryAfterSeconds: number }
  | { readonly refused: "not-started" }
  | { readonly refused: "locked" }
  | { readonly refused: "full" }
  /** The conference takes calls over TLS with SRTP only: a page on plain HTTP is not one. */
  | { readonly refused: "encrypted-only" }
  | { readonly refused: "bad-offer"; readonly reason: string }
  | { readonly refused: "unavailable"; readonly retryAfterSeconds: number };

export interface BrowserParticipant {
  readonly userId: number;
  readonly conferenceId: number;
  readonly attendeeId: number;
  readonly moderator: boolean;
}

export interface BrowserJoined extends BrowserParticipant {
  readonly answer: string;
  /** The page's secret for its own participant: its event stream and leaving. */
  readonly token: string;
}
