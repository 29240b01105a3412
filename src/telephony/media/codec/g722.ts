/**
 * ITU-T G.722 7 kHz audio coding within 64 kbit/s: sub-band ADPCM, mode 1 (64 kbit/s), the mode SIP
 * and RTP use (static payload type 9, RFC 3551 §4.5.2; the RTP clock runs at 8,000 Hz although the
 * codec samples at 16,000 Hz, so a 20 ms packet of 320 samples advances the timestamp by 160).
 *
 * The transmit quadrature mirror filter (QMF) splits each pair of 16 kHz samples into a lower and a
 * higher sub-band sample at 8 kHz; the lower band is coded with 6 bits, the higher with 2, and each
 * pair becomes one octet (IH in bits 7-6, IL in bits 5-0). The decoder reverses both and recombines
 * the bands with the receive QMF. The blocks named in the comments (SUBTRA, QUANTL, INVQAL, LOGSCL,
 * SCALEL, block 4's RECONS … PREDIC and their higher-band twins) are the Recommendation's fixed-point
 * arithmetic, with the saturation and truncation of the ITU-T reference implementation (G.191's
 * funcg722.c).
 *
 * The tests hold it to Appendix II's digital test sequence T1C2 (QMFs by-passed, as the appendix
 * has it) and to fixtures made with spandsp's sub-band coders (the G.722 of baresip and Asterisk),
 * which are checked against spandsp's whole codec (scripts/g722-reference.py). spandsp departs from
 * the reference in two places, where this code follows the reference: its transmit QMF leaves out
 * the 15-bit limit on XL and XH (as ffmpeg's does), which changes the octets once input near full
 * scale drives a sub-band past 15 bits, and the receive QMF of the spandsp Debian ships (2011)
 * wraps an output past 16 bits around where the reference saturates it (later spandsp saturates).
 *
 * Like the Recommendation, the sub-band coders work on 15-bit signals: the QMFs take 16-bit linear
 * PCM in and give it back at the same scale, halving on the way in and doubling on the way out. State
 * lives in the G722Encoder and G722Decoder objects, frames are written into caller-provided buffers,
 * and nothing is allocated per frame.
 */

/** 20 ms at 16 kHz: the samples of one RTP packet at the usual packet time. */
export const G722_FRAME_SAMPLES = 320;
/** One octet per pair of samples at 64 kbit/s. */
export const G722_FRAME_BYTES = G722_FRAME_SAMPLES / 2;

/**
 * The QMF coefficients h(0) … h(23), scaled by 2^13, split by the parity of their index. The filter is
 * symmetric (h(i) = h(23 − i)), so the even ones, h(0), h(2) … h(22), equal the odd ones read backwards.
 */
const QMF_EVEN = Int32Array.of(3, -11, 12, 32, -210, 951, 3876, -805, 362, -156, 53, -11);
const QMF_ODD = Int32Array.of(-11, 53, -156, 362, -805, 3876, 951, -210, 32, 12, -11, 3);
const QMF_TAPS = 12;

