/**
 * DTMF keys heard inside 8 kHz or 16 kHz 16-bit linear audio, for trunks that leave the tones in the
 * audio instead of (or as well as) sending RFC 4733 telephone-events.
 *
 * Analysis: a Goertzel filter at each of the eight DTMF frequencies and at their second harmonics,
 * run over a 13.25 ms window (75 Hz resolution) every 2.5 ms: at 8 kHz 106 samples every 20, at 16 kHz
 * twice as many, which measures the same (the window's response depends on its duration). 106 samples put
 * adjacent row tones (73–89 Hz apart) about one resolution step apart, near the first null of the
 * rectangular window, and keep the loss of a tone off by the allowed 1.5 % under 2 dB; a window much
 * longer would lose that tone, one much shorter would blur adjacent rows together. Overlapping windows
 * 2.5 ms apart, rather than back-to-back ones (13.25 ms steps, frames' 20 ms), measure how long a tone
 * lasts finely enough to tell the 40 ms a digit needs from a 30 ms blip, whatever the tone's alignment
 * with the frames. Cost: 8 windows per 20 ms frame, each 16 filters over the window, from
 * coefficients computed once per rate; nothing is allocated per frame.
 *
 * Each window is judged with the checks of ITU-T Q.24 style receivers: enough energy, one clear row
 * and one clear column, the twist between them within limits, most of the window's energy in those two
 * tones, and no strong second harmonics (speech and music have them, DTMF generators do not). A key
 * is reported once it has been found steadily for long enough that every 40 ms tone counts and no
 * 30 ms one does, and once per press: the same key again needs a pause of 40 ms first.
 */

import { COLUMN_FREQUENCIES, KEYPAD, ROW_FREQUENCIES } from "./keypad-tones.js";

/** The rates the detector listens at. */
export type DetectorRate = 8000 | 16000;
/** The window and hop at 8 kHz; at 16 kHz twice as many samples, the same durations. */
const NARROWBAND_WINDOW_LENGTH = 106;
const NARROWBAND_HOP_LENGTH = 20;
const MAX_WINDOW_LENGTH = 2 * NARROWBAND_WINDOW_LENGTH;

const TONE_FREQUENCIES = [...ROW_FREQUENCIES, ...COLUMN_FREQUENCIES];
const FILTER_FREQUENCIES = [...TONE_FREQUENCIES, ...TONE_FREQUENCIES.map((frequency) => 2 * frequency)];
const TONE_COUNT = TONE_FREQUENCIES.length;
const GROUP_SIZE = ROW_FREQUENCIES.length;

/** The power ratio of a level difference in dB. */
const powerRatio = (db: number) => 10 ** (db / 10);

/**
 * Mean square of a 0 dBm0 sine: a full-scale sine is +3.17 dBm0 in G.711 μ-law (ITU-T G.711),
 * and its mean square is half its squared amplitude.
 */
const ZERO_DBM0 = ((32767 * 32767) / 2) * powerRatio(-3.17);
/** Windows quieter than −30 dBm0 in all are silence or line noise, whatever their spectrum. */
const ENERGY_FLOOR = ZERO_DBM0 * powerRatio(-30);
/** Row tone stronger than the column tone ("normal" twist, the usual line loss): at most 8 dB. */
const NORMAL_TWIST = powerRatio(8);
/** Column tone stronger than the row tone ("reverse" twist): at most 4 dB. */
const REVERSE_TWIST = powerRatio(4);
/** The chosen tone leads every other tone of its group by at least 8 dB. */
const RELATIVE_PEAK = powerRatio(8);
/**
 * Least share of the window's energy in the two tones. A full window of DTMF holds nearly all of it
 * (1.5 % off frequency, still 70 %); noise, speech and music spread theirs. A window a tone only partly
 * fills holds less, which keeps short tones from counting for longer than they last.
 */
const TONE_SHARE = 0.6;
/** A second harmonic more than 10 dB below its fundamental does not disqualify it. */
const SECOND_HARMONIC = powerRatio(-10);
/**
 * Consecutive windows with the key before it is reported. A window counts once the tone fills most of
 * it, so these 12 (starts 27.5 ms apart) need about 33 ms of tone: measured over every alignment and
 * the ±1.5 % tolerance, 40 ms tones are always reported and 30 ms ones never.
 */
const DIGIT_WINDOWS = 12;
/**
 * Consecutive windows without the key before it can be reported again: measured likewise, a pause of
 * 40 ms always ends the press, and a dropout of 28 ms or less (a lost packet) never does.
 */
const PAUSE_WINDOWS = 16;
/** The tolerance on DTMF frequencies that receivers must accept (Q.24). */
const FREQUENCY_TOLERANCE = 0.015;
const NO_KEY = -1;

