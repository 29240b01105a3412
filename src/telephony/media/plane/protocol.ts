/**
 * The messages between the main thread (SIP signalling, which decides) and a media thread (RTP,
 * mixing, playback, recording, which does). Commands go down; events and replies come up. Audio
 * crosses only where it is made elsewhere: a recorded name coming up, or run-time speech going down.
 */
import type { PromptName } from "../../../domain/prompt.js";
import type { AudioRate } from "../codec/audio-codec.js";
import type { LatenessHistogram } from "../media-clock.js";
import type { MediaErrorCode } from "../media-error.js";
import type {
  AudioCodecName,
  RtpDrops,
  RtpHandover,
  RtpSessionConfiguration,
  RtpSessionStats,
} from "../rtp/rtp-stream.js";

/**
 * The rate of audio that crosses between the threads (a recorded name coming up, speech going down):
 * 16 kHz mono, which a room or a stream at 8 kHz takes down itself.
 */
export const SOUND_SAMPLE_RATE = 16000;

/**
 * Milliseconds on the machine's monotonic clock (CLOCK_MONOTONIC), the clock of the deadlines that
 * cross between the threads: the same on every thread (performance.now() has an origin per thread),
 * and running on while the process is stopped (SIGSTOP), so a deadline passes during the stop.
 * It makes a bigint: read it once per message or tick, not per packet.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** What is played to a stream or a mix; `samples` at SOUND_SAMPLE_RATE. */
export type MediaSound =
  | { readonly prompts: readonly PromptName[] }
  | { readonly tone: "entry" | "exit" }
  | { readonly samples: Int16Array };

/** Commands that expect no answer. */
export type MediaCommand =
  | { readonly type: "configure-stream"; readonly streamId: number; readonly config: RtpSessionConfiguration }
  | { readonly type: "stop-playing"; readonly streamId: number }
  | { readonly type: "stop-recording-voice"; readonly streamId: number }
  | { readonly type: "open-mix"; readonly mixId: number }
  | { readonly type: "join"; readonly streamId: number; readonly mixId: number; readonly muted: boolean }
  | { readonly type: "leave"; readonly streamId: number }
  | { readonly type: "mute"; readonly streamId: number; readonly muted: boolean }
  | { readonly type: "play-mix"; readonly mixId: number; readonly sound: MediaSound }
  | { readonly type: "hold"; readonly mixId: number; readonly onHold: boolean }
  /**
   * The mix's streams, and those that join it later, send no RTP past `until` (monotonicMs()) until
   * told again; Infinity: no limit.
   */
  | { readonly type: "send-until"; readonly mixId: number; readonly until: number }
  /**
   * Each of the two streams sends on what the other receives, packet for packet (one call carried
   * to another, e.g. to a room elsewhere), until either closes. Both must be on the thread.
   */
  | { readonly type: "relay"; readonly streamId: number; readonly peerStreamId: number }
  /** Makes the mix's next tick throw, to prove that a failing room ends alone (only when allowed). */
  | { readonly type: "inject-fault"; readonly mixId: number };

/** Requests: each is answered by one `reply` with its id. */
export type MediaRequest =
  | {
      readonly type: "open-stream";
      readonly streamId: number;
      /** Bind this port (a stream moving here from another thread), else one from the thread's range. */
      readonly port?: number;
      readonly handover?: RtpHandover;
    }
  /**
   * A browser's call: answers its WebRTC offer with an ICE-lite peer on a port of the thread's range,
   * whose RTP the stream's session sends and receives. Such a stream stays on this thread.
   */
  | {
      readonly type: "open-webrtc-stream";
      readonly streamId: number;
      readonly offer: string;
      /** The addresses the browser may reach us at (our host candidates). */
      readonly candidateAddresses: readonly string[];
    }
  /**
   * Closes the stream (RTCP BYE, sockets, port), answering its final counts, taken just before its
   * session closed; null when the thread has no such stream (closed already).
   */
  | { readonly type: "close-stream"; readonly streamId: number }
  /** Stops the stream and closes its sockets, answering what another thread needs to carry it on. */
  | { readonly type: "detach-stream"; readonly streamId: number }
  | { readonly type: "send-digits"; readonly streamId: number; readonly keys: string }
  /** Answered once heard to the end, stopped, or the stream closed. */
  | { readonly type: "play"; readonly streamId: number; readonly sound: MediaSound }
  | { readonly type: "record-voice"; readonly streamId: number; readonly maxMs: number }
  | { readonly type: "close-mix"; readonly mixId: number }
  | { readonly type: "start-recording"; readonly mixId: number; readonly file: string }
  | { readonly type: "pause-recording"; readonly mixId: number }
  | { readonly type: "stats"; readonly resetLateness: boolean };