/** QUANTL's decision levels Q6(mil), mil = 1 … 29: |eL| is compared with Q6(mil)·detL·2^-12. */
// biome-ignore format: the Recommendation's table, 10 to a row
const Q6 = Int32Array.of(
  0, 35, 72, 110, 150, 190, 233, 276, 323, 370,
  422, 473, 530, 587, 650, 714, 786, 858, 940, 1023,
  1121, 1219, 1339, 1458, 1612, 1765, 1980, 2195, 2557, 2919,
);
/** QUANTL's output code IL for the interval mil, for a negative and for a positive eL. */
// biome-ignore format: the Recommendation's table, 16 to a row
const ILN = Int32Array.of(
  0, 63, 62, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19,
  18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
);
// biome-ignore format: the Recommendation's table, 16 to a row
const ILP = Int32Array.of(
  0, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47,
  46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32,
);
/** INVQAL: the output level QQ4 of the code truncated to 4 bits. */
// biome-ignore format: the Recommendation's table, 8 to a row
const QM4 = Int32Array.of(
  0, -20456, -12896, -8968, -6288, -4240, -2584, -1200,
  20456, 12896, 8968, 6288, 4240, 2584, 1200, 0,
);
/** INVQBL in mode 1: the output level QQ6 of the whole 6-bit code. */
// biome-ignore format: the Recommendation's table, 8 to a row
const QM6 = Int32Array.of(
  -136, -136, -136, -136, -24808, -21904, -19008, -16704,
  -14984, -13512, -12280, -11192, -10232, -9360, -8576, -7856,
  -7192, -6576, -6000, -5456, -4944, -4464, -4008, -3576,
  -3168, -2776, -2400, -2032, -1688, -1360, -1040, -728,
  24808, 21904, 19008, 16704, 14984, 13512, 12280, 11192,
  10232, 9360, 8576, 7856, 7192, 6576, 6000, 5456,
  4944, 4464, 4008, 3576, 3168, 2776, 2400, 2032,
  1688, 1360, 1040, 728, 432, 136, -432, -136,
);
/** LOGSCL: the magnitude of the 4-bit code, and the log scale factor multiplier WL for it. */
const RIL4 = Int32Array.of(0, 7, 6, 5, 4, 3, 2, 1, 7, 6, 5, 4, 3, 2, 1, 0);
const WL = Int32Array.of(-60, -30, 58, 172, 334, 538, 1198, 3042);
/** SCALEL and SCALEH: the antilog table ILB. */
// biome-ignore format: the Recommendation's table, 8 to a row
const ILB = Int32Array.of(
  2048, 2093, 2139, 2186, 2233, 2282, 2332, 2383,
  2435, 2489, 2543, 2599, 2656, 2714, 2774, 2834,
  2896, 2960, 3025, 3091, 3158, 3228, 3298, 3371,
  3444, 3520, 3597, 3676, 3756, 3838, 3922, 4008,
);
/** QUANTH's output code IH for the interval mih = 1 or 2, for a negative and for a positive eH. */
const IHN = Int32Array.of(0, 1, 0);
const IHP = Int32Array.of(0, 3, 2);
/** INVQAH: IH's output level QQ2; LOGSCH: its magnitude and the multiplier WH for it. */
const QM2 = Int32Array.of(-7408, -1616, 7408, 1616);
const RIH2 = Int32Array.of(2, 1, 2, 1);
const WH = Int32Array.of(0, -214, 798);

/** Upper bounds of the log scale factors nbL and nbH. */
const NB_LOW_MAX = 18432;
const NB_HIGH_MAX = 22528;
/** QUANTH's single decision level, ×2^-12 against detH. */
const Q2 = 564;

// Ternaries rather than Math.min and Math.max: measured faster here (bench/media/codecs.ts), where
// block 4 and its callers are inlined into the frame loops.
function saturate16(value: number): number {
  // biome-ignore lint/complexity/useMathMinMax: faster in the frame loops, see above.
  return value > 32767 ? 32767 : value < -32768 ? -32768 : value;
}

/** 15-bit limit: LIMIT (blocks 6L, 6H) on the reconstructed signals, LOWT and HIGHT on the QMF's. */
function saturate15(value: number): number {
  // biome-ignore lint/complexity/useMathMinMax: faster in the frame loops, see saturate16.
  return value > 16383 ? 16383 : value < -16384 ? -16384 : value;
}

/** True when two 16-bit values differ in sign (zero counts as positive, as in the Recommendation). */
function signsDiffer(a: number, b: number): boolean {
  return ((a ^ b) & 0x8000) !== 0;
}

/**
 * One sub-band's adaptive state (the lower band's names carry L in the Recommendation, the higher
 * band's H): the quantizer scale factor, in the log domain (nb) and linear (det), and block 4's
 * adaptive predictor: two pole coefficients on the reconstructed signal and six zero coefficients on
 * the quantized difference signal, with the delayed values they work on.
 */
class SubBand {
  /** nb: log scale factor. */
  logScale = 0;
  /** det: quantizer scale factor. */
  scale: number;
  /** s: predicted signal for the next sample. */
  estimate = 0;
  /** sz: the zero section's part of it. */
  zeroEstimate = 0;
  /** rt(−1): last reconstructed signal. */
  lastReconstructed = 0;
  /** a1, a2: pole coefficients. */
  pole1 = 0;
  pole2 = 0;
  /** pt(−1), pt(−2): last partially reconstructed signals. */
  partial1 = 0;
  partial2 = 0;
  /**
   * b1 … b6: zero coefficients, and dt(−1) … dt(−6): the last quantized difference signals. Fields
   * rather than arrays: block 4 runs twice per octet, and this measured a tenth faster.
   */
  b1 = 0;
  b2 = 0;
  b3 = 0;
  b4 = 0;
  b5 = 0;
  b6 = 0;
  d1 = 0;
  d2 = 0;
  d3 = 0;
  d4 = 0;
  d5 = 0;
  d6 = 0;

  constructor(initialScale: number) {
    this.scale = initialScale;
  }