/** Power response of a `length`-sample rectangular window at `rate` to a tone `offset` Hz away, 1 at 0 Hz. */
function windowResponse(offset: number, length: number, rate: number): number {
  const half = (Math.PI * offset) / rate;
  if (Math.abs(Math.sin(half)) < 1e-12) return 1;
  const ratio = Math.sin(length * half) / (length * Math.sin(half));
  return ratio * ratio;
}

/** The filters and limits of the analysis at one rate, computed once. */
interface Analysis {
  readonly rate: DetectorRate;
  readonly windowLength: number;
  readonly hopLength: number;
  readonly coefficients: Float64Array;
  /** Amplitude leakage of column `c`'s tone into row `r`'s second-harmonic filter at [r * 4 + c], and the reverse. */
  readonly rowHarmonicLeakage: Float64Array;
  readonly columnHarmonicLeakage: Float64Array;
}

function analysisAt(rate: DetectorRate): Analysis {
  const windowLength = (NARROWBAND_WINDOW_LENGTH * rate) / 8000;
  /**
   * How much of tone `toneHz` (measured by its own filter) leaks into the filter at `filterHz`, at
   * worst over the accepted frequency tolerance. A row's second harmonic lies as little as 58 Hz from
   * a column tone (2 × 697 = 1394 against 1336), so its filter hears the column tone almost as loudly
   * as a real harmonic; the harmonic check allows for that leakage instead of rejecting genuine digits.
   */
  const worstLeakage = (toneHz: number, filterHz: number): number => {
    const steps = 30;
    let worst = 0;
    for (let step = 0; step <= steps; step++) {
      const deviation = toneHz * FREQUENCY_TOLERANCE * ((2 * step) / steps - 1);
      const leaked = windowResponse(toneHz + deviation - filterHz, windowLength, rate);
      worst = Math.max(worst, leaked / windowResponse(deviation, windowLength, rate));
    }
    return worst;
  };
  const rowHarmonicLeakage = new Float64Array(GROUP_SIZE * GROUP_SIZE);
  const columnHarmonicLeakage = new Float64Array(GROUP_SIZE * GROUP_SIZE);
  for (let row = 0; row < GROUP_SIZE; row++) {
    for (let column = 0; column < GROUP_SIZE; column++) {
      const rowHz = ROW_FREQUENCIES[row] as number;
      const columnHz = COLUMN_FREQUENCIES[column] as number;
      rowHarmonicLeakage[row * GROUP_SIZE + column] = Math.sqrt(worstLeakage(columnHz, 2 * rowHz));
      columnHarmonicLeakage[column * GROUP_SIZE + row] = Math.sqrt(worstLeakage(rowHz, 2 * columnHz));
    }
  }
  return {
    rate,
    windowLength,
    hopLength: (NARROWBAND_HOP_LENGTH * rate) / 8000,
    coefficients: Float64Array.from(FILTER_FREQUENCIES, (hz) => 2 * Math.cos((2 * Math.PI * hz) / rate)),
    rowHarmonicLeakage,
    columnHarmonicLeakage,
  };
}

const ANALYSES: Readonly<Record<DetectorRate, Analysis>> = {
  8000: analysisAt(8000),
  16000: analysisAt(16000),
};

/** Index of the strongest of `powers[start]`…`powers[start + 3]`, or NO_KEY when another is within RELATIVE_PEAK. */
function clearPeak(powers: Float64Array, start: number): number {
  let best = start;
  for (let i = start + 1; i < start + GROUP_SIZE; i++) {
    if ((powers[i] as number) > (powers[best] as number)) best = i;
  }
  const bestPower = powers[best] as number;
  for (let i = start; i < start + GROUP_SIZE; i++) {
    if (i !== best && (powers[i] as number) * RELATIVE_PEAK > bestPower) return NO_KEY;
  }
  return best - start;
}

export class InbandDtmfDetector {
  private analysis: Analysis;
  /** The last `analysis.windowLength` samples, oldest at `writeIndex`. */
  private readonly history = new Float64Array(MAX_WINDOW_LENGTH);
  /** Per filter, the tone's mean square: a sine of amplitude A gives A²/2. */
  private readonly powers = new Float64Array(FILTER_FREQUENCIES.length);
  private writeIndex = 0;
  private samplesUntilWindow: number;
  /** Result of the latest windows (a key index or NO_KEY) and how many in a row gave it. */
  private runKey = NO_KEY;
  private runLength = 0;
  /** The key of the press in progress, already reported. */
  private reportedKey = NO_KEY;

  constructor(
    private readonly onDigit: (key: string) => void,
    sampleRate: DetectorRate = 8000,
  ) {
    this.analysis = ANALYSES[sampleRate];
    this.samplesUntilWindow = this.analysis.hopLength;
  }

  /** The rate it listens at: that of the audio last fed. */
  get sampleRate(): DetectorRate {
    return this.analysis.rate;
  }

