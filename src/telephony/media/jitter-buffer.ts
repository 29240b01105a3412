/**
 * A fixed-delay jitter buffer for decoded 20 ms frames, keyed by RTP sequence number and pulled once
 * per playout tick. Playout starts `delayFrames` ticks after the first frame arrives; frames that
 * arrive after their tick are dropped, and a frame missing at its tick is concealed by repeating the
 * last played frame, attenuated as in G.711 Appendix I §I.2.4: full level for the first 10 ms, then
 * 20 % less per 10 ms, silent 60 ms into the loss.
 */

export interface JitterBufferOptions {
  /** Samples in one frame, default 160 (20 ms at 8 kHz). */
  samplesPerFrame?: number;
  /** Playout delay in frames, default 3 (60 ms). */
  delayFrames?: number;
  /** Frames held at most, a power of two larger than the delay; default 32. */
  capacityFrames?: number;
}

/** What `pull` wrote: a received frame, a concealment of a missing one, or silence. */
export type PlayoutKind = "frame" | "concealed" | "silence";

/** The playout delay when none is given: 3 frames, 60 ms. */
export const DEFAULT_DELAY_FRAMES = 3;

const EMPTY_SLOT = -1;
/** Frames kept beyond the playout delay when playout has fallen behind (a 60 ms margin for jitter). */
const TRIM_SLACK_FRAMES = 3;

export class JitterBuffer {
  private readonly samplesPerFrame: number;
  private readonly delayFrames: number;
  private readonly capacityFrames: number;
  /** One frame per slot; slot = sequence number mod capacity. */
  private readonly slots: Int16Array[];
  /** The sequence number held by each slot, or EMPTY_SLOT. */
  private readonly slotSequence: Int32Array;
  private readonly lastFrame: Int16Array;
  private hasLastFrame = false;
  /** Sequence number to play at the next tick; null before the first frame. */
  private nextSequence: number | null = null;
  private primingTicks = 0;
  private bufferedFrames = 0;
  /** Samples concealed since the loss began; drives the fade-out. */
  private concealedSamples = 0;

  /** Counters for diagnostics and RTCP extended reports. */
  readonly stats = { played: 0, concealed: 0, late: 0, duplicate: 0, restarts: 0, trimmed: 0 };

  constructor(options: JitterBufferOptions = {}) {
    const { samplesPerFrame = 160, delayFrames = DEFAULT_DELAY_FRAMES, capacityFrames = 32 } = options;
    if ((capacityFrames & (capacityFrames - 1)) !== 0 || capacityFrames <= delayFrames) {
      throw new RangeError("capacityFrames must be a power of two larger than delayFrames");
    }
    this.samplesPerFrame = samplesPerFrame;
    this.delayFrames = delayFrames;
    this.capacityFrames = capacityFrames;
    const storage = new Int16Array(capacityFrames * samplesPerFrame);
    this.slots = Array.from({ length: capacityFrames }, (_, slot) =>
      storage.subarray(slot * samplesPerFrame, (slot + 1) * samplesPerFrame),
    );
    this.slotSequence = new Int32Array(capacityFrames).fill(EMPTY_SLOT);
    this.lastFrame = new Int16Array(samplesPerFrame);
  }

  /** Stores a copy of a received frame; returns false when it was dropped as late or duplicate. */
  push(sequenceNumber: number, frame: Int16Array): boolean {
    const sequence = sequenceNumber & 0xffff;
    const due = this.nextSequence ?? this.restart(sequence);
    // Signed 16-bit distance from the frame due next (RFC 3550 sequence numbers wrap).
    let ahead = ((sequence - due) << 16) >> 16;
    if (ahead < 0 && this.bufferedFrames === 0) {
      // Playout ran dry while the sender paused or the network stalled: start again at this frame.
      this.restart(sequence);
      ahead = 0;
    }
    if (ahead < 0) {
      this.stats.late++;
      return false;
    }
    if (ahead >= this.capacityFrames) {
      // A jump too far to buffer: the source restarted its numbering.
      this.restart(sequence);
    }
    const slot = sequence & (this.capacityFrames - 1);
    if (this.slotSequence[slot] === sequence) {
      this.stats.duplicate++;
      return false;
    }
    this.slotSequence[slot] = sequence;
    this.bufferedFrames++;
    const stored = this.slots[slot] as Int16Array;
    for (let i = 0; i < stored.length; i++) stored[i] = frame[i] as number;
    return true;
  }

  /** Writes the frame due at this tick into `out` (at least one frame long). */
  pull(out: Int16Array): PlayoutKind {
    if (this.nextSequence === null || this.primingTicks > 0) {
      if (this.primingTicks > 0) this.primingTicks--;
      return this.conceal(out);
    }
    // Playout fell far behind the arrivals (ticks the media clock skipped, a sender clock faster
    // than ours): drop the oldest frames back near the playout delay rather than let it grow.
    if (this.bufferedFrames > this.capacityFrames / 2) this.trimTo(this.delayFrames + TRIM_SLACK_FRAMES);
    const sequence = this.nextSequence;
    this.nextSequence = (sequence + 1) & 0xffff;
    const slot = sequence & (this.capacityFrames - 1);
    if (this.slotSequence[slot] !== sequence) {
      this.stats.concealed++;
      return this.conceal(out);
    }
    this.slotSequence[slot] = EMPTY_SLOT;
    this.bufferedFrames--;
    const frame = this.slots[slot] as Int16Array;
    out.set(frame);
    this.lastFrame.set(frame);
    this.hasLastFrame = true;
    this.concealedSamples = 0;
    this.stats.played++;
    return "frame";
  }

  /** Drops the oldest buffered frames until `frames` remain. */
  private trimTo(frames: number): void {
    while (this.bufferedFrames > frames && this.nextSequence !== null) {
      const oldest = this.nextSequence & (this.capacityFrames - 1);
      if (this.slotSequence[oldest] === this.nextSequence) {
        this.slotSequence[oldest] = EMPTY_SLOT;
        this.bufferedFrames--;
        this.stats.trimmed++;
      }
      this.nextSequence = (this.nextSequence + 1) & 0xffff;
    }
  }

  /** Empties the buffer and plays `sequence` after the playout delay; returns it. */
  private restart(sequence: number): number {
    if (this.nextSequence !== null) this.stats.restarts++;
    this.slotSequence.fill(EMPTY_SLOT);
    this.bufferedFrames = 0;
    this.nextSequence = sequence;
    this.primingTicks = this.delayFrames;
    return sequence;
  }

  /** G.711 Appendix I style fade: gain 1 for 10 ms, then falling linearly by 0.2 per 10 ms to 0. */
  private conceal(out: Int16Array): PlayoutKind {
    const frameLength = this.samplesPerFrame;
    const fadeStart = frameLength / 2; // 10 ms of a 20 ms frame
    const fadeLength = 5 * fadeStart;
    if (!this.hasLastFrame || this.concealedSamples >= fadeStart + fadeLength) {
      out.fill(0, 0, frameLength);
      return "silence";
    }
    for (let i = 0; i < frameLength; i++) {
      const elapsed = this.concealedSamples + i;
      const gain = elapsed < fadeStart ? 1 : Math.max(0, 1 - (elapsed - fadeStart) / fadeLength);
      out[i] = Math.trunc((this.lastFrame[i] as number) * gain);
    }
    this.concealedSamples += frameLength;
    return "concealed";
  }
}
