/**
 * The audio codecs of the media path behind one small interface each way: G.711 μ-law and A-law
 * (8 kHz), G.722 (16 kHz audio, RTP clock 8 kHz, RFC 3551 §4.5.2) and Opus, which libopus codes from
 * and decodes to 16 kHz here (a wideband room's rate; the RTP clock stays 48 kHz, RFC 7587 §4.1).
 * Encoders and decoders are made when a stream is configured, and take and give 20 ms frames in the
 * caller's buffers, allocating nothing per frame.
 */

import type { AudioCodecName, OpusSendParameters } from "../rtp/rtp-stream.js";
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from "./g711.js";
import { G722Decoder, G722Encoder } from "./g722.js";
import {
  OPUS_MAX_PACKET_BYTES,
  type OpusBandwidth,
  OpusDecoder,
  OpusEncoder,
  type OpusEncoderSettings,
} from "./opus.js";

/** The PCM rates audio moves at inside: narrowband and wideband. */
export type AudioRate = 8000 | 16000;

/** What an encoder is made from: the codec, and for Opus what the peer's fmtp asked for. */
export interface EncoderSpec {
  readonly codec: AudioCodecName;
  readonly opus?: OpusSendParameters;
}

export interface AudioEncoder {
  /** The PCM rate it takes: 8000 for G.711, 16000 for G.722 and Opus. */
  readonly sampleRate: AudioRate;
  /** Encodes one 20 ms frame (`sampleRate / 50` samples) into `out`; returns the payload's length. */
  encode(frame: Int16Array, out: Uint8Array): number;
  /** Frees what the encoder holds (libopus's state); it cannot be used afterwards. */
  dispose(): void;
}

export interface AudioDecoder {
  /** The PCM rate it gives. */
  readonly sampleRate: AudioRate;
  /** Decodes one payload, any length the codec allows, into `out`; returns the samples written. Throws on a payload the codec refuses. */
  decode(payload: Uint8Array, out: Int16Array): number;
  /**
   * Stands in for `samples` (a multiple of 2.5 ms) of lost audio, for a codec that does this itself
   * (Opus: OpusDecoder.decodeLost): the last frame's worth rebuilt from the in-band FEC data of
   * `following` when it has some, the rest concealed; decode `following` next. Absent for the others.
   */
  decodeLost?(out: Int16Array, following: Uint8Array | undefined, samples: number): number;
  /** Forgets the stream decoded so far (a new source). */
  reset(): void;
  dispose(): void;
}

/** A buffer this big holds any 20 ms payload: Opus's largest single-frame packet (G.711 and G.722 take 160). */
export const MAX_ENCODED_FRAME_BYTES = OPUS_MAX_PACKET_BYTES;

/** The PCM rate a codec's audio is coded at (here: Opus at 16 kHz). */
export function audioRateOf(codec: AudioCodecName): AudioRate {
  return codec === "G722" || codec === "opus" ? 16000 : 8000;
}

/** A codec's RTP clock rate: 8000, G.722 included (RFC 3551 §4.5.2), and 48000 for Opus (RFC 7587 §4.1). */
export function rtpClockRateOf(codec: AudioCodecName): 8000 | 48000 {
  return codec === "opus" ? 48000 : 8000;
}

/**
 * Opus bitrate when the peer names no maxaveragebitrate. RFC 7587 §3.1.1 suggests 16-20 kbit/s for
 * wideband speech, but in-band FEC takes its share: below about 22 kbit/s libopus narrows the band to
 * make room for it (measured: at 20 kbit/s a 6 kHz tone is gone), and at 24 kbit/s it keeps the
 * whole wideband with FEC at EXPECTED_LOSS_PERCENT.
 */
export const DEFAULT_OPUS_BITRATE = 24_000;
/**
 * Packet loss the Opus encoder plans for. libopus sends FEC data only above 0 %, and at 5 % or less
 * only when the bitrate leaves room at the band being coded; above 5 % it makes room. It also makes
 * the coding lean less on the frame before, so concealment has more to go on.
 */