  /**
   * Block 4, the adaptive predictor: from the quantized difference signal `dt`, adapts the
   * coefficients and computes the estimate for the next sample (RECONS, PARREC, UPPOL2, UPPOL1,
   * FILTEP, UPZERO, DELAYA, FILTEZ, PREDIC).
   */
  adaptPredictor(dt: number): void {
    // RECONS, PARREC: reconstructed and partially reconstructed signals.
    const reconstructed = saturate16(this.estimate + dt);
    const partial = saturate16(this.zeroEstimate + dt);

    // UPPOL2: a2 leaks towards 0 and moves by the sign agreement of pt with pt(−1) (through a1) and
    // pt(−2); stability constraint |a2| ≤ 0.75.
    const a1Times4 = saturate16(this.pole1 * 4);
    const a1Term = Math.min(signsDiffer(partial, this.partial1) ? a1Times4 : -a1Times4, 32767);
    let pole2 =
      (signsDiffer(partial, this.partial2) ? -128 : 128) + (a1Term >> 7) + ((this.pole2 * 32512) >> 15);
    if (pole2 > 12288) pole2 = 12288;
    else if (pole2 < -12288) pole2 = -12288;

    // UPPOL1: a1 likewise, constrained to |a1| ≤ 1 − 2^-4 − a2.
    let pole1 = saturate16((signsDiffer(partial, this.partial1) ? -192 : 192) + ((this.pole1 * 32640) >> 15));
    const pole1Limit = saturate16(15360 - pole2);
    if (pole1 > pole1Limit) pole1 = pole1Limit;
    else if (pole1 < -pole1Limit) pole1 = -pole1Limit;

    // FILTEP: the pole section's prediction, from rt and rt(−1) with the new coefficients.
    const poleEstimate = saturate16(
      ((pole1 * saturate16(reconstructed + reconstructed)) >> 15) +
        ((pole2 * saturate16(this.lastReconstructed + this.lastReconstructed)) >> 15),
    );
    this.lastReconstructed = reconstructed;
    this.pole1 = pole1;
    this.pole2 = pole2;
    this.partial2 = this.partial1;
    this.partial1 = partial;

    // UPZERO: each bi leaks towards 0 and moves by ±2^-8 as dt agrees in sign with dt(−i); not at all
    // when dt is zero. (The reference saturates the sum, which can never act: the leak leaves bi
    // within −32,640 … 32,639, so the step keeps it within 16 bits.)
    const step = dt === 0 ? 0 : 128;
    const b1 = (signsDiffer(dt, this.d1) ? -step : step) + ((this.b1 * 32640) >> 15);
    const b2 = (signsDiffer(dt, this.d2) ? -step : step) + ((this.b2 * 32640) >> 15);
    const b3 = (signsDiffer(dt, this.d3) ? -step : step) + ((this.b3 * 32640) >> 15);
    const b4 = (signsDiffer(dt, this.d4) ? -step : step) + ((this.b4 * 32640) >> 15);
    const b5 = (signsDiffer(dt, this.d5) ? -step : step) + ((this.b5 * 32640) >> 15);
    const b6 = (signsDiffer(dt, this.d6) ? -step : step) + ((this.b6 * 32640) >> 15);
    this.b1 = b1;
    this.b2 = b2;
    this.b3 = b3;
    this.b4 = b4;
    this.b5 = b5;
    this.b6 = b6;
    // DELAYA: dt becomes dt(−1).
    this.d6 = this.d5;
    this.d5 = this.d4;
    this.d4 = this.d3;
    this.d3 = this.d2;
    this.d2 = this.d1;
    this.d1 = dt;
    // FILTEZ: the zero section's prediction, from the six newest with the new coefficients.
    this.zeroEstimate = saturate16(
      ((b1 * saturate16(this.d1 * 2)) >> 15) +
        ((b2 * saturate16(this.d2 * 2)) >> 15) +
        ((b3 * saturate16(this.d3 * 2)) >> 15) +
        ((b4 * saturate16(this.d4 * 2)) >> 15) +
        ((b5 * saturate16(this.d5 * 2)) >> 15) +
        ((b6 * saturate16(this.d6 * 2)) >> 15),
    );

    // PREDIC.
    this.estimate = saturate16(poleEstimate + this.zeroEstimate);
  }
}

/**
 * The lower band's adaptation once its code is known, shared by encoder and decoder: INVQAL gives the
 * quantized difference from the code truncated to 4 bits (what a 48 kbit/s decoder also has, so all
 * modes stay in step), LOGSCL and SCALEL adapt the scale factor, block 4 the predictor.
 */
