/**
 * Sample-rate conversion of 16-bit linear audio by the integer factors a wideband room needs:
 * 8 kHz ↔ 16 kHz (narrowband legs in a 16 kHz room) and 16 kHz ↔ 48 kHz (Opus at 48 kHz in a 16 kHz
 * room), stream by stream, one frame at a time.
 *
 * Polyphase FIR decimation and interpolation (Crochiere and Rabiner, "Interpolation and decimation of
 * digital signals: a tutorial review", Proc. IEEE 69(3), 1981): a decimator by M computes only every
 * M-th output of the low-pass filter, an interpolator by L runs the filter on the input with L−1 zeros
 * between samples without multiplying by the zeros (each output phase uses every L-th tap), so both
 * cost the filter's length per high-rate sample divided by the factor. The low-pass filters are
 * linear-phase equiripple designs (Parks–McClellan), computed once offline and written below:
 *
 * | factor | taps          | passband           | stopband                | group delay                             |
 * | ------ | ------------- | ------------------ | ----------------------- | --------------------------------------- |
 * | 2      | 77 at 16 kHz  | 0-3,400 Hz ±0.1 dB | 4,000-8,000 Hz ≥ 70 dB  | 38 at 16 kHz = 19 at 8 kHz = 2.375 ms   |
 * | 3      | 139 at 48 kHz | 0-7,000 Hz ±0.1 dB | 8,000-24,000 Hz ≥ 70 dB | 69 at 48 kHz = 23 at 16 kHz = 1.4375 ms |
 *
 * The stopband starts at the lower rate's Nyquist frequency, so decimating folds nothing into the
 * lower band above −70 dB (a 6 kHz tone at 16 kHz does not reach a narrowband leg at 2 kHz) and
 * interpolating leaves no image of the lower band above it. Each filter's delay is a whole number of
 * samples at both rates. Every call takes a caller-provided output buffer; the filter's history lives
 * in the converter, so frames of any length fed one after another give exactly what one long buffer
 * would, and nothing is allocated per frame (only when a frame is longer than any before it).
 */

/** The rates audio moves between: G.711 (8 kHz), a wideband room and G.722 (16 kHz), Opus (48 kHz). */
export type SampleRate = 8000 | 16000 | 48000;

/**
 * The first half (and middle tap) of a symmetric low-pass filter: scipy.signal.remez(77, [0, 3400,
 * 4000, 8000], [1, 0], weight=[1, w], fs=16000) with w = (10^(0.1/20) − 1) / 10^(−70/20), the weight
 * that asks for ±0.1 dB of passband ripple against 70 dB of stopband attenuation.
 */
const FACTOR_2_HALF = [
  0.0008002846177291207, 0.0011989616553341785, -0.00027150862412423613, -0.0029656916491503497,
  -0.0034684971371626216, -0.00044807581300805284, 0.0020469836084825747, 1.3580570945659488e-5,
  -0.003338415057563633, -0.0017082432766212011, 0.0032553930876958, 0.0030595833785226245,
  -0.003162899901451312, -0.005009594051849948, 0.0021565316588709983, 0.006900763723293163,
  -0.00037085352197330657, -0.008648879829327324, -0.002423348187322183, 0.009816419352482014,
  0.006185575773583806, -0.01002673667558161, -0.010849073207403128, 0.008814787594820742,
  0.01621963097370366, -0.00568096793958689, -0.022024280126523778, 9.584354274925846e-6,
  0.027906883707797817, 0.009081323110946555, -0.0334688002207519, -0.02325505725570618, 0.03831447678983374,
  0.04677351253687435, -0.0420782834529293, -0.0955428740722113, 0.04446347355160865, 0.31471692387775835,
  0.45472053040060334,
];