const EXPECTED_LOSS_PERCENT = 10;
/** libopus's own default effort: the media worker codes many streams on a shared core. */
const OPUS_COMPLEXITY = 5;

/**
 * The Opus encoder settings for what a peer asked: its maxaveragebitrate or DEFAULT_OPUS_BITRATE,
 * FEC when its decoder uses it (useinbandfec, default off), and no band above what a 16 kHz source
 * holds (wideband) or above what it plays out (maxplaybackrate).
 */
export function opusEncoderSettings(opus: OpusSendParameters | undefined): OpusEncoderSettings {
  return {
    bitrate: opus?.maxAverageBitrate ?? DEFAULT_OPUS_BITRATE,
    complexity: OPUS_COMPLEXITY,
    inbandFec: opus?.useInbandFec ?? false,
    expectedLossPercent: EXPECTED_LOSS_PERCENT,
    maxBandwidth: bandwidthFor(opus?.maxPlaybackRate ?? 48000),
  };
}

/** The widest Opus band (RFC 6716 §2: NB 4 kHz, MB 6, WB 8) a player at `playbackRate` hears all of, at most wideband. */
function bandwidthFor(playbackRate: number): OpusBandwidth {
  if (playbackRate < 12000) return "narrowband";
  if (playbackRate < 16000) return "mediumband";
  return "wideband";
}

/** Equal keys: identical payloads from identical input with one shared encoder. */
export function encoderKey(spec: EncoderSpec): string {
  if (spec.codec !== "opus") return spec.codec;
  const settings = opusEncoderSettings(spec.opus);
  return `opus/${settings.bitrate}/${settings.inbandFec ? "fec" : "nofec"}/${settings.maxBandwidth}`;
}

export function createEncoder(spec: EncoderSpec): AudioEncoder {
  switch (spec.codec) {
    case "PCMU":
      return { sampleRate: 8000, encode: encodeMulaw, dispose: () => {} };
    case "PCMA":
      return { sampleRate: 8000, encode: encodeAlaw, dispose: () => {} };
    case "G722": {
      const encoder = new G722Encoder();
      return { sampleRate: 16000, encode: (frame, out) => encoder.encode(frame, out), dispose: () => {} };
    }
    case "opus": {
      const encoder = new OpusEncoder({ ...opusEncoderSettings(spec.opus), sampleRate: 16000 });
      return {
        sampleRate: 16000,
        encode: (frame, out) => encoder.encode(frame, out),
        dispose: () => encoder.dispose(),
      };
    }
  }
}

export function createDecoder(codec: AudioCodecName): AudioDecoder {
  switch (codec) {
    case "PCMU":
      return { sampleRate: 8000, decode: decodeMulaw, reset: () => {}, dispose: () => {} };
    case "PCMA":
      return { sampleRate: 8000, decode: decodeAlaw, reset: () => {}, dispose: () => {} };
    case "G722":
      return new G722AudioDecoder();
    case "opus":
      return new OpusAudioDecoder();
  }
}

class OpusAudioDecoder implements AudioDecoder {
  readonly sampleRate = 16000;
  readonly #decoder = new OpusDecoder({ sampleRate: 16000 });

  decode(payload: Uint8Array, out: Int16Array): number {
    return this.#decoder.decode(payload, out);
  }

  decodeLost(out: Int16Array, following: Uint8Array | undefined, samples: number): number {
    return this.#decoder.decodeLost(out, following, samples);
  }

  reset(): void {
    this.#decoder.reset();
  }

  dispose(): void {
    this.#decoder.dispose();
  }
}

class G722AudioDecoder implements AudioDecoder {
  readonly sampleRate = 16000;
  #decoder = new G722Decoder();

  decode(payload: Uint8Array, out: Int16Array): number {
    return this.#decoder.decode(payload, out);
  }

  reset(): void {
    this.#decoder = new G722Decoder();
  }

  dispose(): void {}
}
