/**
 * Cuts received audio into the fixed 20 ms frames the jitter buffer and the layers above work in,
 * whatever the sender's packet length: a=ptime is only a preference (RFC 4566 section 6), and trunks
 * send 10, 30 or 40 ms packets too. Frames are placed by RTP timestamp, so frame n holds the samples
 * at timestamps base + 160n ... base + 160n + 159, and a frame index stands in for a sequence number.
 */

/** A packet more than this far behind the first one is taken as late and dropped (half the 32-bit space). */
const LATE = 0x80000000;

export class FrameAssembler {
  readonly #samplesPerFrame: number;
  readonly #frame: Int16Array;
  /** RTP timestamp of sample 0 of frame 0; null before the first packet. */
  #base: number | null = null;
  /** Index of the frame being filled, or -1. */
  #frameIndex = -1;
  #filled = 0;

  constructor(
    /** Told of each complete frame, and of a partial one (zero-filled) when later audio arrives first. */
    private readonly onFrame: (frameIndex: number, frame: Int16Array) => void,
    samplesPerFrame = 160,
  ) {
    this.#samplesPerFrame = samplesPerFrame;
    this.#frame = new Int16Array(samplesPerFrame);
  }

  /** Forgets the stream: the next packet starts frame 0 (a new source). */
  reset(): void {
    this.#base = null;
    this.#frameIndex = -1;
    this.#filled = 0;
  }

  /** Places `count` decoded samples that start at the RTP timestamp. */
  push(timestamp: number, samples: Int16Array, count: number): void {
    this.#base ??= timestamp;
    let position = (timestamp - this.#base) >>> 0;
    if (position >= LATE) return;
    const size = this.#samplesPerFrame;
    let offset = 0;
    while (offset < count) {
      const frameIndex = Math.floor(position / size);
      const within = position - frameIndex * size;
      const take = Math.min(size - within, count - offset);
      if (frameIndex !== this.#frameIndex) {
        this.#flush();
        this.#frameIndex = frameIndex;
        this.#frame.fill(0);
      }
      this.#frame.set(samples.subarray(offset, offset + take), within);
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
