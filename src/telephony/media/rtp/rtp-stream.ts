/**
 * What an RTP stream is, apart from the session that carries it: its negotiated configuration, its
 * counters, and what one session hands the next that carries it on (see rtp-session.ts).
 */

import type { RemoteReport } from "./rtcp-reporter.js";
import type { SrtpState } from "./srtp.js";
import type { SrtpKeyMaterial } from "./srtp-suites.js";

/** The audio codecs the stream carries, named as in SDP (the sdp module's AudioCodec). */
export type AudioCodecName = "PCMU" | "PCMA" | "G722" | "opus";

/** SDP direction attribute of the stream (RFC 3264 §5.1), from our side. */
export type MediaDirection = "sendrecv" | "sendonly" | "recvonly" | "inactive";

/** An audio format of the stream: a codec under a payload type. */
export interface AudioFormat {
  readonly codec: AudioCodecName;
  readonly payloadType: number;
}

/** What the peer's fmtp for an Opus format asks of what we send it (RFC 7587 §6.1). */
export interface OpusSendParameters {
  /** maxaveragebitrate, bit/s; absent when it did not say. */
  readonly maxAverageBitrate?: number;
  /** useinbandfec: its decoder uses in-band FEC, so we send it. */
  readonly useInbandFec: boolean;
  /** maxplaybackrate, Hz: nothing above half of it is heard; absent for 48000. */
  readonly maxPlaybackRate?: number;
}

export interface RtpSessionConfiguration {
  /** What we send. */
  codec: AudioCodecName;
  payloadType: number;
  /**
   * Every audio format we receive: all those the answer lists that we decode (RFC 3264 §6.1 and §7:
   * the far end may send any of them, switching packet by packet). `codec` under `payloadType` is
   * received whether listed or not.
   */
  receiveFormats?: readonly AudioFormat[];
  /**
   * The telephone-event payload type at the RTP clock rate of `codec` (RFC 4733 §2.1), which our keys
   * go out with; it is received too. Without it no DTMF is sent.
   */
  telephoneEventPayloadType?: number;
  /** Every telephone-event payload type we accept, whatever its clock rate. */
  receiveTelephoneEventPayloadTypes?: readonly number[];
  /** For an Opus `codec`: what the peer's fmtp asked for. */
  opus?: OpusSendParameters;
  remoteAddress: string;
  remotePort: number;
  /** Default remotePort + 1 (RFC 3550 §11). */
  remoteRtcpPort?: number;
  direction: MediaDirection;
  /** SRTP (RFC 3711): our key for what we send, theirs for what we receive; absent for plain RTP. */
  srtp?: { readonly send: SrtpKeyMaterial; readonly receive: SrtpKeyMaterial };
}

export interface RtpSessionStats {
  packetsSent: number;
  packetsReceived: number;
  /** Cumulative, as in the report block: expected minus received. */
  packetsLost: number;
  /** Fraction (0–1) of the remote's packets lost in our last report interval; null before our first report. */
  fractionLost: number | null;
  /** Our interarrival jitter estimate of the remote's stream (RFC 3550 A.8). */
  jitterMs: number;
  /**
   * The mean of our jitter estimate over the stream: sampled at each of our RTCP reports and once
   * more now; null before any packet came.
   */
  meanJitterMs: number | null;
  /** The remote's view of our stream from its last report block about us; null until one arrives. */
  remoteFractionLost: number | null;
  /** Of our packets, those the remote's last report said it lost since it began receiving (cumulative). */
  remotePacketsLost: number | null;
  /**
   * remotePacketsLost over the packets the remote expected by that report (its extended highest
   * sequence number less our first, plus one), bounded 0–1: the share of our stream it lost up to its
   * last report. Our packets sent after that report are not counted in (they are not yet reported).
   */
  remoteLossShare: number | null;
  remoteJitterMs: number | null;
  /** From the LSR and DLSR of the remote's last report block (§6.4.1); null until one refers to our SR. */
  roundTripMs: number | null;
  /** Received packets that came too late for their playout tick. */
  packetsLate: number;
  packetsDuplicate: number;
  /** Packets that arrived after one with a higher sequence number (reordered or duplicated). */
  packetsOutOfOrder: number;
  /** 20 ms frames lost and filled by concealment: the jitter buffer's, or the Opus decoder's (PLC). */
  framesConcealed: number;
  /**
   * 20 ms frames the jitter buffer played out at their tick once playout began: received ones (the
   * Opus decoder's concealed and rebuilt ones among them) and those it concealed itself. Of these,
   * framesConcealed were concealment.
   */
  framesPlayed: number;
  /** Lost 20 ms Opus frames rebuilt from the in-band FEC data of the packet after them (RFC 7587 §3.3). */
  framesRecovered: number;
  /** What was received and thrown away unheard, by reason. */
  dropped: RtpDrops;
}