/** As FACTOR_2_HALF: scipy.signal.remez(139, [0, 7000, 8000, 24000], [1, 0], weight=[1, w], fs=48000). */
const FACTOR_3_HALF = [
  0.0003224156971806409, 0.0002715322593534971, -0.00010508630525844286, -0.0009103533500581987,
  -0.0018053956589250731, -0.0022118234938640928, -0.0017162699927374164, -0.0004700177205709563,
  0.0007858842717049353, 0.0011963712347065082, 0.0004706351500880334, -0.0007951813449383015,
  -0.0015062433153877326, -0.0009496870667692896, 0.00053425654359748, 0.0017215671577941805,
  0.0014945415705840252, -0.0001298117865304735, -0.001857597459121326, -0.0021237542214468117,
  -0.00048658438732200756, 0.0018140061447924909, 0.0027630086786615566, 0.001313137022423393,
  -0.0015253865817381968, -0.0033372908568274984, -0.0023328517377416216, 0.0009299176447980719,
  0.003753640577072565, 0.0035008944576445746, 1.9084593878393852e-5, -0.0039077191772726,
  -0.004743425306200853, -0.001345777057475381, 0.003692619416691185, 0.005961831371557982,
  0.0030508623038921026, -0.003001582171298274, -0.0070346162967954195, -0.005111431278429893,
  0.0017278441156605472, 0.007814542064876018, 0.007477044021579847, 0.00023360428629466622,
  -0.008126938083486008, -0.01006707310134736, -0.002985672010326232, 0.007770688041945836,
  0.012780871349925841, 0.006651274768776098, -0.006497142072620973, -0.015502824068768718,
  -0.01141683986331916, 0.00395678842483504, 0.01810109628659556, 0.01761974345199264, 0.0004150375800722674,
  -0.020446453687707457, -0.026016467264754074, -0.007768163559075668, 0.02241977740943398,
  0.03862505686996775, 0.021162695983645025, -0.023909389798426398, -0.06255500627716867,
  -0.052813928147257896, 0.02484095297449664, 0.14842122624790502, 0.2621435404654447, 0.3081792545800308,
];

/** The whole odd-length symmetric filter from its first half and middle tap. */
function symmetric(half: readonly number[]): Float64Array {
  const taps = new Float64Array(2 * half.length - 1);
  for (let k = 0; k < half.length; k++) {
    taps[k] = half[k] as number;
    taps[taps.length - 1 - k] = half[k] as number;
  }
  return taps;
}

const FILTERS: Readonly<Record<2 | 3, Float64Array>> = {
  2: symmetric(FACTOR_2_HALF),
  3: symmetric(FACTOR_3_HALF),
};

/** Frames are 20 ms unless the caller says otherwise by sending longer ones. */
const FRAME_MS = 20;

function saturate(value: number): number {
  return Math.min(32767, Math.max(-32768, Math.round(value)));
}

/** Converts one stream of audio from one rate to another, a frame at a time. */
export interface Resampler {
  readonly fromRate: SampleRate;
  readonly toRate: SampleRate;
  /**
   * How far the output lags the input, in output samples: the filter's group delay. The first
   * `delay` output samples of a stream are the filter filling up from silence.
   */
  readonly delay: number;
  /**
   * Converts the next frame of the stream into `output`, which must hold exactly
   * `input.length * toRate / fromRate` samples (a decimator's input length must be a multiple of the
   * factor). Samples past 16 bits (a filter overshoots on full-scale edges) are saturated.
   */
  process(input: Int16Array, output: Int16Array): void;
}

/**
 * The input seen so far as the filter needs it: the last `history` samples before the current frame,
 * followed by the frame, as floating point (the multiply-adds then need no conversion).
 */
class History {
  #samples: Float64Array;

  constructor(
    readonly history: number,
    frameSamples: number,
  ) {
    this.#samples = new Float64Array(history + frameSamples);
  }