function adaptLowBand(band: SubBand, code4: number): void {
  const difference = (band.scale * (QM4[code4] as number)) >> 15;
  let logScale = ((band.logScale * 127) >> 7) + (WL[RIL4[code4] as number] as number);
  if (logScale < 0) logScale = 0;
  else if (logScale > NB_LOW_MAX) logScale = NB_LOW_MAX;
  band.logScale = logScale;
  band.scale = linearScale(logScale, 8);
  band.adaptPredictor(difference);
}

/** The higher band's: INVQAH, LOGSCH, SCALEH and block 4. */
function adaptHighBand(band: SubBand, code: number): void {
  const difference = (band.scale * (QM2[code] as number)) >> 15;
  let logScale = ((band.logScale * 127) >> 7) + (WH[RIH2[code] as number] as number);
  if (logScale < 0) logScale = 0;
  else if (logScale > NB_HIGH_MAX) logScale = NB_HIGH_MAX;
  band.logScale = logScale;
  band.scale = linearScale(logScale, 10);
  band.adaptPredictor(difference);
}

/**
 * SCALEL/SCALEH: det from nb through the antilog table; the bands differ only in the offset that
 * places their scale (8 for the lower, 10 for the higher).
 */
function linearScale(logScale: number, offset: number): number {
  const mantissa = ILB[(logScale >> 6) & 31] as number;
  const shift = offset - (logScale >> 11);
  return (shift < 0 ? mantissa << -shift : mantissa >> shift) << 2;
}

/** Each band's det after a reset (nb and everything else are zero). */
const LOW_INITIAL_SCALE = 32;
const HIGH_INITIAL_SCALE = 8;

/** Encodes 16 kHz 16-bit linear PCM to G.722 at 64 kbit/s, keeping the state between frames. */
export class G722Encoder {
  private readonly low = new SubBand(LOW_INITIAL_SCALE);
  private readonly high = new SubBand(HIGH_INITIAL_SCALE);
  /**
   * The transmit QMF's input: the later sample of each pair (even taps) and the earlier one (odd
   * taps), newest first from `qmfPosition`. Each sample is stored twice, QMF_TAPS apart, so that the
   * newest QMF_TAPS are always contiguous.
   */
  private readonly laterSamples = new Int32Array(2 * QMF_TAPS);
  private readonly earlierSamples = new Int32Array(2 * QMF_TAPS);
  private qmfPosition = 0;

  /**
   * Encodes `samples` (an even number of them: a whole number of sample pairs) into `out`, one octet
   * per pair; returns the number of octets written.
   */
  encode(samples: Int16Array, out: Uint8Array): number {
    if (samples.length % 2 !== 0) throw new RangeError(`${samples.length} samples: G.722 codes pairs`);
    const octets = samples.length / 2;
    if (out.length < octets) throw new RangeError(`output holds ${out.length} octets, input needs ${octets}`);
    const { laterSamples, earlierSamples } = this;
    for (let n = 0; n < octets; n++) {
      // The transmit QMF: xA from the even taps, xB from the odd ones; XL = xA + xB and XH = xA − xB,
      // scaled by 2^-13 for the coefficients and by 2^-1 to 15 bits.
      const position = this.qmfPosition === 0 ? QMF_TAPS - 1 : this.qmfPosition - 1;
      this.qmfPosition = position;
      const earlier = samples[2 * n] as number;
      const later = samples[2 * n + 1] as number;
      earlierSamples[position] = earlierSamples[position + QMF_TAPS] = earlier;
      laterSamples[position] = laterSamples[position + QMF_TAPS] = later;
      let evenSum = 0;
      let oddSum = 0;
      for (let i = 0; i < QMF_TAPS; i++) {
        evenSum += (QMF_EVEN[i] as number) * (laterSamples[position + i] as number);
        oddSum += (QMF_ODD[i] as number) * (earlierSamples[position + i] as number);
      }
      // LOWT and HIGHT hold XL and XH to 15 bits: near full scale the filter takes them up to 25,928
      // (spandsp and ffmpeg leave this limit out: see the top of the file).
      out[n] = this.encodeSubBands(
        saturate15((evenSum + oddSum) >> 14),
        saturate15((evenSum - oddSum) >> 14),
      );
    }
    return octets;
  }

