/**
 * Decoding the audio of one remote source, packet by packet, in whichever of the negotiated formats
 * each packet comes (RFC 3264 §6.1: the far end may switch between them at any packet), with a
 * decoder per codec made when the stream is configured.
 *
 * Opus losses are handled here rather than by the jitter buffer's repetition (RFC 7587 §3.3, RFC
 * 6716 §4.4): when a packet arrives and audio before it never did, the 20 ms just before it are
 * rebuilt from the packet's in-band FEC data (libopus conceals them when it has none), anything
 * missing before that is concealed by libopus's PLC, and only then is the packet decoded, so the
 * decoder meets the stream in order. A packet of audio already stood in for arrives too late and is
 * dropped.
 */

import { type AudioDecoder, type AudioRate, createDecoder, rtpClockRateOf } from "../codec/audio-codec.js";
import { opusPacketHasFec } from "../codec/opus.js";
import type { AudioCodecName } from "./rtp-stream.js";

/**
 * Told of decoded audio in stream order: `count` samples at `sampleRate`, the first at RTP timestamp
 * `timestamp` of a clock of `clockRate`. The samples are the receiver's: use them before returning.
 */
export type DecodedAudioSink = (
  timestamp: number,
  samples: Int16Array,
  count: number,
  sampleRate: AudioRate,
  clockRate: number,
) => void;

/** The most samples one packet decodes to: a full datagram of G.722 (two per octet), above Opus's 120 ms. */
export const MAX_DECODED_SAMPLES = 2 * 1500;
/** At 16 kHz, the Opus rate here. */
const OPUS_RATE = 16000;
const OPUS_CLOCK = rtpClockRateOf("opus");
const OPUS_TICKS_PER_SAMPLE = OPUS_CLOCK / OPUS_RATE;
const OPUS_FRAME_SAMPLES = OPUS_RATE / 50;
/** libopus stands in for whole multiples of 2.5 ms. */
const OPUS_LOSS_QUANTUM = OPUS_RATE / 400;
/**
 * The most lost audio concealed before a packet, 100 ms: libopus's PLC has faded out by then, and
 * frames further back have missed their playout anyway. A longer gap (a sender that paused without
 * saying so) gets only the 20 ms before the packet rebuilt.
 */
const MAX_CONCEALED_SAMPLES = 5 * OPUS_FRAME_SAMPLES;
/** A packet this far behind the audio decoded means the sender's timestamps jumped back: start again from it. */
const MAX_LATE_TICKS = 32 * OPUS_FRAME_SAMPLES * OPUS_TICKS_PER_SAMPLE;

const CODECS: readonly AudioCodecName[] = ["PCMU", "PCMA", "G722", "opus"];

export class AudioReceiver {
  /** Per codec (in CODECS order), its decoder once a configuration listed it. */
  readonly #decoders: (AudioDecoder | null)[] = CODECS.map(() => null);
  readonly #decoded = new Int16Array(MAX_DECODED_SAMPLES);
  /** The Opus timestamp just after the last audio decoded or stood in for; null when nothing follows on. */
  #opusNext: number | null = null;
  #opusLast = 0;
  /** Counters over the receiver's life: Opus packets dropped as late or repeated, and Opus frames stood in for. */
  readonly stats = { late: 0, duplicate: 0, concealedFrames: 0, recoveredFrames: 0 };

  constructor(private readonly sink: DecodedAudioSink) {}

  /** Makes the decoders of `codecs` not made yet (at configure time, not per packet). */
  prepare(codecs: Iterable<AudioCodecName>): void {
    for (const codec of codecs) {
      const index = CODECS.indexOf(codec);
      this.#decoders[index] ??= createDecoder(codec);
    }
  }

  /**
   * Decodes one audio packet into the sink (after any stand-in for audio lost before it). Returns
   * false when the decoder refused the payload (malformed) or none was prepared for its codec.
   */
  receive(codec: AudioCodecName, timestamp: number, payload: Uint8Array, marker: boolean): boolean {
    const decoder = this.#decoders[CODECS.indexOf(codec)];
    if (decoder === null || decoder === undefined || payload.length === 0) return false;
    if (codec === "opus") return this.#receiveOpus(decoder, timestamp, payload, marker);
    // Another codec between Opus packets: its clock is not Opus's, so nothing follows on.
    this.#opusNext = null;
    if (payload.length * 2 > MAX_DECODED_SAMPLES) return false;
    const count = decoder.decode(payload, this.#decoded);
    this.sink(timestamp, this.#decoded, count, decoder.sampleRate, rtpClockRateOf(codec));
    return true;
  }

  /**
   * The audio pauses on purpose (a telephone-event stands in for it, RFC 4733 §2.5.1.1): the gap
   * before the next packet is no loss to stand in for.
   */
  pause(): void {
    this.#opusNext = null;
  }

  /** A new source: decoders and positions start afresh. */
  reset(): void {
    for (const decoder of this.#decoders) decoder?.reset();
    this.#opusNext = null;
  }

  /** Frees the decoders (libopus's state). */
  dispose(): void {
    for (const decoder of this.#decoders) decoder?.dispose();
    this.#decoders.fill(null);
  }

  #receiveOpus(decoder: AudioDecoder, timestamp: number, payload: Uint8Array, marker: boolean): boolean {
    const expected = this.#opusNext;
    const ahead = expected === null ? 0 : (timestamp - expected) | 0;
    if (ahead < 0 && ahead > -MAX_LATE_TICKS) {
      if (timestamp === this.#opusLast) this.stats.duplicate++;
      else this.stats.late++;
      return true;
    }
    const decoded = this.#decoded;
    // A marked packet starts a talkspurt after silence not sent (RFC 3551 §4.1, Opus DTX): no loss before it.
    if (ahead > 0 && !marker && expected !== null) this.#standInForLoss(decoder, expected, ahead, payload);
    let count: number;
    try {
      count = decoder.decode(payload, decoded);
    } catch {
      return false;
    }
    this.#opusLast = timestamp;
    this.#opusNext = (timestamp + count * OPUS_TICKS_PER_SAMPLE) >>> 0;
    this.sink(timestamp, decoded, count, OPUS_RATE, OPUS_CLOCK);
    return true;
  }

  /** Rebuilds (FEC) or conceals (PLC) the `ticks` of audio from `expected` on that never arrived. */
  #standInForLoss(decoder: AudioDecoder, expected: number, ticks: number, following: Uint8Array): void {
    const missing = Math.floor(ticks / OPUS_TICKS_PER_SAMPLE / OPUS_LOSS_QUANTUM) * OPUS_LOSS_QUANTUM;
    if (missing === 0 || decoder.decodeLost === undefined) return;
    const samples = missing <= MAX_CONCEALED_SAMPLES ? missing : OPUS_FRAME_SAMPLES;
    const start = (expected + (missing - samples) * OPUS_TICKS_PER_SAMPLE) >>> 0;
    let count: number;
    try {
      count = decoder.decodeLost(this.#decoded, following, samples);
    } catch {
      return;
    }
    const recovered = opusPacketHasFec(following) && count >= OPUS_FRAME_SAMPLES ? 1 : 0;
    this.stats.recoveredFrames += recovered;
    this.stats.concealedFrames += Math.round(count / OPUS_FRAME_SAMPLES) - recovered;
    this.sink(start, this.#decoded, count, OPUS_RATE, OPUS_CLOCK);
  }
}