  /** The history followed by `input`; valid until the next call. */
  append(input: Int16Array): Float64Array {
    const needed = this.history + input.length;
    if (this.#samples.length < needed) {
      const grown = new Float64Array(needed);
      grown.set(this.#samples.subarray(0, this.history));
      this.#samples = grown;
    }
    const samples = this.#samples;
    for (let i = 0; i < input.length; i++) samples[this.history + i] = input[i] as number;
    return samples;
  }

  /** Keeps the newest `history` samples of the last append for the next one. */
  advance(inputLength: number): void {
    this.#samples.copyWithin(0, inputLength, inputLength + this.history);
  }
}

/**
 * Keeps every `factor`-th sample of the low-passed input: y[n] = Σ h[k] x[n·factor − k]. The filter is
 * symmetric, so the two samples that meet the same tap are added before the multiply, and four outputs
 * are computed together, sharing each tap's load (measured fastest in V8 among 1, 2 and 4).
 */
class Decimator implements Resampler {
  readonly delay: number;
  readonly #factor: number;
  readonly #taps: Float64Array;
  readonly #input: History;

  constructor(
    readonly fromRate: SampleRate,
    readonly toRate: SampleRate,
  ) {
    const factor = fromRate / toRate;
    this.#factor = factor;
    this.#taps = FILTERS[factor as 2 | 3];
    this.delay = (this.#taps.length - 1) / 2 / factor;
    this.#input = new History(this.#taps.length - 1, (fromRate * FRAME_MS) / 1000);
  }

  process(input: Int16Array, output: Int16Array): void {
    const factor = this.#factor;
    if (input.length % factor !== 0 || output.length * factor !== input.length) {
      throw new RangeError(
        `resampling ${this.fromRate} Hz to ${this.toRate} Hz: ${input.length} samples in, room for ${output.length} out`,
      );
    }
    const samples = this.#input.append(input);
    const taps = this.#taps;
    const middle = (taps.length - 1) >> 1;
    const middleTap = taps[middle] as number;
    // Output n's window is samples[n·factor, n·factor + taps.length): the history and the frame.
    let n = 0;
    for (; n + 3 < output.length; n += 4) {
      const first = n * factor;
      const last = first + taps.length - 1;
      let a = middleTap * (samples[first + middle] as number);
      let b = middleTap * (samples[first + factor + middle] as number);
      let c = middleTap * (samples[first + 2 * factor + middle] as number);
      let d = middleTap * (samples[first + 3 * factor + middle] as number);
      for (let k = 0; k < middle; k++) {
        const tap = taps[k] as number;
        const early = first + k;
        const late = last - k;
        a += tap * ((samples[early] as number) + (samples[late] as number));
        b += tap * ((samples[early + factor] as number) + (samples[late + factor] as number));
        c += tap * ((samples[early + 2 * factor] as number) + (samples[late + 2 * factor] as number));
        d += tap * ((samples[early + 3 * factor] as number) + (samples[late + 3 * factor] as number));
      }
      output[n] = saturate(a);
      output[n + 1] = saturate(b);
      output[n + 2] = saturate(c);
      output[n + 3] = saturate(d);
    }
    for (; n < output.length; n++) {
      const first = n * factor;
      const last = first + taps.length - 1;
      let sum = middleTap * (samples[first + middle] as number);
      for (let k = 0; k < middle; k++) {
        sum += (taps[k] as number) * ((samples[first + k] as number) + (samples[last - k] as number));
      }
      output[n] = saturate(sum);
    }
    this.#input.advance(input.length);
  }
}

/**
 * An interpolator's filter split into its phases: output phase p of input sample j is
 * factor · Σ h[i·factor + p] x[j − i]. Phase p's taps are at [p · length, (p + 1) · length), the filter
 * padded with zeros to a multiple of the factor, oldest sample's tap first, the gain included.
 */
function phases(taps: Float64Array, factor: number): Float64Array {
  const length = Math.ceil(taps.length / factor);
  const split = new Float64Array(factor * length);
  for (let p = 0; p < factor; p++) {
    for (let i = 0; i < length; i++)
      split[p * length + (length - 1 - i)] = factor * (taps[i * factor + p] ?? 0);
  }
  return split;
}

// Module constants, not fields: V8 then knows the loop bounds and table lengths when it compiles the
// loops below and drops most bounds checks (a field-driven loop measured about 1.7 times slower).
const DOUBLING_PHASES = phases(FILTERS[2], 2);
const DOUBLING_PHASE_LENGTH = DOUBLING_PHASES.length >> 1;
const TRIPLING_PHASES = phases(FILTERS[3], 3);
const TRIPLING_PHASE_LENGTH = TRIPLING_PHASES.length / 3;

/**
 * Doubles the rate of `pairs` pairs of input samples, each window samples[j, j + phase length) ending
 * at input sample j. Both phases of two input samples are computed in one pass over the window, so
 * each sample and tap is loaded once for four multiply-adds (measured faster in V8 than one or four
 * input samples at a time).
 */
function doubleInPairs(samples: Float64Array, pairs: number, output: Int16Array): void {
  const taps = DOUBLING_PHASES;
  const length = DOUBLING_PHASE_LENGTH;
  for (let j = 0, out = 0; j < 2 * pairs; j += 2) {
    let even = 0;
    let odd = 0;
    let nextEven = 0;
    let nextOdd = 0;
    let current = samples[j] as number;
    for (let k = 0; k < length; k++) {
      const next = samples[j + k + 1] as number;
      const evenTap = taps[k] as number;
      const oddTap = taps[length + k] as number;
      even += evenTap * current;
      odd += oddTap * current;
      nextEven += evenTap * next;
      nextOdd += oddTap * next;
      current = next;
    }
    output[out++] = saturate(even);
    output[out++] = saturate(odd);
    output[out++] = saturate(nextEven);
    output[out++] = saturate(nextOdd);
  }
}

/** As doubleInPairs, for three phases. */
function tripleInPairs(samples: Float64Array, pairs: number, output: Int16Array): void {
  const taps = TRIPLING_PHASES;
  const length = TRIPLING_PHASE_LENGTH;
  for (let j = 0, out = 0; j < 2 * pairs; j += 2) {
    let first = 0;
    let second = 0;
    let third = 0;
    let nextFirst = 0;
    let nextSecond = 0;
    let nextThird = 0;
    let current = samples[j] as number;
    for (let k = 0; k < length; k++) {
      const next = samples[j + k + 1] as number;
      const firstTap = taps[k] as number;
      const secondTap = taps[length + k] as number;
      const thirdTap = taps[2 * length + k] as number;
      first += firstTap * current;
      second += secondTap * current;
      third += thirdTap * current;
      nextFirst += firstTap * next;
      nextSecond += secondTap * next;
      nextThird += thirdTap * next;
      current = next;
    }
    output[out++] = saturate(first);
    output[out++] = saturate(second);
    output[out++] = saturate(third);
    output[out++] = saturate(nextFirst);
    output[out++] = saturate(nextSecond);
    output[out++] = saturate(nextThird);
  }
}

/** Low-passes the input with `factor − 1` zeros put between samples, one phase filter per output phase. */
class Interpolator implements Resampler {
  readonly delay: number;
  readonly #factor: 2 | 3;
  readonly #phases: Float64Array;
  readonly #phaseLength: number;
  readonly #input: History;

