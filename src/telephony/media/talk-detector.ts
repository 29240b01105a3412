/**
 * Whether a participant is talking, from the level of each 20 ms frame it sends, with hysteresis so
 * the answer does not flicker between syllables: talking starts after a few loud frames in a row and
 * stops only after half a second of quiet. A muted participant is never talking. No allocation per
 * frame.
 */

export interface TalkDetectorOptions {
  /** Frames at or above this level (dBFS) count as speech. */
  readonly thresholdDb?: number;
  /** Loud frames in a row before talking starts. */
  readonly startFrames?: number;
  /** Quiet frames in a row before talking stops. */
  readonly stopFrames?: number;
}

/** Telephone speech sits around -20 to -30 dBFS; line noise and comfort noise well below -45. */
const DEFAULT_THRESHOLD_DB = -40;
/** 60 ms: a click or a key press is shorter. */
const DEFAULT_START_FRAMES = 3;
/** 500 ms: longer than the pauses between words. */
const DEFAULT_STOP_FRAMES = 25;

export class TalkDetector {
  readonly #thresholdDb: number;
  readonly #startFrames: number;
  readonly #stopFrames: number;
  #talking = false;
  /** Frames in a row that argue for changing the state. */
  #run = 0;

  constructor(options: TalkDetectorOptions = {}) {
    this.#thresholdDb = options.thresholdDb ?? DEFAULT_THRESHOLD_DB;
    this.#startFrames = options.startFrames ?? DEFAULT_START_FRAMES;
    this.#stopFrames = options.stopFrames ?? DEFAULT_STOP_FRAMES;
  }

  get talking(): boolean {
    return this.#talking;
  }

  /**
   * Takes one frame's level (dBFS, -Infinity for silence or nothing received) and whether the
   * participant is muted; true when this frame changed `talking`.
   */
  update(levelDb: number, muted: boolean): boolean {
    const loud = !muted && levelDb >= this.#thresholdDb;
    if (loud === this.#talking) {
      this.#run = 0;
      return false;
    }
    // A muted participant stops at once: nobody hears them any more.
    if (muted) {
      this.#talking = false;
      this.#run = 0;
      return true;
    }
    this.#run++;
    if (this.#run < (this.#talking ? this.#stopFrames : this.#startFrames)) return false;
    this.#talking = !this.#talking;
    this.#run = 0;
    return true;
  }
}
