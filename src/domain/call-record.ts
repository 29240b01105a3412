/**
 * A call record: one call placed to or taken from an attendee, kept after the conference for the
 * operator (why it failed, who hung up, how it sounded), as Asterisk's CDR or Twilio's call resource.
 */

/**
 * A cause as a `Reason` header carries it (RFC 3326): `Q.850` with an ISDN cause (16 normal
 * clearing, 17 user busy, 34 no circuit...), or `SIP` with a status code.
 */
export interface CallCause {
  readonly protocol: "Q.850" | "SIP";
  readonly cause: number;
  readonly text: string | null;
}

/**
 * How a call sounded, both ways, from its media's final counts: ours of what we received, and the
 * far end's RTCP receiver reports of what we sent (RFC 3550 section 6.4). Shares are 0-1.
 */
export interface CallQuality {
  readonly packetsSent: number;
  readonly packetsReceived: number;
  /** Of the far end's packets, the share we never received; null when none were expected. */
  readonly lossShare: number | null;
  /**
   * Of our packets, the share the far end said it lost (cumulative, its last report): of those it
   * expected by that report, so packets sent after it do not dilute it. Null without a report.
   */
  readonly remoteLossShare: number | null;
  /**
   * Our interarrival jitter estimate of the far end's stream (RFC 3550 A.8), its mean over the call
   * (sampled at each of our RTCP reports and at the end); null when nothing was received.
   */
  readonly jitterMs: number | null;
  /** The far end's jitter of our stream, from its last report; null without one. */
  readonly remoteJitterMs: number | null;
  /** The round trip from LSR and DLSR (RFC 3550 section 6.4.1), the last measured; null without one. */
  readonly roundTripMs: number | null;
  /**
   * Of the 20 ms frames played out from the far end, the share filled by concealment (the jitter
   * buffer's and the Opus decoder's); null when none were played out here (a call relayed elsewhere).
   */
  readonly concealmentShare: number | null;
  /**
   * The E-model's estimate (ITU-T G.107, simplified: domain/e-model.ts), 1-4.5, of what we heard: the
   * codec, lossShare, and half the round trip plus our packet and playout delay (a small round trip
   * assumed when none was measured). Null when there was too little to judge (nothing expected).
   */
  readonly mos: number | null;
}
