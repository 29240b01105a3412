/**
 * The E-model (ITU-T G.107) as VoIP monitors simplify it: a call's transmission rating R from its
 * codec, packet loss and one-way delay, and the MOS that R stands for. Everything else G.107 rates
 * (room noise, sidetone, echo, loudness) takes its default value, which together with the basic
 * signal-to-noise ratio makes R0 - Is = 93.2, the rating of a default connection with no delay.
 *
 *   R = R0 - Is - Id - Ie,eff + A
 *   Id = 0.024 d + 0.11 (d - 177.3) H(d - 177.3)       (Cole and Rosenbluth's fit of G.107's Id)
 *   Ie,eff = Ie + (95 - Ie) Ppl / (Ppl / BurstR + Bpl)   (G.107 §7.5, Ppl in %)
 *   MOS = 1 + 0.035 R + R (R - 60) (100 - R) 7e-6        (G.107 Annex B, for 0 < R < 100)
 *
 * d is the one-way mouth-to-ear delay in ms; H the step function. Loss is taken as random (BurstR 1)
 * and A as 0 (a wired caller expects a wired call).
 */

/** R0 - Is with G.107's default values (§7.7). */
export const DEFAULT_RATING = 93.2;

/** The delay past which G.107's Id rises steeply (Cole and Rosenbluth's knee). */
export const DELAY_KNEE_MS = 177.3;

/** A codec's equipment impairment: Ie without loss, and Bpl, its robustness against loss. */
export interface CodecImpairment {
  readonly ie: number;
  readonly bpl: number;
}

/**
 * Per codec, on G.107's narrowband scale (R up to 93.2). G.711 with packet loss concealment is G.113
 * Appendix I's: Ie 0, Bpl 25.1. G.722 and Opus have no narrowband values there; they are rated as
 * G.711 with concealment, their narrowband equivalent: no impairment of their own (both are at least
 * as clear as G.711 in a narrow band, and this scale has no room above it for wideband), and the
 * same robustness against loss, since the jitter buffer conceals a lost G.722 frame exactly as a lost
 * G.711 one (G.711 Appendix I's repetition and fade, jitter-buffer.ts) and Opus's own concealment
 * (and FEC, when the far end sends it) does no worse. A lower Bpl would rate their loss more harshly
 * than G.711's for no measured reason.
 */
export const CODEC_IMPAIRMENTS: Readonly<Record<"PCMU" | "PCMA" | "G722" | "opus", CodecImpairment>> = {
  PCMU: { ie: 0, bpl: 25.1 },
  PCMA: { ie: 0, bpl: 25.1 },
  G722: { ie: 0, bpl: 25.1 },
  opus: { ie: 0, bpl: 25.1 },
};

/** Id: the impairment of a one-way delay of `delayMs`. */
export function delayImpairment(delayMs: number): number {
  const d = Math.max(0, delayMs);
  return 0.024 * d + (d > DELAY_KNEE_MS ? 0.11 * (d - DELAY_KNEE_MS) : 0);
}

/** Ie,eff: the codec's impairment under random loss of `lossShare` (0-1) of its packets. */
export function effectiveEquipmentImpairment(codec: CodecImpairment, lossShare: number): number {
  const ppl = 100 * Math.min(1, Math.max(0, lossShare));
  const burstRatio = 1;
  return codec.ie + ((95 - codec.ie) * ppl) / (ppl / burstRatio + codec.bpl);
}

/** R for a codec, a share of packets lost, and a one-way delay. */
export function rating(codec: CodecImpairment, lossShare: number, oneWayDelayMs: number): number {
  return DEFAULT_RATING - delayImpairment(oneWayDelayMs) - effectiveEquipmentImpairment(codec, lossShare);
}

/** G.107 Annex B: the MOS (1-4.5) a rating R stands for. */
export function mosOfRating(r: number): number {
  if (r <= 0) return 1;
  if (r >= 100) return 4.5;
  return 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6;
}

/** The MOS of a call: `rating`'s R, as a MOS. */
export function meanOpinionScore(codec: CodecImpairment, lossShare: number, oneWayDelayMs: number): number {
  return mosOfRating(rating(codec, lossShare, oneWayDelayMs));
}