/** Packets received and dropped unheard, by reason. */
export interface RtpDrops {
  /** A payload type the negotiation did not list. */
  unknownPayloadType: number;
  /** From another address than the stream's peer (or before the stream was negotiated). */
  unknownSource: number;
  /** SRTP or SRTCP that did not authenticate (another key, altered, or not SRTP at all). */
  srtpAuthentication: number;
  /** SRTP or SRTCP seen before, or older than the replay window. */
  srtpReplay: number;
  /** Too short or not RTP, or a payload its decoder refused. */
  malformed: number;
  /** 20 ms frames the jitter buffer threw away because it was full (playout fell behind the arrivals). */
  jitterBufferOverflow: number;
}

export const NO_DROPS: Readonly<RtpDrops> = {
  unknownPayloadType: 0,
  unknownSource: 0,
  srtpAuthentication: 0,
  srtpReplay: 0,
  malformed: 0,
  jitterBufferOverflow: 0,
};

/**
 * What a session hands to the one that carries its stream on (on another thread, on the same port):
 * our source keeps its SSRC, sequence numbers and timestamps, so the far end sees one stream.
 */
export interface RtpHandover {
  readonly ssrc: number;
  readonly sequenceNumber: number;
  readonly timestamp: number;
  readonly cname: string;
  readonly config: RtpSessionConfiguration | null;
  readonly rtp: { readonly address: string; readonly port: number; readonly latched: boolean };
  readonly rtcp: { readonly address: string; readonly port: number; readonly latched: boolean };
  readonly lastPacketAgoMs: number | null;
  /** Counters so far, carried on in stats. */
  readonly totals: RtpTotals;
  /** The sequence number of the first packet our source sent, which the remote's reports count from. */
  readonly firstSequenceNumber: number;
  /** The remote's last report about our source. */
  readonly remoteReport: RemoteReport | null;
  /** Where SRTP stands (rollover counters), when it is on. */
  readonly srtp?: { readonly sender: SrtpState; readonly receiver: SrtpState };
}

export interface RtpTotals {
  packetsSent: number;
  octetsSent: number;
  packetsReceived: number;
  packetsLost: number;
  packetsLate: number;
  packetsDuplicate: number;
  packetsOutOfOrder: number;
  framesConcealed: number;
  framesRecovered: number;
  framesPlayed: number;
  /** Our jitter estimates sampled at our reports (see meanJitterMs): their sum and their count. */
  jitterSumMs: number;
  jitterSamples: number;
  dropped: RtpDrops;
}

/** The length of the frames audio moves in, and of the packets we send. */
export const FRAME_MS = 20;

export function remoteRtcpPort(config: RtpSessionConfiguration): number {
  return config.remoteRtcpPort ?? config.remotePort + 1;
}

export function isSending(direction: MediaDirection): boolean {
  return direction === "sendrecv" || direction === "sendonly";
}

export function isReceiving(direction: MediaDirection): boolean {
  return direction === "sendrecv" || direction === "recvonly";
}
