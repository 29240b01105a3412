/**
 * Cuts received audio into the fixed 20 ms frames the jitter buffer and the layers above work in,
 * whatever the sender's packet length: a=ptime is only a preference (RFC 4566 section 6), and trunks
 * send 10, 30 or 40 ms packets too. Frames are placed by RTP timestamp, so a frame index stands in
 * for a sequence number: with 160-sample frames and an 8 kHz clock, frame n holds the samples at
 * timestamps base + 160n ... base + 160n + 159.
 *
 * The samples may run at another rate than the timestamps' clock: G.722 is 16 kHz audio on an 8 kHz
 * clock (two samples a tick, RFC 3551 §4.5.2), Opus decoded at 16 kHz is on a 48 kHz clock (a third
 * of a sample a tick, RFC 7587 §4.1), G.711 upsampled to 16 kHz has two samples a tick. A stream
 * whose packets change clock (another format) goes on at the frame after the last one placed, as
 * the timestamps of two clocks do not line up.
 */

/** Placement is measured from a base moved forward once this many ticks past it, well inside 32 bits. */
const REBASE_TICKS = 0x40000000;

export class FrameAssembler {
  readonly #samplesPerFrame: number;
  readonly #sampleRate: number;
  readonly #frame: Int16Array;
  /** The clock of the timestamps placed so far; 0 before the first packet. */
  #clockRate = 0;
  /** RTP timestamp of sample 0 of frame #baseFrame; null until a packet placed the stream (or its new clock). */
  #base: number | null = null;
  #baseFrame = 0;
  /** Index of the frame being filled, or -1. */
  #frameIndex = -1;
  #filled = 0;
  /** The highest frame index placed so far, -1 before any. */
  #lastFrame = -1;

  constructor(
    /** Told of each complete frame, and of a partial one (zero-filled) when later audio arrives first. */
    private readonly onFrame: (frameIndex: number, frame: Int16Array) => void,
    samplesPerFrame = 160,
    /** The rate of the samples pushed: with samplesPerFrame, what one frame lasts. */
    sampleRate = 8000,
  ) {
    this.#samplesPerFrame = samplesPerFrame;
    this.#sampleRate = sampleRate;
    this.#frame = new Int16Array(samplesPerFrame);
  }

  /** Forgets the stream: the next packet starts frame 0 (a new source). */
  reset(): void {
    this.#clockRate = 0;
    this.#base = null;
    this.#baseFrame = 0;
    this.#frameIndex = -1;
    this.#filled = 0;
    this.#lastFrame = -1;
  }

  /**
   * Places `count` samples that start at the RTP timestamp, on a clock of `clockRate` (default: the
   * samples' own rate, one sample a tick).
   */
  push(timestamp: number, samples: Int16Array, count: number, clockRate = this.#sampleRate): void {
    if (clockRate !== this.#clockRate) {
      this.#flush();
      this.#clockRate = clockRate;
      this.#base = null;
      this.#baseFrame = this.#lastFrame + 1;
    }
    this.#base ??= timestamp;
    const ticks = (timestamp - this.#base) | 0;
    const size = this.#samplesPerFrame;
    const ticksPerFrame = (clockRate * size) / this.#sampleRate;
    // From the base in samples, then in whole frames and samples into the frame.
    let position = this.#baseFrame * size + Math.round((ticks * this.#sampleRate) / clockRate);
    // Before frame 0 of the stream: from an earlier stream, or so late it is of no use.
    if (position < 0) return;
    if (ticks >= REBASE_TICKS) {
      const frames = Math.floor(ticks / ticksPerFrame);
      this.#base = (this.#base + frames * ticksPerFrame) >>> 0;
      this.#baseFrame += frames;
    }
    let offset = 0;
    while (offset < count) {
      const frameIndex = Math.floor(position / size);
      const within = position - frameIndex * size;
      const take = Math.min(size - within, count - offset);
      if (frameIndex !== this.#frameIndex) {
        this.#flush();
        this.#frameIndex = frameIndex;
        if (frameIndex > this.#lastFrame) this.#lastFrame = frameIndex;
        this.#frame.fill(0);
      }
      const frame = this.#frame;
      for (let i = 0; i < take; i++) frame[within + i] = samples[offset + i] as number;
      this.#filled += take;
      offset += take;
      position += take;
      if (this.#filled >= size) this.#flush();
    }
  }

  #flush(): void {
    if (this.#frameIndex >= 0 && this.#filled > 0) this.onFrame(this.#frameIndex, this.#frame);
    this.#frameIndex = -1;
    this.#filled = 0;
  }
}
