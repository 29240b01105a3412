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

/**
 * What STIR/SHAKEN verification (RFC 8224, RFC 8588) said of a caller's number, as a terminating
 * verifier's "verstat" does (ATIS-1000074): `passed` (TN-Validation-Passed) with the originating
 * carrier's attestation, `failed` (TN-Validation-Failed) with why, `none` (No-TN-Validation): no
 * Identity header, or verification not configured (`reason` says which).
 */
export interface CallerVerification {
  readonly status: "passed" | "failed" | "none";
  /** The PASSporT's `attest` (A full, B partial, C gateway) once it verified; null otherwise. */
  readonly attestation: "A" | "B" | "C" | null;
  /** Why it failed or was not done, in words; null when it passed. */
  readonly reason: string | null;
}

/** How a call came: placed by the service, dialled in by PIN, or joined from a browser. */
export type CallDirection = "outbound" | "inbound" | "browser";

/** Who ended an answered call: the attendee's side (their BYE) or the service (ours, for a reason). */
export type HungUpBy = "attendee" | "service";

/** A call's record as the room makes it, once the call is over. */
export interface NewCallRecord {
  readonly attendeeId: number;
  readonly direction: CallDirection;
  /** The number called (outbound) or the caller's (inbound), as signalled; null from a browser. */
  readonly number: string | null;
  /** Outbound: the trunk's SIP URI; inbound: the access number dialled; null from a browser. */
  readonly route: string | null;
  /** The instance that ran the call (BRIDGELINE_INSTANCE_ID). */
  readonly instance: string;
  /** ISO 8601 UTC: the INVITE sent or received, the answer, the end (the failure, for a call never answered). */
  readonly invitedAt: string;
  readonly answeredAt: string | null;
  readonly endedAt: string;
  /** The final SIP status: 200 for an answered call, else the failure's (408 no answer, 487 cancelled...). */
  readonly sipStatus: number;
  readonly sipReason: string;
  /** The `Reason` the far end gave (its BYE, CANCEL or final response), else the one we sent; null when none. */
  readonly cause: CallCause | null;
  /** Null for a call never answered. */
  readonly hungUpBy: HungUpBy | null;
  /** Why it ended, in words ("conference ended", "no media", "486 Busy Here"). */
  readonly endReason: string;
  readonly codec: string | null;
  readonly srtp: boolean;
  readonly tls: boolean;
  readonly quality: CallQuality | null;
  /** A caller's STIR/SHAKEN verification (RFC 8224, 8588); null for calls the service placed and browsers. */
  readonly callerVerification: CallerVerification | null;
}

export interface CallRecord extends NewCallRecord {
  readonly id: number;
  readonly conferenceId: number;
  /** Answered to ended, whole seconds; 0 for a call never answered. */
  readonly durationSeconds: number;
}

/** Whole seconds from answer to end; 0 for a call never answered. */
export function callDurationSeconds(record: NewCallRecord): number {
  if (record.answeredAt === null) return 0;
  return Math.max(0, Math.floor((Date.parse(record.endedAt) - Date.parse(record.answeredAt)) / 1000));
}

/** The columns of a call record's CSV export, in order, each with how it is written. */
export const CALL_RECORD_COLUMNS: readonly (readonly [
  string,
  (record: CallRecord) => string | number | null,
])[] = [
  ["id", (r) => r.id],
  ["conference_id", (r) => r.conferenceId],
  ["attendee_id", (r) => r.attendeeId],
  ["direction", (r) => r.direction],
  ["number", (r) => r.number],
  ["route", (r) => r.route],
  ["instance", (r) => r.instance],
  ["invited_at", (r) => r.invitedAt],
  ["answered_at", (r) => r.answeredAt],
  ["ended_at", (r) => r.endedAt],
  ["duration_seconds", (r) => r.durationSeconds],
  ["sip_status", (r) => r.sipStatus],
  ["sip_reason", (r) => r.sipReason],
  ["cause_protocol", (r) => r.cause?.protocol ?? null],
  ["cause", (r) => r.cause?.cause ?? null],
  ["cause_text", (r) => r.cause?.text ?? null],
  ["hung_up_by", (r) => r.hungUpBy],
  ["end_reason", (r) => r.endReason],
  ["codec", (r) => r.codec],
  ["srtp", (r) => String(r.srtp)],
  ["tls", (r) => String(r.tls)],
  ["packets_sent", (r) => r.quality?.packetsSent ?? null],
  ["packets_received", (r) => r.quality?.packetsReceived ?? null],
  ["loss_share", (r) => r.quality?.lossShare ?? null],
  ["remote_loss_share", (r) => r.quality?.remoteLossShare ?? null],
  ["jitter_ms", (r) => r.quality?.jitterMs ?? null],
  ["remote_jitter_ms", (r) => r.quality?.remoteJitterMs ?? null],
  ["round_trip_ms", (r) => r.quality?.roundTripMs ?? null],
  ["concealment_share", (r) => r.quality?.concealmentShare ?? null],
  ["mos", (r) => r.quality?.mos ?? null],
  ["verification_status", (r) => r.callerVerification?.status ?? null],
  ["attestation", (r) => r.callerVerification?.attestation ?? null],
  ["verification_reason", (r) => r.callerVerification?.reason ?? null],
];
