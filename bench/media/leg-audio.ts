/**
 * What the room benchmark's SIPp legs send (bench/media/room.ts): RTP of one codec, a talker's tone or
 * a listener's silence, as a pcap capture for SIPp's `play_pcap_audio`, encoded by the service's own
 * codecs (G.711, G.722, Opus) so that the service decodes exactly what a phone of that codec sends.
 */
import { encodeAlaw, encodeMulaw } from "../../src/telephony/media/codec/g711.js";
import { G722_FRAME_SAMPLES, G722Encoder } from "../../src/telephony/media/codec/g722.js";
import {
  OPUS_FRAME_SAMPLES,
  OPUS_MAX_PACKET_BYTES,
  OPUS_SAMPLE_RATE,
  OpusEncoder,
} from "../../src/telephony/media/codec/opus.js";
import { rtpPacketLength, writeRtpPacket } from "../../src/telephony/media/rtp/rtp-packet.js";
import { type PcapPacket, ToneGenerator, writeRtpPcap } from "../../test/helpers/audio.js";

/** The codecs a leg answers with, named as in SDP. */
export const LEG_CODECS = ["PCMU", "PCMA", "G722", "opus"] as const;
export type LegCodec = (typeof LEG_CODECS)[number];

/** How a codec appears in the leg's SDP answer. */
export interface LegFormat {
  readonly payloadType: number;
  /** The rtpmap's encoding name, clock rate and channels. */
  readonly rtpmap: string;
  /** The fmtp the leg answers with, if any. */
  readonly fmtp?: string;
  /** The RTP clock rate: the telephone-event the leg answers with goes at it (RFC 4733 §7.1.1). */
  readonly clockRate: 8000 | 48000;
}

/** Static payload types (RFC 3551), and Opus (RFC 7587 §7) under the one the service offers it at. */
export const LEG_FORMATS: Readonly<Record<LegCodec, LegFormat>> = {
  PCMU: { payloadType: 0, rtpmap: "PCMU/8000", clockRate: 8000 },
  PCMA: { payloadType: 8, rtpmap: "PCMA/8000", clockRate: 8000 },
  // G.722's RTP clock is 8000 though it codes 16 kHz audio (RFC 3551 §4.5.2).
  G722: { payloadType: 9, rtpmap: "G722/8000", clockRate: 8000 },
  opus: { payloadType: 111, rtpmap: "opus/48000/2", fmtp: "useinbandfec=1", clockRate: 48000 },
};

/**
 * The tone of each talker's place in a room of 10 (0 to 9): distinct, none a multiple of another,
 * all within the G.711 band (300-3,400 Hz) so that every codec carries them alike.
 */
export const TALKER_TONES_HZ = [410, 690, 970, 1250, 1530, 1810, 2090, 2370, 2650, 2930] as const;
/**
 * A talker's level: -20 dBFS peak (about -23 dBFS RMS), speech level and far above the talk
 * detector's -40 dBFS; ten of them added stay within full scale.
 */
const TALKER_AMPLITUDE = 0.1;

/** One 20 ms frame of PCM in, its payload out: the encoder of a codec at the rate it takes. */
interface FrameEncoder {
  readonly sampleRate: number;
  readonly frameSamples: number;
  encode(pcm: Int16Array, payload: Uint8Array): number;
  dispose(): void;
}

function frameEncoder(codec: LegCodec): FrameEncoder {
  switch (codec) {
    case "PCMU":
      return { sampleRate: 8000, frameSamples: 160, encode: encodeMulaw, dispose: () => {} };
    case "PCMA":
      return { sampleRate: 8000, frameSamples: 160, encode: encodeAlaw, dispose: () => {} };
    case "G722": {
      const encoder = new G722Encoder();
      return {
        sampleRate: 16_000,
        frameSamples: G722_FRAME_SAMPLES,
        encode: (pcm, payload) => encoder.encode(pcm, payload),
        dispose: () => {},
      };
    }
    case "opus": {
      // A phone's settings: 32 kbit/s with in-band FEC (the encoder's defaults).
      const encoder = new OpusEncoder();
      return {
        sampleRate: OPUS_SAMPLE_RATE,
        frameSamples: OPUS_FRAME_SAMPLES,
        encode: (pcm, payload) => encoder.encode(pcm, payload),
        dispose: () => encoder.dispose(),
      };
    }
  }
}

/**
 * Writes `seconds` of one leg's RTP in `codec` to `path` as a pcap: a tone of `toneHz` (a talker), or
 * digital silence when null (a listener). One SSRC, consecutive sequence numbers, the timestamp
 * advancing 20 ms of the codec's RTP clock per packet, one packet every 20 ms of capture time.
 */
export function writeLegPcap(path: string, codec: LegCodec, toneHz: number | null, seconds: number): void {
  const { payloadType, clockRate } = LEG_FORMATS[codec];
  const encoder = frameEncoder(codec);
  const tone = toneHz === null ? null : new ToneGenerator(toneHz, TALKER_AMPLITUDE, encoder.sampleRate);
  const pcm = new Int16Array(encoder.frameSamples);
  const payload = new Uint8Array(OPUS_MAX_PACKET_BYTES);
  const ssrc = (0x1e900000 + (toneHz ?? 0)) >>> 0;
  const packets: PcapPacket[] = [];
  try {
    for (let frame = 0; frame < Math.ceil(seconds * 50); frame++) {
      const length = encoder.encode(tone === null ? pcm : tone.fill(pcm), payload);
      const header = {
        marker: frame === 0,
        payloadType,
        sequenceNumber: frame & 0xffff,
        timestamp: (frame * clockRate) / 50,
        ssrc,
        csrcs: [],
      };
      const datagram = Buffer.alloc(rtpPacketLength(header, length));
      writeRtpPacket(header, payload.subarray(0, length), datagram);
      packets.push({ offsetMs: frame * 20, datagram });
    }
  } finally {
    encoder.dispose();
  }
  writeRtpPcap(path, packets);
}
