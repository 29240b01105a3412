/**
 * A call's quality (domain/call-record.ts) from its media stream's final counts: what we received,
 * what the far end's RTCP reports said of what we sent, and the E-model's MOS of it.
 */
import type { CallQuality } from "../domain/call-record.js";
import { CODEC_IMPAIRMENTS, meanOpinionScore } from "../domain/e-model.js";
import { DEFAULT_DELAY_FRAMES } from "./media/jitter-buffer.js";
import type { StreamStats } from "./media/plane/protocol.js";
import { FRAME_MS } from "./media/rtp/rtp-stream.js";

/**
 * The round trip taken when no RTCP report measured one (a far end that sends no reports, or a call
 * shorter than a report interval): 20 ms, a trunk in the same region. An unknown delay is rated as a
 * small one rather than not at all, so the MOS then reflects loss alone.
 */
export const ASSUMED_ROUND_TRIP_MS = 20;

/** Our own part of the mouth-to-ear delay: a packet's worth of audio and the jitter buffer's playout delay. */
const LOCAL_DELAY_MS = FRAME_MS + DEFAULT_DELAY_FRAMES * FRAME_MS;

const share = (part: number, whole: number): number | null =>
  whole > 0 ? Math.min(1, Math.max(0, part / whole)) : null;

/** The quality of a call whose media's final counts are `stats`; null when it carried no media. */
export function callQuality(stats: StreamStats): CallQuality | null {
  if (stats.packetsSent === 0 && stats.packetsReceived === 0) return null;
  const lossShare = share(stats.packetsLost, stats.packetsReceived + stats.packetsLost);
  const roundTrip = stats.roundTripMs ?? ASSUMED_ROUND_TRIP_MS;
  // The E-model's Ppl is what the listener did not hear: packets lost on the way and those that came
  // too late for their turn and were thrown away (G.1020 section 6.1), as VoIP monitors count it.
  const unheard = share(stats.packetsLost + stats.packetsLate, stats.packetsReceived + stats.packetsLost);
  const mos =
    unheard === null || stats.codec === null
      ? null
      : meanOpinionScore(CODEC_IMPAIRMENTS[stats.codec], unheard, roundTrip / 2 + LOCAL_DELAY_MS);
  return {
    packetsSent: stats.packetsSent,
    packetsReceived: stats.packetsReceived,
    lossShare,
    remoteLossShare: stats.remoteLossShare,
    jitterMs: stats.meanJitterMs,
    remoteJitterMs: stats.remoteJitterMs,
    roundTripMs: stats.roundTripMs,
    concealmentShare: share(stats.framesConcealed, stats.framesPlayed),
    mos,
  };
}