  constructor(
    readonly fromRate: SampleRate,
    readonly toRate: SampleRate,
  ) {
    const factor = (toRate / fromRate) as 2 | 3;
    this.#factor = factor;
    this.delay = (FILTERS[factor].length - 1) >> 1;
    this.#phases = factor === 2 ? DOUBLING_PHASES : TRIPLING_PHASES;
    this.#phaseLength = factor === 2 ? DOUBLING_PHASE_LENGTH : TRIPLING_PHASE_LENGTH;
    this.#input = new History(this.#phaseLength - 1, (fromRate * FRAME_MS) / 1000);
  }

  process(input: Int16Array, output: Int16Array): void {
    const factor = this.#factor;
    if (output.length !== input.length * factor) {
      throw new RangeError(
        `resampling ${this.fromRate} Hz to ${this.toRate} Hz: ${input.length} samples in, room for ${output.length} out`,
      );
    }
    // Input sample j's window is samples[j, j + phase length): it ends at j, which sits after the history.
    const samples = this.#input.append(input);
    const pairs = input.length >> 1;
    if (factor === 2) doubleInPairs(samples, pairs, output);
    else tripleInPairs(samples, pairs, output);
    if (input.length % 2 === 1) this.#last(samples, input.length - 1, output);
    this.#input.advance(input.length);
  }