  /**
   * The two sub-band ADPCM encoders on one lower-band and one higher-band 15-bit sample: the octet
   * IH·2^6 + IL. `encode` calls it after the QMF; called directly it is the encoder with the QMF
   * by-passed, G.722 Appendix II's configuration for the digital test sequences.
   */
  encodeSubBands(lowSample: number, highSample: number): number {
    const { low, high } = this;

    // Lower band. SUBTRA: the prediction error eL.
    const lowError = saturate16(lowSample - low.estimate);
    // QUANTL: the interval mil holding |eL| among the levels Q6(mil)·detL; IL codes it and the sign.
    const lowMagnitude = lowError >= 0 ? lowError : -(lowError + 1);
    let interval = 1;
    while (interval < 30 && lowMagnitude >= ((Q6[interval] as number) * low.scale) >> 12) interval++;
    const lowCode = (lowError < 0 ? ILN[interval] : ILP[interval]) as number;
    adaptLowBand(low, lowCode >> 2);

    // Higher band. SUBTRA, QUANTH (one decision level), then the adaptation.
    const highError = saturate16(highSample - high.estimate);
    const highMagnitude = highError >= 0 ? highError : -(highError + 1);
    const highInterval = highMagnitude >= (Q2 * high.scale) >> 12 ? 2 : 1;
    const highCode = (highError < 0 ? IHN[highInterval] : IHP[highInterval]) as number;
    adaptHighBand(high, highCode);

    return (highCode << 6) | lowCode;
  }
}

/** Decodes G.722 at 64 kbit/s to 16 kHz 16-bit linear PCM, keeping the state between frames. */
export class G722Decoder {
  private readonly low = new SubBand(LOW_INITIAL_SCALE);
  private readonly high = new SubBand(HIGH_INITIAL_SCALE);
  /** decodeSubBands' output: the reconstructed rL and rH of the last octet. */
  private readonly reconstructed = new Int32Array(2);
  /** The receive QMF's input, xd = rL − rH and xs = rL + rH, stored like the encoder's. */
  private readonly differenceSignal = new Int32Array(2 * QMF_TAPS);
  private readonly sumSignal = new Int32Array(2 * QMF_TAPS);
  private qmfPosition = 0;

  /** Decodes `payload` into `out`, two samples per octet; returns the number of samples written. */
  decode(payload: Uint8Array, out: Int16Array): number {
    const samples = payload.length * 2;
    if (out.length < samples)
      throw new RangeError(`output holds ${out.length} samples, input has ${samples}`);
    const { reconstructed, differenceSignal, sumSignal } = this;
    for (let n = 0; n < payload.length; n++) {
      this.decodeSubBands(payload[n] as number, reconstructed);
      const low = reconstructed[0] as number;
      const high = reconstructed[1] as number;
      // The receive QMF: xout(j) from xd on the even taps, xout(j + 1) from xs on the odd ones, ×2
      // for the filter pair and ×2 back to 16 bits: 2^-13 · 2 · 2 = 2^-11. rL and rH are 15-bit, so
      // xd and xs need no limit; the outputs are saturated (near full scale they overshoot).
      const position = this.qmfPosition === 0 ? QMF_TAPS - 1 : this.qmfPosition - 1;
      this.qmfPosition = position;
      differenceSignal[position] = differenceSignal[position + QMF_TAPS] = low - high;
      sumSignal[position] = sumSignal[position + QMF_TAPS] = low + high;
      let evenSum = 0;
      let oddSum = 0;
      for (let i = 0; i < QMF_TAPS; i++) {
        evenSum += (QMF_EVEN[i] as number) * (differenceSignal[position + i] as number);
        oddSum += (QMF_ODD[i] as number) * (sumSignal[position + i] as number);
      }
      out[2 * n] = saturate16(evenSum >> 11);
      out[2 * n + 1] = saturate16(oddSum >> 11);
    }
    return samples;
  }

  /**
   * The two sub-band ADPCM decoders on one octet: writes the reconstructed 15-bit lower-band and
   * higher-band samples rL and rH to `out[0]` and `out[1]`. `decode` calls it before the QMF; called
   * directly it is the decoder with the QMF by-passed, as G.722 Appendix II tests it.
   */
  decodeSubBands(octet: number, out: Int32Array): void {
    const { low, high } = this;
    const lowCode = octet & 0x3f;
    const highCode = (octet >> 6) & 0x03;

    // Lower band. INVQBL with all 6 bits, RECONS and LIMIT give rL; the adaptation runs on the
    // 4-bit code, as in the encoder.
    out[0] = saturate15(low.estimate + ((low.scale * (QM6[lowCode] as number)) >> 15));
    adaptLowBand(low, lowCode >> 2);

    // Higher band. INVQAH, RECONS and LIMIT give rH.
    out[1] = saturate15(high.estimate + ((high.scale * (QM2[highCode] as number)) >> 15));
    adaptHighBand(high, highCode);
  }
}