export type MediaDown = MediaCommand | (MediaRequest & { readonly requestId: number });

/** What each request is answered with. */
export interface MediaReplies {
  "open-stream": { readonly port: number };
  "open-webrtc-stream": { readonly port: number; readonly answer: string };
  "close-stream": StreamStats | null;
  "detach-stream": { readonly port: number; readonly handover: RtpHandover };
  "send-digits": boolean;
  play: undefined;
  /** What the caller said, at SOUND_SAMPLE_RATE. */
  "record-voice": Int16Array;
  "close-mix": undefined;
  "start-recording": undefined;
  "pause-recording": undefined;
  stats: MediaThreadStats;
}

export interface StreamStats extends RtpSessionStats {
  readonly streamId: number;
  /** Received packets that came too late for their playout tick. */
  readonly packetsLate: number;
  readonly packetsDuplicate: number;
  /** Packets that arrived after a later one (reordered), late or not. */
  readonly packetsOutOfOrder: number;
  /** Playout ticks that had no frame and were filled by concealment. */
  readonly framesConcealed: number;
  /** What the stream sends; null before it is negotiated. */
  readonly codec: AudioCodecName | null;
  /** The rate of its audio: 16000 when it sends or receives G.722 or Opus. */
  readonly audioRate: AudioRate;
  /** The rate of the room it is in; null outside one. */
  readonly roomRate: AudioRate | null;
}

/** Packet counts of every stream the thread has had, closed ones included (counters for metrics). */
export interface RtpTotals {
  readonly packetsReceived: number;
  readonly packetsLost: number;
  readonly packetsLate: number;
  readonly framesConcealed: number;
  readonly dropped: RtpDrops;
}

export interface MediaThreadStats {
  readonly ticks: number;
  readonly skippedTicks: number;
  /** Milliseconds each tick ran after its due time, since the last reset (or the last 60 s). */
  readonly lateness: { readonly p50: number; readonly p99: number; readonly max: number };
  /** Every tick's lateness since the thread started. */
  readonly latenessHistogram: LatenessHistogram;
  readonly rtpTotals: RtpTotals;
  readonly mixes: number;
  /** Streams in a mix. */
  readonly legs: number;
  readonly streams: readonly StreamStats[];
  /** RTP/RTCP port pairs of the thread's share of the range bound now. */
  readonly portPairsInUse: number;
}

export type MediaUp =
  | { readonly type: "reply"; readonly requestId: number; readonly ok: true; readonly value: unknown }
  /** A failed request: why by code (media-error.ts), and the cause's words. */
  | {
      readonly type: "reply";
      readonly requestId: number;
      readonly ok: false;
      readonly code: MediaErrorCode;
      readonly message: string;
    }
  | { readonly type: "digit"; readonly streamId: number; readonly key: string }
  | { readonly type: "talking"; readonly streamId: number; readonly talking: boolean }
  /** No RTP or RTCP from the far end for the media timeout while it should be sending. */
  | { readonly type: "media-timeout"; readonly streamId: number }
  /** The mix threw during a tick: it is gone, its streams hear nothing more. */
  | { readonly type: "mix-failed"; readonly mixId: number; readonly reason: string }
  /** The mix's recording could not be written: it stopped (the mix goes on). */
  | { readonly type: "recording-failed"; readonly mixId: number; readonly reason: string }
  /** SRTP from `address`:`port` failed authentication, `count` packets since the last such report. */
  | {
      readonly type: "srtp-authentication-failed";
      readonly streamId: number;
      readonly address: string;
      readonly port: number;
      readonly count: number;
    }
  /** A browser's call ended at its end (DTLS closed, ICE failed): the stream carries nothing more. */
  | {
      readonly type: "peer-closed";
      readonly streamId: number;
      readonly reason: string;
      /** The stream's final counts, taken as it closed. */
      readonly stats: StreamStats;
    }
  /** The stream's playback threw during a tick: it is closed. */
  | { readonly type: "stream-failed"; readonly streamId: number; readonly reason: string };

/** What a media thread is started with. */
export interface MediaThreadOptions {
  readonly bindAddress: string;
  /** The RTP/RTCP ports this thread binds new streams on. */
  readonly rtpPorts: { readonly min: number; readonly max: number };
  /** An answered stream with no packets for this long is reported (0: never). */
  readonly mediaTimeoutMs: number;
  /** The loudest talkers each room mixes at once; undefined: the mixer's default. */
  readonly mixTalkers?: number;
  readonly allowFaultInjection: boolean;
}