  /** Every phase of input sample j alone: the last sample of a frame of odd length. */
  #last(samples: Float64Array, j: number, output: Int16Array): void {
    const length = this.#phaseLength;
    for (let p = 0; p < this.#factor; p++) {
      let sum = 0;
      for (let k = 0; k < length; k++)
        sum += (this.#phases[p * length + k] as number) * (samples[j + k] as number);
      output[j * this.#factor + p] = saturate(sum);
    }
  }
}

/**
 * A converter for one stream from `fromRate` to `toRate`: 8000 ↔ 16000 or 16000 ↔ 48000. Each stream
 * needs its own (the converter keeps the stream's recent samples).
 */
export function createResampler(fromRate: SampleRate, toRate: SampleRate): Resampler {
  const higher = Math.max(fromRate, toRate);
  const lower = Math.min(fromRate, toRate);
  if (!((lower === 8000 && higher === 16000) || (lower === 16000 && higher === 48000))) {
    throw new RangeError(
      `no converter from ${fromRate} Hz to ${toRate} Hz (8000 ↔ 16000 and 16000 ↔ 48000 only)`,
    );
  }
  return fromRate > toRate ? new Decimator(fromRate, toRate) : new Interpolator(fromRate, toRate);
}

/**
 * A whole sound at another rate (prompts, recorded names, speech: converted once, not per frame),
 * aligned with the original: the filter's delay is taken off the start and its tail run out, so the
 * converted sound starts and ends where the original does.
 */
export function convertSampleRate(samples: Int16Array, fromRate: SampleRate, toRate: SampleRate): Int16Array {
  if (fromRate === toRate) return samples;
  const converter = createResampler(fromRate, toRate);
  const factor = fromRate > toRate ? fromRate / toRate : 1;
  const ratio = toRate / fromRate;
  // The filter's tail (delay output samples) and whole input groups for a decimator.
  const tailInput = Math.ceil(converter.delay / ratio / factor) * factor;
  const inputLength = Math.ceil((samples.length + tailInput) / factor) * factor;
  const input = new Int16Array(inputLength);
  input.set(samples);
  const output = new Int16Array(inputLength * ratio);
  converter.process(input, output);
  return output.slice(converter.delay, converter.delay + Math.round(samples.length * ratio));
}

/**
 * A rate converter for frames that may skip ticks (a caller with nothing to say, a listener between
 * frames of its own): after a gap the filter's history holds audio long gone, so it is run over a
 * silent frame first and the next frame starts from silence, not from a stale tail.
 */
export class FrameConverter {
  readonly #resampler: Resampler;
  readonly #silence: Int16Array;
  readonly #discarded: Int16Array;
  #lastTick = Number.NEGATIVE_INFINITY;

  constructor(from: 8000 | 16000, to: 8000 | 16000) {
    this.#resampler = createResampler(from, to);
    this.#silence = new Int16Array((from * FRAME_MS) / 1000);
    this.#discarded = new Int16Array((to * FRAME_MS) / 1000);
  }

  /** Converts the frame of tick `tick`. */
  process(input: Int16Array, output: Int16Array, tick: number): void {
    if (tick !== this.#lastTick + 1) this.#resampler.process(this.#silence, this.#discarded);
    this.#lastTick = tick;
    this.#resampler.process(input, output);
  }
}
