/** What the join page's routes need of the conferences: joining by PIN from a browser. */
export interface BrowserJoinRequest {
  readonly pin: string;
  /** The page's SDP offer, its ICE candidates gathered (no trickle). */
  readonly offer: string;
  /** The client's address as limits count it (request.ip). */
  readonly source: string;
}
export type BrowserJoinRefusal =
  | { readonly refused: "wrong-pin" } // 403
  | { readonly refused: "too-many-wrong-pins"; readonly retryAfterSeconds: number } // 429 + Retry-After (this source's wrong PINs: same limit/window as dial-in's caller)
  | { readonly refused: "service-wrong-pins"; readonly retryAfterSeconds: number } // 503 + Retry-After
  | { readonly refused: "not-started" } // 409
  | { readonly refused: "locked" } // 409
  | { readonly refused: "full" } // 409
  | { readonly refused: "bad-offer"; readonly reason: string } // 400
  | { readonly refused: "unavailable"; readonly retryAfterSeconds: number }; // 503
export interface BrowserJoined {
  readonly answer: string;
  /** The page's secret for its own participant: its event stream and leaving. */
  readonly token: string;
  readonly userId: number;
  readonly conferenceId: number;
  readonly attendeeId: number;
  readonly moderator: boolean;
}
export interface BrowserParticipant {
  readonly userId: number;
  readonly conferenceId: number;
  readonly attendeeId: number;
  readonly moderator: boolean;
}
export interface BrowserJoins {
  join(request: BrowserJoinRequest): Promise<BrowserJoined | BrowserJoinRefusal>;
  /** The participant a page's token names while its call lasts; undefined when unknown or over. */
  participant(token: string): BrowserParticipant | undefined;
  /** Hangs up the participant's call; false when unknown or already over. */
  leave(token: string): boolean;
}