  /**
   * Feeds audio in order: the first `length` samples of `frame`, any number, usually one packet's, at
   * `sampleRate` (default the rate of the audio before). Audio at another rate than before starts
   * the analysis afresh (a stream that changed codec).
   */
  process(frame: Int16Array, length = frame.length, sampleRate: DetectorRate = this.analysis.rate): void {
    if (sampleRate !== this.analysis.rate) {
      this.analysis = ANALYSES[sampleRate];
      this.reset();
    }
    const windowLength = this.analysis.windowLength;
    for (let i = 0; i < length; i++) {
      this.history[this.writeIndex] = frame[i] as number;
      this.writeIndex = this.writeIndex === windowLength - 1 ? 0 : this.writeIndex + 1;
      if (--this.samplesUntilWindow === 0) {
        this.samplesUntilWindow = this.analysis.hopLength;
        this.onWindow(this.classifyWindow());
      }
    }
  }

  /** Forgets all audio heard so far, as at construction. */
  reset(): void {
    this.history.fill(0);
    this.writeIndex = 0;
    this.samplesUntilWindow = this.analysis.hopLength;
    this.runKey = NO_KEY;
    this.runLength = 0;
    this.reportedKey = NO_KEY;
  }

  private onWindow(key: number): void {
    if (key === this.runKey) {
      this.runLength++;
    } else {
      this.runKey = key;
      this.runLength = 1;
    }
    if (key === NO_KEY) {
      if (this.runLength >= PAUSE_WINDOWS) this.reportedKey = NO_KEY;
    } else if (this.runLength >= DIGIT_WINDOWS && key !== this.reportedKey) {
      this.reportedKey = key;
      this.onDigit(KEYPAD[key] as string);
    }
  }

  /** The key whose tones fill the current window, or NO_KEY. */
  private classifyWindow(): number {
    const history = this.history;
    const powers = this.powers;
    const { windowLength, rowHarmonicLeakage, columnHarmonicLeakage } = this.analysis;
    let energy = 0;
    for (let i = 0; i < windowLength; i++) {
      const sample = history[i] as number;
      energy += sample * sample;
    }
    energy /= windowLength;
    if (energy < ENERGY_FLOOR) return NO_KEY;

    // Filters group by group, each check as soon as it can be made: speech and music usually fail
    // the row check, so most windows cost four filters rather than sixteen.
    for (let filter = 0; filter < GROUP_SIZE; filter++) this.filter(filter);
    const row = clearPeak(powers, 0);
    if (row === NO_KEY) return NO_KEY;
    for (let filter = GROUP_SIZE; filter < TONE_COUNT; filter++) this.filter(filter);
    const column = clearPeak(powers, GROUP_SIZE);
    if (column === NO_KEY) return NO_KEY;
    const rowPower = powers[row] as number;
    const columnPower = powers[GROUP_SIZE + column] as number;
    if (rowPower > columnPower * NORMAL_TWIST || columnPower > rowPower * REVERSE_TWIST) return NO_KEY;
    if (rowPower + columnPower < TONE_SHARE * energy) return NO_KEY;

    this.filter(TONE_COUNT + row);
    this.filter(TONE_COUNT + GROUP_SIZE + column);
    const rowHarmonic = Math.sqrt(powers[TONE_COUNT + row] as number);
    const columnHarmonic = Math.sqrt(powers[TONE_COUNT + GROUP_SIZE + column] as number);
    const rowAmplitude = Math.sqrt(rowPower);
    const columnAmplitude = Math.sqrt(columnPower);
    const harmonicShare = Math.sqrt(SECOND_HARMONIC);
    const rowHarmonicLimit =
      harmonicShare * rowAmplitude +
      (rowHarmonicLeakage[row * GROUP_SIZE + column] as number) * columnAmplitude;
    const columnHarmonicLimit =
      harmonicShare * columnAmplitude +
      (columnHarmonicLeakage[column * GROUP_SIZE + row] as number) * rowAmplitude;
    if (rowHarmonic > rowHarmonicLimit || columnHarmonic > columnHarmonicLimit) return NO_KEY;

    return row * GROUP_SIZE + column;
  }

  /** One Goertzel filter over the window, oldest sample first, into `powers`. */
  private filter(index: number): void {
    const history = this.history;
    const start = this.writeIndex;
    const windowLength = this.analysis.windowLength;
    const coefficient = this.analysis.coefficients[index] as number;
    let previous = 0;
    let beforePrevious = 0;
    for (let i = start; i < windowLength; i++) {
      const current = (history[i] as number) + coefficient * previous - beforePrevious;
      beforePrevious = previous;
      previous = current;
    }
    for (let i = 0; i < start; i++) {
      const current = (history[i] as number) + coefficient * previous - beforePrevious;
      beforePrevious = previous;
      previous = current;
    }
    const power =
      previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
    this.powers[index] = (2 * power) / (windowLength * windowLength);
  }
}
