/**
 * Relaying between two calls whose codecs differ: the audio one session received and decoded goes out
 * of the other re-encoded in its codec (see RtpSession.relayTo). The decoded audio is converted to the
 * encoder's rate and cut into 20 ms frames again, whatever the received packets' length, and each
 * frame is stamped on our clock: the source's timeline carried over with its clock's ratio to ours,
 * so that gaps (losses, a pause for a telephone-event) keep their length.
 */

import type { AudioRate } from "../codec/audio-codec.js";
import { PrefixViews } from "../prefix-views.js";
import { createResampler, type Resampler } from "../resampler.js";
import { MAX_DECODED_SAMPLES } from "./audio-receiver.js";

/** Told of each 20 ms frame at the encoder's rate, with our timestamp for it. */
export type TranscodedFrameSink = (timestamp: number, frame: Int16Array, marker: boolean) => void;

export class RelayTranscoder {
  readonly #sampleRate: AudioRate;
  readonly #clockRate: number;
  readonly #ticksPerSample: number;
  readonly #frame: Int16Array;
  /** Converts the other rate to the encoder's: narrowband up to a wideband encoder, or wideband down. */
  readonly #resampler: Resampler;
  readonly #inputs = new PrefixViews(new Int16Array(MAX_DECODED_SAMPLES));
  readonly #outputs = new PrefixViews(new Int16Array(2 * MAX_DECODED_SAMPLES));
  // The source's timeline on ours: its timestamp `sourceBase` (clock `sourceClock`) is our `ourBase`.
  #sourceClock = 0;
  #sourceBase = 0;
  #ourBase = 0;
  /** Our timestamp just after the audio placed so far; null before any. */
  #next: number | null = null;
  #frameTimestamp = 0;
  #filled = 0;
  #markNext = true;

  constructor(
    /** The encoder's PCM rate and our RTP clock. */
    sampleRate: AudioRate,
    clockRate: number,
    private readonly send: TranscodedFrameSink,
  ) {
    this.#sampleRate = sampleRate;
    this.#clockRate = clockRate;
    this.#ticksPerSample = clockRate / sampleRate;
    this.#frame = new Int16Array(sampleRate / 50);
    this.#resampler = sampleRate === 16000 ? createResampler(8000, 16000) : createResampler(16000, 8000);
  }

  /** Starts a source's timeline at our timestamp `timestamp` (a new source, or after packets passed through). */
  restart(timestamp: number): void {
    this.#sourceClock = 0;
    this.#ourBase = timestamp;
    this.#next = null;
    this.#filled = 0;
    this.#markNext = true;
  }

  /** Our timestamp for the source's `timestamp` on a clock of `clockRate`. */
  map(timestamp: number, clockRate: number): number {
    if (clockRate !== this.#sourceClock) {
      // The first packet, or timestamps on another clock that do not line up with those before:
      // they carry on from where our audio got to.
      this.#sourceClock = clockRate;
      this.#sourceBase = timestamp;
      if (this.#next !== null) this.#ourBase = this.#next;
    }
    const ticks = (timestamp - this.#sourceBase) | 0;
    return (this.#ourBase + Math.round((ticks * this.#clockRate) / clockRate)) >>> 0;
  }

  /** Our clock's ticks for `ticks` of a clock of `clockRate` (a telephone-event's duration). */
  scale(ticks: number, clockRate: number): number {
    return Math.round((ticks * this.#clockRate) / clockRate);
  }

  /** Takes `count` decoded samples at `sampleRate` that start at the source's `timestamp` on a clock of `clockRate`. */
  audio(
    timestamp: number,
    samples: Int16Array,
    count: number,
    sampleRate: AudioRate,
    clockRate: number,
  ): void {
    const start = this.map(timestamp, clockRate);
    // Measure from here on: differences stay small, and exact for whole packets.
    this.#sourceBase = timestamp;
    this.#ourBase = start;
    let input = samples;
    let length = count;
    if (sampleRate !== this.#sampleRate) {
      if (count > MAX_DECODED_SAMPLES || (sampleRate > this.#sampleRate && count % 2 !== 0)) return;
      const source = this.#inputs.of(count);
      for (let i = 0; i < count; i++) source[i] = samples[i] as number;
      length = (count * this.#sampleRate) / sampleRate;
      input = this.#outputs.of(length);
      this.#resampler.process(source, input);
    }
    if (this.#next !== null) {
      const gap = (start - this.#next) | 0;
      // Audio we have sent already: a packet that came late.
      if (gap < 0) return;
      // Audio lost before this: the frame begun goes out with silence for the rest.
      if (gap > 0 && this.#filled > 0) {
        this.#frame.fill(0, this.#filled);
        this.#sendFrame();
      }
    }
    if (this.#filled === 0) this.#frameTimestamp = start;
    const frame = this.#frame;
    let offset = 0;
    while (offset < length) {
      const take = Math.min(frame.length - this.#filled, length - offset);
      for (let i = 0; i < take; i++) frame[this.#filled + i] = input[offset + i] as number;
      this.#filled += take;
      offset += take;
      if (this.#filled === frame.length) this.#sendFrame();
    }
    this.#next = (start + length * this.#ticksPerSample) >>> 0;
  }

  #sendFrame(): void {
    this.send(this.#frameTimestamp, this.#frame, this.#markNext);
    this.#markNext = false;
    this.#frameTimestamp = (this.#frameTimestamp + this.#frame.length * this.#ticksPerSample) >>> 0;
    this.#filled = 0;
  }
}
