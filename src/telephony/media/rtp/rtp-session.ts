// Long because sending, receiving, relaying and handing over share one socket pair and per-packet state.
/**
 * One call's media stream over RTP/RTCP (RFC 3550) on a pair of UDP sockets: audio in 20 ms frames
 * both ways (G.711, G.722 or Opus out; any of the negotiated formats in, packet by packet), DTMF as
 * RFC 4733 telephone-events, symmetric RTP towards peers behind NAT, and periodic RTCP reports from
 * which call quality is read.
 *
 * The layer above owns the 20 ms clock: it calls `sendFrame` and `readFrame` once per tick, with
 * frames at the session's `audioRate`: 16 kHz when G.722 or Opus is sent or may be received, else
 * 8 kHz. Audio of another rate is converted inside (G.711 packets in a 16 kHz session are upsampled;
 * 16 kHz frames sent as G.711 are downsampled). Received audio waits in a jitter buffer until it is read.
 *
 * Beside it: what a stream is (rtp-stream.ts), decoding and Opus loss recovery (audio-receiver.ts),
 * relaying between codecs (relay-transcoder.ts), DTMF sending (telephone-event-sender.ts), RTCP
 * reports (rtcp-reporter.ts) and the symmetric-RTP latch (symmetric-rtp.ts).
 */

import { randomBytes, randomUUID } from "node:crypto";
import type dgram from "node:dgram";
import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import {
  type AudioEncoder,
  type AudioRate,
  audioRateOf,
  createEncoder,
  type EncoderSpec,
  encoderKey,
  rtpClockRateOf,
} from "../codec/audio-codec.js";
import { opusPacketDuration } from "../codec/opus.js";
import {
  eventOfDtmfKey,
  parseTelephoneEvent,
  type ReceivedDigit,
  type TelephoneEvent,
  type TelephoneEventPacket,
  TelephoneEventReceiver,
  writeTelephoneEvent,
} from "../dtmf/rfc4733.js";
import { FrameAssembler } from "../frame-assembler.js";
import { JitterBuffer, type JitterBufferOptions, type PlayoutKind } from "../jitter-buffer.js";
import { MediaError } from "../media-error.js";
import { PrefixViews } from "../prefix-views.js";
import { createResampler, type Resampler } from "../resampler.js";
import { AudioReceiver, MAX_DECODED_SAMPLES } from "./audio-receiver.js";
import type { RtpPortAllocator } from "./port-allocator.js";
import { RelayTranscoder } from "./relay-transcoder.js";
import { parseRtcpCompound, writeGoodbye } from "./rtcp-packet.js";
import { type RemoteReport, RtcpReporter } from "./rtcp-reporter.js";
import {
  parseRtpPacket,
  RTP_FIXED_HEADER_LENGTH,
  type RtpHeader,
  type RtpPacket,
  writeRtpPacket,
} from "./rtp-packet.js";
import {
  type AudioCodecName,
  isReceiving,
  isSending,
  NO_DROPS,
  type RtpDrops,
  type RtpHandover,
  type RtpSessionConfiguration,
  type RtpSessionStats,
  type RtpTotals,
  remoteRtcpPort,
} from "./rtp-stream.js";
import { ReceptionStatistics } from "./sequence.js";
import { SrtpReceiver, type SrtpRefusal, SrtpSender } from "./srtp.js";
import { SRTP_MAX_RTP_OVERHEAD } from "./srtp-suites.js";
import { RelatchGuard, RemoteEndpoint } from "./symmetric-rtp.js";
import { type SendDigitsOptions, TelephoneEventSender } from "./telephone-event-sender.js";

/**
 * A port a session sends and receives datagrams on: a UDP socket, or another transport that carries
 * RTP and RTCP for it (a WebRTC peer's DTLS-SRTP).
 */
export interface DatagramPort {
  send(
    buffer: Buffer,
    offset: number,
    length: number,
    port: number,
    address: string,
    sent?: () => void,
  ): void;
  on(event: "message", listener: (datagram: Buffer, source: dgram.RemoteInfo) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  close(closed?: () => void): void;
}

/** The RTP and RTCP ports of a session that another transport carries (not bound from the allocator). */
export interface CarriedPorts {
  readonly rtp: DatagramPort;
  readonly rtcp: DatagramPort;
  /** Told once the session has closed both ports. */
  released(): void;
}

export interface RtpSessionOptions {
  allocator: RtpPortAllocator;
  bindAddress: string;
  /** Bind this port pair instead of the allocator's next free one (a stream carried on from elsewhere). */
  port?: number;
  /** Send and receive through these instead of a UDP pair (the session cannot be handed over then). */
  carried?: CarriedPorts;
  /** Carries on a stream another session sent and received until now. */
  handover?: RtpHandover;
  /** Monotonic milliseconds; default performance.now. */
  clock?: () => number;
  /** Mean interval between RTCP reports, default 5000 ms; each is randomised to 0.5–1.5 times it (§6.2). */
  rtcpIntervalMs?: number;
  /** SDES CNAME, default a random identifier as RFC 7022 recommends. */
  cname?: string;
  /** The jitter buffer's delay and capacity; its frames are the session's (audioRate / 50 samples). */
  jitterBuffer?: Omit<JitterBufferOptions, "samplesPerFrame">;
}

/** SRTP that failed authentication since the last such report (see SRTP_WARNING_INTERVAL_MS). */
export interface SrtpFailures {
  /** Where the last of them came from. */
  readonly address: string;
  readonly port: number;
  /** How many since the last report. */
  readonly count: number;
}

export interface RtpSessionEvents {
  /** A DTMF key pressed at the remote end, once per key press. */
  digit: [digit: ReceivedDigit];
  /** The remote sent RTCP BYE (§6.6). */
  bye: [reason: string | null];
  /** A socket reported an error; the session keeps running. */
  socketError: [error: Error];
  /**
   * SRTP or SRTCP failed authentication: the first failure at once, then at most one report per
   * SRTP_WARNING_INTERVAL_MS counting those between, so that a flood cannot flood the log.
   */
  srtpAuthenticationFailed: [failures: SrtpFailures];
}

/**
 * Send buffers used in turn. The allocator's sockets hand a datagram to the kernel during the send
 * call, but one that cannot leave at once (a full socket buffer) is queued with a reference to its
 * buffer, so a buffer is only rewritten several packets later.
 */
const SEND_BUFFER_COUNT = 8;
const RTCP_BUFFER_LENGTH = 1500;
const DEFAULT_RTCP_INTERVAL_MS = 5000;
/** The largest payload one datagram carries (a 1500-byte MTU less IP, UDP and RTP headers). */
const MAX_PAYLOAD_BYTES = 1500 - 20 - 8 - RTP_FIXED_HEADER_LENGTH;
/** At most one report of SRTP authentication failures per this many ms. */
const SRTP_WARNING_INTERVAL_MS = 10_000;
/** What a received payload type carries (`payloadKinds`): nothing known, a telephone-event, or AUDIO_KINDS[kind - PAYLOAD_AUDIO]. */
const PAYLOAD_UNKNOWN = 0;
const PAYLOAD_TELEPHONE_EVENT = 1;
const PAYLOAD_AUDIO = 2;
const AUDIO_KINDS: readonly AudioCodecName[] = ["PCMU", "PCMA", "G722", "opus"];
/** The header alone, for a packet whose payload is written in place behind it. */
const NO_PAYLOAD = new Uint8Array(0);
/** How relayed packets go out (see relayTo): as they came, or decoded and encoded again in our codec. */
const RELAY_NONE = 0;
const RELAY_PASS_THROUGH = 1;
const RELAY_TRANSCODE = 2;

/** The session's rate: wideband when anything sent or received is (G.722, Opus), else narrowband. */
function sessionAudioRate(config: RtpSessionConfiguration): AudioRate {
  const wide = (codec: AudioCodecName) => audioRateOf(codec) === 16000;
  return wide(config.codec) || (config.receiveFormats ?? []).some((format) => wide(format.codec))
    ? 16000
    : 8000;
}

/** How many RTP ticks a payload of `codec` lasts: G.711 one a byte, G.722 one a byte (two 16 kHz samples), Opus by its TOC. */
function payloadTicks(codec: AudioCodecName, payload: Uint8Array): number {
  return codec === "opus" ? opusPacketDuration(payload) : payload.length;
}

function notMovable(): MediaError {
  return new MediaError("MEDIA_ERR_NOT_MOVABLE", "a stream another transport carries stays on its thread");
}

function randomUint32(): number {
  return randomBytes(4).readUInt32BE(0);
}

const MAX_PORT = 65_535;

export class RtpSession extends EventEmitter<RtpSessionEvents> {
  /**
   * Told of each received audio packet's samples as it arrives, at the session's `audioRate`, before
   * the jitter buffer delays, reorders or trims anything (for in-band tone detection); Opus audio
   * rebuilt or concealed before a packet comes first. The samples are the session's: read `count` of
   * them before returning.
   */
  onDecodedAudio: ((samples: Int16Array, count: number, sampleRate: AudioRate) => void) | undefined;
  /** Our synchronization source, random (§8.1). */
  readonly ssrc: number;
  private readonly rtp: DatagramPort;
  private readonly rtcp: DatagramPort;
  private readonly port: number;
  /** Gives the port pair back: to the allocator, or to the transport that carries the session. */
  private readonly release: () => void;
  private readonly carried: boolean;
  private readonly clock: () => number;
  private readonly rtcpIntervalMs: number;
  private readonly cname: string;
  private readonly jitterBufferOptions: Omit<JitterBufferOptions, "samplesPerFrame">;
  private config: RtpSessionConfiguration | null = null;
  /** The PCM rate of the frames read and sent; 8000 until a configuration says otherwise. */
  private rate: AudioRate = 8000;
  /** What each received payload type (0-127) carries, from the configuration: a PAYLOAD_ constant. */
  private readonly payloadKinds = new Uint8Array(128);
  private closing: Promise<void> | null = null;
  /** Packets dropped unheard so far, by reason (the jitter buffer's overflow is counted there). */
  private readonly drops: RtpDrops = { ...NO_DROPS };
  /** SRTP authentication failures not reported yet, and when the last report went. */
  private srtpFailuresUnreported = 0;
  private srtpFailuresReportedAt = Number.NEGATIVE_INFINITY;

  // Where we send; replaced by the packets' source address once latched (symmetric RTP, RFC 4961).
  private readonly rtpRemote = new RemoteEndpoint();
  private readonly relatch = new RelatchGuard();
  private readonly rtcpRemote = new RemoteEndpoint();

  // Sending (§5.1: random initial sequence number and timestamp).
  private readonly header: RtpHeader = {
    marker: false,
    payloadType: 0,
    sequenceNumber: 0,
    timestamp: 0,
    ssrc: 0,
    csrcs: [],
  };
  private sequenceNumber = randomUint32() & 0xffff;
  /** The sequence number our source began with (on whichever session it began), for the remote's reports. */
  private readonly firstSequenceNumber: number;
  private timestamp = randomUint32();
  /** When `timestamp` last advanced, to extrapolate the SR's RTP timestamp. */
  private timestampAdvancedAt: number;
  /** §5.1: the marker bit is set on the first packet of a talkspurt, here the first after (re)starting to send. */
  private markNextFrame = true;
  /** The clock's time past which no RTP goes out (see sendFor). */
  private sendDeadline = Number.POSITIVE_INFINITY;
  private readonly sendBuffers = Array.from({ length: SEND_BUFFER_COUNT }, () =>
    Buffer.alloc(RTP_FIXED_HEADER_LENGTH + MAX_PAYLOAD_BYTES + SRTP_MAX_RTP_OVERHEAD),
  );
  /** Where each send buffer's payload goes, written in place (an encoder's output, a copy). */
  private readonly sendPayloads = this.sendBuffers.map((buffer) =>
    buffer.subarray(RTP_FIXED_HEADER_LENGTH, RTP_FIXED_HEADER_LENGTH + MAX_PAYLOAD_BYTES),
  );
  // SRTP, when negotiated: what protects what we send and opens what we receive.
  private srtpSender: SrtpSender | null = null;
  private srtpReceiver: SrtpReceiver | null = null;
  private nextSendBuffer = 0;
  /** The encoder of what we send, made at configure; null before. */
  private encoder: AudioEncoder | null = null;
  private sendSpec: EncoderSpec | null = null;
  private sendKey = "";
  /** Our RTP clock (the send codec's) and its ticks per 20 ms. */
  private sendClockRate = 8000;
  private sendTicksPerFrame = 160;
  /** A 16 kHz frame sent in G.711: converted to 8 kHz first. */
  private sendDownsampler: Resampler | null = null;
  private readonly narrowFrame = new Int16Array(160);
  private packetsSent = 0;
  private octetsSent = 0;
  private sentSinceReport = false;

  // DTMF sending, one telephone-event packet per 20 ms tick.
  private readonly dtmf = new TelephoneEventSender({
    timestamp: () => this.timestamp,
    clockRate: () => this.sendClockRate,
    sendEventPacket: (packet) => this.sendEventPacket(packet),
  });

  // Relaying: the session whose received packets this one sends on, and how their sequence numbers
  // and timestamps map onto ours (the far end sees one stream from us, whoever's audio it carries).
  /** Where this session's received packets go, instead of its own playout; null when played out here. */
  private relayPeer: RtpSession | null = null;
  /** How the relayed source's packets went out so far: a RELAY_ constant. */
  private relayMode = RELAY_NONE;
  /** The relayed source our offsets or timeline were taken for. */
  private relayedSsrc: number | null = null;
  private relaySequenceOffset = 0;
  private relayTimestampOffset = 0;
  /** Relayed audio of another codec, into ours; made on first use after the encoder changed. */
  private relayTranscoder: RelayTranscoder | null = null;
  private readonly relayedEvent: TelephoneEvent = { event: 0, end: false, volume: 0, duration: 0 };

  // Receiving, from one remote source at a time.
  private readonly audio = new AudioReceiver((timestamp, samples, count, sampleRate, clockRate) =>
    this.decodedAudio(timestamp, samples, count, sampleRate, clockRate),
  );
  /** The RTP clock of the last audio packet received: that of the telephone-events among them too. */
  private receiveClockRate = 8000;
  /** Narrowband audio received in a wideband session, converted. */
  private playoutUpsampler: Resampler | null = null;
  private readonly narrowViews = new PrefixViews(new Int16Array(MAX_DECODED_SAMPLES));
  private readonly wideViews = new PrefixViews(new Int16Array(2 * MAX_DECODED_SAMPLES));
  private assembler: FrameAssembler;
  private remoteSsrc: number | null = null;
  private reception: ReceptionStatistics | null = null;
  private jitterBuffer: JitterBuffer;
  private eventReceiver: TelephoneEventReceiver;
  /**
   * Counts of earlier remote sources, jitter buffers and sessions (a handover), so stats survive an
   * SSRC change or a move.
   */
  private readonly earlier: RtpTotals = {
    packetsSent: 0,
    octetsSent: 0,
    packetsReceived: 0,
    packetsLost: 0,
    packetsLate: 0,
    packetsDuplicate: 0,
    packetsOutOfOrder: 0,
    framesConcealed: 0,
    framesRecovered: 0,
    framesPlayed: 0,
    jitterSumMs: 0,
    jitterSamples: 0,
    dropped: { ...NO_DROPS },
  };
  /** Our jitter estimate sampled at each of our reports, for its mean over the stream: sum and count. */
  private jitterSumMs = 0;
  private jitterSamples = 0;
  private lastPacketTime: number | null = null;

  // RTCP.
  private rtcpTimer: NodeJS.Timeout | null = null;
  private readonly rtcpBuffer = Buffer.alloc(RTCP_BUFFER_LENGTH);
  private readonly reporter: RtcpReporter;

  /** Binds an RTP/RTCP port pair from the allocator. */
  static async open(options: RtpSessionOptions): Promise<RtpSession> {
    const carried = options.carried;
    if (carried !== undefined)
      return new RtpSession({ rtp: carried.rtp, rtcp: carried.rtcp, port: 0 }, options, () =>
        carried.released(),
      );
    const pair =
      options.port === undefined
        ? await options.allocator.bindPair(options.bindAddress)
        : await options.allocator.bindExactPair(options.bindAddress, options.port);
    return new RtpSession(pair, options, () => options.allocator.release(pair.port));
  }

  private constructor(
    pair: { rtp: DatagramPort; rtcp: DatagramPort; port: number },
    options: RtpSessionOptions,
    release: () => void,
  ) {
    super();
    this.rtp = pair.rtp;
    this.rtcp = pair.rtcp;
    this.port = pair.port;
    this.release = release;
    this.carried = options.carried !== undefined;
    this.clock = options.clock ?? (() => performance.now());
    this.rtcpIntervalMs = options.rtcpIntervalMs ?? DEFAULT_RTCP_INTERVAL_MS;
    const handover = options.handover;
    this.ssrc = handover?.ssrc ?? randomUint32();
    this.header.ssrc = this.ssrc;
    this.cname = handover?.cname ?? options.cname ?? randomUUID();
    this.firstSequenceNumber = handover?.firstSequenceNumber ?? this.sequenceNumber;
    this.reporter = new RtcpReporter(
      this.ssrc,
      this.cname,
      (reason) => this.emit("bye", reason),
      handover?.remoteReport ?? null,
    );
    this.jitterBufferOptions = options.jitterBuffer ?? {};
    this.jitterBuffer = this.newJitterBuffer();
    this.assembler = this.newAssembler();
    this.eventReceiver = this.newEventReceiver();
    this.timestampAdvancedAt = this.clock();
    if (handover !== undefined) this.carryOn(handover);
    this.rtp.on("message", (datagram, source) => this.receiveRtp(datagram, source));
    this.rtcp.on("message", (datagram, source) => this.receiveRtcp(datagram, source));
    const onSocketError = (error: Error) => this.emit("socketError", error);
    this.rtp.on("error", onSocketError);
    this.rtcp.on("error", onSocketError);
  }

  /** Whether it can be handed over to another thread: not when another transport carries it. */
  get movable(): boolean {
    return !this.carried;
  }

  /** The local RTP port; RTCP is on the port above. */
  get localPort(): number {
    return this.port;
  }

  /** Monotonic time (the session's clock, ms) of the last RTP or RTCP packet from the remote; null before one. */
  get lastPacketAt(): number | null {
    return this.lastPacketTime;
  }

  /** The PCM rate of the frames `readFrame` gives and `sendFrame` takes (audioRate / 50 samples each); 8000 before configure. */
  get audioRate(): AudioRate {
    return this.rate;
  }

  /** What an encoder of the frames we send is made from (payloads for `sendEncoded`); null before configure. */
  get encoderSpec(): EncoderSpec | null {
    return this.sendSpec;
  }

  /**
   * Sets or changes (re-INVITE, hold) what is negotiated. A changed remote address undoes the
   * symmetric-RTP latch; RTCP reports start with the first call.
   */
  configure(config: RtpSessionConfiguration): void {
    if (this.closing !== null) return;
    const previous = this.config;
    const rtcpPort = remoteRtcpPort(config);
    if (
      previous === null ||
      previous.remoteAddress !== config.remoteAddress ||
      previous.remotePort !== config.remotePort
    ) {
      this.rtpRemote.expect(config.remoteAddress, config.remotePort);
    }
    if (
      previous === null ||
      previous.remoteAddress !== config.remoteAddress ||
      remoteRtcpPort(previous) !== rtcpPort
    ) {
      this.rtcpRemote.expect(config.remoteAddress, rtcpPort);
    }
    if (previous === null || !isSending(previous.direction)) this.markNextFrame = true;
    // New keys (a new offer/answer) make new contexts; the same keys keep their rollover counters.
    if (config.srtp?.send.inline !== previous?.srtp?.send.inline)
      this.srtpSender = config.srtp === undefined ? null : new SrtpSender(config.srtp.send);
    if (config.srtp?.receive.inline !== previous?.srtp?.receive.inline)
      this.srtpReceiver = config.srtp === undefined ? null : new SrtpReceiver(config.srtp.receive);
    if (previous !== null && previous.payloadType !== config.payloadType) this.markNextFrame = true;
    this.config = { ...config };
    const kinds = this.payloadKinds;
    kinds.fill(PAYLOAD_UNKNOWN);
    for (const payloadType of config.receiveTelephoneEventPayloadTypes ?? [])
      kinds[payloadType & 0x7f] = PAYLOAD_TELEPHONE_EVENT;
    if (config.telephoneEventPayloadType !== undefined)
      kinds[config.telephoneEventPayloadType & 0x7f] = PAYLOAD_TELEPHONE_EVENT;
    const received = [...(config.receiveFormats ?? []), config];
    for (const format of received)
      kinds[format.payloadType & 0x7f] = PAYLOAD_AUDIO + AUDIO_KINDS.indexOf(format.codec);
    this.audio.prepare(received.map((format) => format.codec));
    const rate = sessionAudioRate(config);
    if (rate !== this.rate) this.changeRate(rate);
    this.configureSending(config);
    if (this.rtcpTimer === null) this.scheduleReport();
  }

  /** Frames of another length from now on: playout starts afresh at the new rate. */
  private changeRate(rate: AudioRate): void {
    this.rate = rate;
    this.foldPlayoutStats();
    this.jitterBuffer = this.newJitterBuffer();
    this.assembler = this.newAssembler();
    this.playoutUpsampler = rate === 16000 ? createResampler(8000, 16000) : null;
  }

  /** An encoder for what we now send (kept when the settings are the same), and our RTP clock. */
  private configureSending(config: RtpSessionConfiguration): void {
    const spec: EncoderSpec =
      config.codec === "opus" && config.opus !== undefined
        ? { codec: config.codec, opus: config.opus }
        : { codec: config.codec };
    const key = encoderKey(spec);
    if (key !== this.sendKey || this.encoder === null) {
      // Gone before the new one is made: should making it throw, nothing encodes with a disposed one.
      this.encoder?.dispose();
      this.encoder = null;
      this.encoder = createEncoder(spec);
      this.sendSpec = spec;
      this.sendKey = key;
      this.relayTranscoder = null;
      this.relayMode = RELAY_NONE;
    }
    this.sendClockRate = rtpClockRateOf(config.codec);
    this.sendTicksPerFrame = this.sendClockRate / 50;
    const encoderRate = this.encoder.sampleRate;
    if (encoderRate === this.rate) this.sendDownsampler = null;
    else if (this.sendDownsampler === null) this.sendDownsampler = createResampler(this.rate, encoderRate);
  }

  /**
   * Sends one 20 ms frame (audioRate / 50 samples) in the negotiated codec. The timestamp advances
   * even when the direction forbids sending; while a DTMF event is being sent the frame is dropped
   * instead (RFC 4733 §2.5.1.1), the event's packets advancing the timestamp.
   */
  sendFrame(frame: Int16Array): void {
    if (this.closing !== null || this.dtmf.sendingEvent) return;
    if (frame.length !== this.rate / 50) {
      throw new RangeError(
        `a ${this.rate} Hz session sends frames of ${this.rate / 50} samples, not ${frame.length}`,
      );
    }
    const config = this.config;
    const encoder = this.encoder;
    if (config !== null && encoder !== null && isSending(config.direction) && this.mayTransmit()) {
      let input = frame;
      if (this.sendDownsampler !== null) {
        this.sendDownsampler.process(frame, this.narrowFrame);
        input = this.narrowFrame;
      }
      const length = encoder.encode(input, this.payloadArea());
      this.sendRtp(config.payloadType, this.timestamp, length, this.markNextFrame);
      this.markNextFrame = false;
    }
    this.advanceTimestamp(this.sendTicksPerFrame);
  }

  /**
   * Sends one 20 ms payload made by an encoder of `encoderSpec` (one encoding shared by several
   * sessions), the first `length` bytes of `payload`, as `sendFrame` would send the frame it was
   * made from: dropped while a DTMF event is being sent, not sent when the direction forbids, the
   * timestamp advancing 20 ms of our clock.
   */
  sendEncoded(payload: Uint8Array, length = payload.length): void {
    if (this.closing !== null || this.dtmf.sendingEvent) return;
    if (length > MAX_PAYLOAD_BYTES || length > payload.length)
      throw new RangeError(`a payload of ${length} bytes does not fit a datagram`);
    const config = this.config;
    if (config !== null && isSending(config.direction) && this.mayTransmit()) {
      const area = this.payloadArea();
      for (let i = 0; i < length; i++) area[i] = payload[i] as number;
      this.sendRtp(config.payloadType, this.timestamp, length, this.markNextFrame);
      this.markNextFrame = false;
    }
    this.advanceTimestamp(this.sendTicksPerFrame);
  }

  /**
   * Queues DTMF keys ("0"–"9", "*", "#", "A"–"D"; "," waits one second) as RFC 4733 events, one
   * packet every 20 ms. Resolves true once the last one is sent, false if the session closed first.
   * Throws a RangeError for a character that is not a key, and an Error when no telephone-event
   * payload type is configured.
   */
  sendDigits(keys: string, options: SendDigitsOptions = {}): Promise<boolean> {
    for (const key of keys) if (key !== ",") eventOfDtmfKey(key);
    if (this.closing !== null) return Promise.resolve(false);
    if (this.config?.telephoneEventPayloadType === undefined) {
      throw new Error("cannot send DTMF: no telephone-event payload type is configured");
    }
    return this.dtmf.send(keys, options);
  }

  /**
   * RTP goes out for at most `ms` from now (Infinity: no limit), then none at all until told again:
   * no frames, payloads, telephone-events or relayed packets, their timestamps advancing all the same,
   * so that the far end takes the gap for silence and the first frame after it starts a talkspurt.
   * Checked as each packet goes (whatever sends it: a tick, the DTMF timer, a relay), on the clock.
   * RTCP goes on.
   */
  sendFor(ms: number): void {
    this.sendDeadline = this.clock() + ms;
  }

  /** Whether RTP may go out now (see sendFor): the clock is read only while there is a deadline. */
  private mayTransmit(): boolean {
    if (this.sendDeadline === Number.POSITIVE_INFINITY || this.clock() < this.sendDeadline) return true;
    this.markNextFrame = true;
    return false;
  }

  /**
   * Relays: every packet this session receives from now on is sent out of `peer` as `peer`'s own
   * stream (its SSRC and payload types), instead of being played out here. A packet in `peer`'s own
   * codec goes as it came, its sequence numbers and timestamps carried on; one in another codec is
   * decoded here and encoded again there in 20 ms frames, stamped on `peer`'s clock. Keys and talking
   * are then the far end's business. null stops it.
   */
  relayTo(peer: RtpSession | null): void {
    this.relayPeer = peer;
    if (peer !== null) peer.relayMode = RELAY_NONE;
  }

  /** Writes the next 20 ms of received audio (audioRate / 50 samples) into `out`. */
  readFrame(out: Int16Array): PlayoutKind {
    if (out.length !== this.rate / 50) {
      throw new RangeError(
        `a ${this.rate} Hz session reads frames of ${this.rate / 50} samples, not ${out.length}`,
      );
    }
    return this.jitterBuffer.pull(out);
  }

  stats(): RtpSessionStats {
    const totals = this.totals();
    const remote = this.reporter.remote;
    // The jitter now counts as one more sample of its mean, so that a stream shorter than a report
    // interval has one.
    const reception = this.reception;
    const jitterNow = reception !== null && reception.received > 0 ? reception.jitterMs : null;
    const jitterSamples = totals.jitterSamples + (jitterNow === null ? 0 : 1);
    return {
      packetsSent: totals.packetsSent,
      packetsReceived: totals.packetsReceived,
      packetsLost: totals.packetsLost,
      fractionLost: this.reporter.lastFractionLost,
      jitterMs: reception?.jitterMs ?? 0,
      meanJitterMs: jitterSamples === 0 ? null : (totals.jitterSumMs + (jitterNow ?? 0)) / jitterSamples,
      remoteFractionLost: remote?.fractionLost ?? null,
      remotePacketsLost: remote?.packetsLost ?? null,
      remoteLossShare: remote === null ? null : this.remoteLossShare(remote),
      remoteJitterMs: remote?.jitterMs ?? null,
      roundTripMs: remote?.roundTripMs ?? null,
      packetsLate: totals.packetsLate,
      packetsDuplicate: totals.packetsDuplicate,
      packetsOutOfOrder: totals.packetsOutOfOrder,
      framesConcealed: totals.framesConcealed,
      framesRecovered: totals.framesRecovered,
      framesPlayed: totals.framesPlayed,
      dropped: totals.dropped,
    };
  }

  /** Of our packets the remote expected by its last report (counted from our first), the share it lost. */
  private remoteLossShare(remote: RemoteReport): number | null {
    // The extended highest sequence counts wraps from the remote's first packet, which was our first.
    const expected = remote.extendedHighestSequence - this.firstSequenceNumber + 1;
    if (expected <= 0) return null;
    return Math.min(1, Math.max(0, remote.packetsLost / expected));
  }

  /**
   * Stops the session without a word to the far end (no RTCP BYE: the stream goes on elsewhere),
   * closes the sockets, and returns what the session carrying it on needs. The port stays taken in
   * this allocator until `release`d by whoever ends the stream.
   */
  async handOver(): Promise<RtpHandover> {
    if (!this.movable) throw notMovable();
    const handover: RtpHandover = {
      ssrc: this.ssrc,
      sequenceNumber: this.sequenceNumber,
      timestamp: this.timestamp,
      cname: this.cname,
      config: this.config,
      rtp: this.rtpRemote.snapshot(),
      rtcp: this.rtcpRemote.snapshot(),
      lastPacketAgoMs: this.lastPacketTime === null ? null : this.clock() - this.lastPacketTime,
      totals: this.totals(),
      firstSequenceNumber: this.firstSequenceNumber,
      remoteReport: this.reporter.remote,
      srtp:
        this.srtpSender === null || this.srtpReceiver === null
          ? undefined
          : { sender: this.srtpSender.state, receiver: this.srtpReceiver.state },
    };
    this.closing = new Promise((resolve) => {
      if (this.rtcpTimer !== null) clearTimeout(this.rtcpTimer);
      this.dtmf.stop();
      this.disposeCodecs();
      let open = 2;
      const closed = () => {
        if (--open === 0) resolve();
      };
      this.rtp.close(closed);
      this.rtcp.close(closed);
    });
    await this.closing;
    this.release();
    return handover;
  }

  private carryOn(handover: RtpHandover): void {
    this.sequenceNumber = handover.sequenceNumber;
    this.timestamp = handover.timestamp;
    Object.assign(this.earlier, handover.totals, { dropped: { ...handover.totals.dropped } });
    if (handover.lastPacketAgoMs !== null) this.lastPacketTime = this.clock() - handover.lastPacketAgoMs;
    if (handover.config === null) return;
    this.configure(handover.config);
    const srtp = handover.config.srtp;
    if (srtp !== undefined && handover.srtp !== undefined) {
      this.srtpSender = new SrtpSender(srtp.send, handover.srtp.sender);
      this.srtpReceiver = new SrtpReceiver(srtp.receive, handover.srtp.receiver);
    }
    // The stream goes on: no new talkspurt for the far end.
    this.markNextFrame = false;
    this.rtpRemote.restore(handover.rtp);
    this.rtcpRemote.restore(handover.rtcp);
  }

  private totals(): RtpTotals {
    const reception = this.reception;
    const earlier = this.earlier;
    const playout = this.jitterBuffer.stats;
    const decoding = this.audio.stats;
    return {
      packetsSent: earlier.packetsSent + this.packetsSent,
      octetsSent: earlier.octetsSent + this.octetsSent,
      packetsReceived: earlier.packetsReceived + (reception?.received ?? 0),
      packetsLost: earlier.packetsLost + (reception?.lost ?? 0),
      packetsLate: earlier.packetsLate + playout.late + decoding.late,
      packetsDuplicate: earlier.packetsDuplicate + playout.duplicate + decoding.duplicate,
      packetsOutOfOrder: earlier.packetsOutOfOrder + (reception?.misordered ?? 0),
      framesConcealed: earlier.framesConcealed + playout.concealed + decoding.concealedFrames,
      framesRecovered: earlier.framesRecovered + decoding.recoveredFrames,
      framesPlayed: earlier.framesPlayed + playout.played + playout.concealed,
      jitterSumMs: earlier.jitterSumMs + this.jitterSumMs,
      jitterSamples: earlier.jitterSamples + this.jitterSamples,
      dropped: {
        unknownPayloadType: earlier.dropped.unknownPayloadType + this.drops.unknownPayloadType,
        unknownSource: earlier.dropped.unknownSource + this.drops.unknownSource,
        srtpAuthentication: earlier.dropped.srtpAuthentication + this.drops.srtpAuthentication,
        srtpReplay: earlier.dropped.srtpReplay + this.drops.srtpReplay,
        malformed: earlier.dropped.malformed + this.drops.malformed,
        jitterBufferOverflow: earlier.dropped.jitterBufferOverflow + playout.trimmed,
      },
    };
  }

  /** Stops sending, says BYE (§6.6) when configured, closes the sockets and frees the port; idempotent. */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.closing = new Promise((resolve) => {
      if (this.rtcpTimer !== null) clearTimeout(this.rtcpTimer);
      this.dtmf.stop();
      this.disposeCodecs();
      const finish = () => {
        this.rtp.close();
        this.rtcp.close();
        this.release();
        resolve();
      };
      if (this.config === null) {
        finish();
        return;
      }
      // §6.1: BYE goes in a compound packet behind a report; its own buffer, as a report may be in flight.
      const buffer = Buffer.alloc(RTCP_BUFFER_LENGTH);
      const reportLength = this.writeReport(buffer);
      const length = writeGoodbye({ type: "BYE", ssrcs: [this.ssrc], reason: null }, buffer, reportLength);
      this.sendRtcp(buffer, length, finish);
    });
    return this.closing;
  }

  /** Frees the encoder and decoders (libopus's states); the session sends and receives nothing more. */
  private disposeCodecs(): void {
    this.encoder?.dispose();
    this.encoder = null;
    this.audio.dispose();
  }

  private newEventReceiver(): TelephoneEventReceiver {
    return new TelephoneEventReceiver((digit) => this.emit("digit", digit));
  }

  private newJitterBuffer(): JitterBuffer {
    return new JitterBuffer({ ...this.jitterBufferOptions, samplesPerFrame: this.rate / 50 });
  }

  private newAssembler(): FrameAssembler {
    return new FrameAssembler(
      (frameIndex, frame) => this.jitterBuffer.push(frameIndex, frame),
      this.rate / 50,
      this.rate,
    );
  }

  /** Adds the playout counts to the earlier ones, before the jitter buffer is replaced. */
  private foldPlayoutStats(): void {
    const earlier = this.earlier;
    const playout = this.jitterBuffer.stats;
    earlier.packetsLate += playout.late;
    earlier.packetsDuplicate += playout.duplicate;
    earlier.framesConcealed += playout.concealed;
    earlier.framesPlayed += playout.played + playout.concealed;
    earlier.dropped.jitterBufferOverflow += playout.trimmed;
  }

  private advanceTimestamp(ticks: number): void {
    this.timestampAt((this.timestamp + ticks) >>> 0);
  }

  /** Our timestamp is now `timestamp` (after relayed audio, whose timestamps are the source's carried on). */
  private timestampAt(timestamp: number): void {
    this.timestamp = timestamp;
    this.timestampAdvancedAt = this.clock();
  }

  /** Where the next packet's payload is to be written: behind the header in the next send buffer. */
  private payloadArea(): Uint8Array {
    return this.sendPayloads[this.nextSendBuffer] as Uint8Array;
  }

  /** Sends the packet whose payload, `payloadLength` octets, was written to `payloadArea()`. */
  private sendRtp(
    payloadType: number,
    timestamp: number,
    payloadLength: number,
    marker: boolean,
    sequenceNumber = this.sequenceNumber,
  ): void {
    const header = this.header;
    header.marker = marker;
    header.payloadType = payloadType;
    header.sequenceNumber = sequenceNumber;
    header.timestamp = timestamp;
    this.sequenceNumber = (sequenceNumber + 1) & 0xffff;
    const buffer = this.sendBuffers[this.nextSendBuffer] as Buffer;
    this.nextSendBuffer = (this.nextSendBuffer + 1) % SEND_BUFFER_COUNT;
    const plainLength = writeRtpPacket(header, NO_PAYLOAD, buffer) + payloadLength;
    const length = this.srtpSender === null ? plainLength : this.srtpSender.protectRtp(buffer, plainLength);
    this.rtp.send(buffer, 0, length, this.rtpRemote.port, this.rtpRemote.address);
    this.packetsSent++;
    this.octetsSent += payloadLength;
    this.sentSinceReport = true;
  }

  /** Sends one telephone-event packet when the stream may send; the timestamp advances one tick either way. */
  private sendEventPacket(packet: TelephoneEventPacket): void {
    const config = this.config;
    if (
      config?.telephoneEventPayloadType !== undefined &&
      isSending(config.direction) &&
      this.mayTransmit()
    ) {
      this.payloadArea().set(packet.payload);
      this.sendRtp(config.telephoneEventPayloadType, packet.timestamp, packet.payload.length, packet.marker);
    }
    this.advanceTimestamp(this.sendTicksPerFrame);
  }

  private receiveRtp(received: Buffer, source: dgram.RemoteInfo): void {
    if (this.closing !== null) return;
    const config = this.config;
    if (config === null) {
      // Nobody's stream yet: a late packet of the port's last call, or a stranger.
      this.drops.unknownSource++;
      return;
    }
    // Under SRTP anything that does not authenticate (plain RTP, a stranger, a replay) is dropped
    // before it can latch, be heard or be counted as received.
    const datagram = this.srtpReceiver === null ? received : this.srtpReceiver.unprotectRtp(received);
    if (typeof datagram === "string") {
      this.refusedSrtp(datagram, source);
      return;
    }
    const packet = parseRtpPacket(datagram);
    if (packet === null) {
      this.drops.malformed++;
      return;
    }
    const kind = this.payloadKinds[packet.payloadType] as number;
    if (kind === PAYLOAD_UNKNOWN) {
      this.drops.unknownPayloadType++;
      return;
    }
    const codec =
      kind === PAYLOAD_TELEPHONE_EVENT ? null : (AUDIO_KINDS[kind - PAYLOAD_AUDIO] as AudioCodecName);
    const now = this.clock();
    if (!this.rtpRemote.latched) {
      // Symmetric RTP (RFC 4961): answer where the first valid packet came from.
      this.rtpRemote.latch(source);
    } else if (!this.rtpRemote.isFrom(source)) {
      // A phone that changed networks? Under SRTP the packet authenticated, so yes.
      if (
        this.srtpReceiver === null &&
        !this.relatch.allows(
          source,
          packet.ssrc,
          packet.sequenceNumber,
          this.remoteSsrc,
          now - (this.lastPacketTime ?? Number.NEGATIVE_INFINITY),
        )
      ) {
        this.drops.unknownSource++;
        return;
      }
      this.rtpRemote.latch(source);
      this.relatch.reset();
    }
    this.lastPacketTime = now;
    if (packet.ssrc !== this.remoteSsrc || this.reception === null)
      this.startRemoteSource(packet.ssrc, packet.sequenceNumber);
    if (codec !== null) this.receiveClockRate = rtpClockRateOf(codec);
    // Event packets all carry their event's start: no measure of jitter.
    (this.reception as ReceptionStatistics).onPacket(
      packet.sequenceNumber,
      packet.timestamp,
      now,
      this.receiveClockRate,
      codec !== null,
    );
    if (!isReceiving(config.direction)) return;
    const peer = this.relayPeer;
    if (codec === null) {
      // The sender suppresses audio during the event; the jitter buffer conceals the gap and fades out.
      this.audio.pause();
      if (peer === null) this.eventReceiver.receive(packet.timestamp, packet.payload);
      else peer.relayEvent(packet, this.receiveClockRate);
    } else if (peer?.config?.codec === codec) {
      peer.relayPacket(packet, codec);
    } else if (!this.audio.receive(codec, packet.timestamp, packet.payload, packet.marker)) {
      // Any packet length decodes (the assembler cuts 20 ms frames by timestamp), but not this.
      this.drops.malformed++;
    }
  }

  /** Received audio, decoded: into the jitter buffer at our rate, or re-encoded by the relay peer. */
  private decodedAudio(
    timestamp: number,
    samples: Int16Array,
    count: number,
    sampleRate: AudioRate,
    clockRate: number,
  ): void {
    const peer = this.relayPeer;
    if (peer !== null) {
      peer.relayDecoded(this.remoteSsrc, timestamp, samples, count, sampleRate, clockRate);
      return;
    }
    let audio = samples;
    let length = count;
    if (sampleRate !== this.rate) {
      // Narrowband audio (G.711) in a wideband session: twice the samples, on the same clock.
      const upsampler = this.playoutUpsampler;
      if (upsampler === null || sampleRate !== 8000) return;
      const narrow = this.narrowViews.of(count);
      for (let i = 0; i < count; i++) narrow[i] = samples[i] as number;
      audio = this.wideViews.of(2 * count);
      length = 2 * count;
      upsampler.process(narrow, audio);
    }
    this.assembler.push(timestamp, audio, length, clockRate);
    this.onDecodedAudio?.(audio, length, this.rate);
  }

  /** Counts an SRTP or SRTCP packet refused, and reports authentication failures (rate-limited). */
  private refusedSrtp(reason: SrtpRefusal, source: dgram.RemoteInfo): void {
    if (reason === "malformed") this.drops.malformed++;
    else if (reason === "replay") this.drops.srtpReplay++;
    else {
      this.drops.srtpAuthentication++;
      this.srtpFailuresUnreported++;
      const now = this.clock();
      if (now - this.srtpFailuresReportedAt >= SRTP_WARNING_INTERVAL_MS) {
        this.srtpFailuresReportedAt = now;
        const count = this.srtpFailuresUnreported;
        this.srtpFailuresUnreported = 0;
        this.emit("srtpAuthenticationFailed", { address: source.address, port: source.port, count });
      }
    }
  }

  /** Whether we may send relayed packets now; null when not, else our configuration. */
  private relaying(): RtpSessionConfiguration | null {
    const config = this.config;
    return config === null || this.closing !== null || !isSending(config.direction) || !this.mayTransmit()
      ? null
      : config;
  }

  /**
   * Sends an audio packet in our codec another session received, as it came, as the next of our own
   * stream (see relayTo): its numbers are carried on from ours.
   */
  private relayPacket(packet: RtpPacket, codec: AudioCodecName): void {
    const config = this.relaying();
    if (config === null || packet.payload.length > MAX_PAYLOAD_BYTES) return;
    const marker = this.passThrough(packet);
    const sequenceNumber = (packet.sequenceNumber + this.relaySequenceOffset) & 0xffff;
    const timestamp = (packet.timestamp + this.relayTimestampOffset) >>> 0;
    this.payloadArea().set(packet.payload);
    this.sendRtp(config.payloadType, timestamp, packet.payload.length, marker, sequenceNumber);
    this.timestampAt((timestamp + payloadTicks(codec, packet.payload)) >>> 0);
  }

  /**
   * Packets of a source passed through from here on: a new source, or one whose packets were
   * re-encoded so far, continues our numbers (§5.1), its first packet starting a talkspurt. Returns
   * the marker bit for the packet.
   */
  private passThrough(packet: RtpPacket): boolean {
    if (packet.ssrc === this.relayedSsrc && this.relayMode === RELAY_PASS_THROUGH) return packet.marker;
    this.relayMode = RELAY_PASS_THROUGH;
    this.relayedSsrc = packet.ssrc;
    this.relaySequenceOffset = (this.sequenceNumber - packet.sequenceNumber) & 0xffff;
    this.relayTimestampOffset = (this.timestamp - packet.timestamp) >>> 0;
    return true;
  }

  /** Sends audio of another codec that a relaying session received and decoded, re-encoded in ours (see relayTo). */
  private relayDecoded(
    ssrc: number | null,
    timestamp: number,
    samples: Int16Array,
    count: number,
    sampleRate: AudioRate,
    clockRate: number,
  ): void {
    const encoder = this.encoder;
    if (this.relaying() === null || encoder === null) return;
    this.relayTranscoder ??= new RelayTranscoder(
      encoder.sampleRate,
      this.sendClockRate,
      (at, frame, marker) => this.sendTranscoded(at, frame, marker),
    );
    if (ssrc !== this.relayedSsrc || this.relayMode !== RELAY_TRANSCODE) {
      this.relayMode = RELAY_TRANSCODE;
      this.relayedSsrc = ssrc;
      this.relayTranscoder.restart(this.timestamp);
    }
    this.relayTranscoder.audio(timestamp, samples, count, sampleRate, clockRate);
  }

  private sendTranscoded(timestamp: number, frame: Int16Array, marker: boolean): void {
    const config = this.config as RtpSessionConfiguration;
    const length = (this.encoder as AudioEncoder).encode(frame, this.payloadArea());
    this.sendRtp(config.payloadType, timestamp, length, marker);
    this.timestampAt((timestamp + this.sendTicksPerFrame) >>> 0);
  }

  /**
   * Sends a telephone-event another session received, on a clock of `clockRate` (its audio's), as the
   * next of our stream: as it came beside audio passed through, else stamped and timed on our clock.
   */
  private relayEvent(packet: RtpPacket, clockRate: number): void {
    const config = this.relaying();
    const payloadType = config?.telephoneEventPayloadType;
    if (payloadType === undefined || packet.payload.length > MAX_PAYLOAD_BYTES) return;
    const transcoder = this.relayTranscoder;
    if (this.relayMode !== RELAY_TRANSCODE || transcoder === null || packet.ssrc !== this.relayedSsrc) {
      const marker = this.passThrough(packet);
      this.payloadArea().set(packet.payload);
      this.sendRtp(
        payloadType,
        (packet.timestamp + this.relayTimestampOffset) >>> 0,
        packet.payload.length,
        marker,
        (packet.sequenceNumber + this.relaySequenceOffset) & 0xffff,
      );
      return;
    }
    const event = parseTelephoneEvent(packet.payload, this.relayedEvent);
    if (event === null) return;
    event.duration = Math.min(0xffff, transcoder.scale(event.duration, clockRate));
    const length = writeTelephoneEvent(event, this.payloadArea());
    this.sendRtp(payloadType, transcoder.map(packet.timestamp, clockRate), length, packet.marker);
  }

  /** A new remote SSRC (first packet, or the peer restarted): fresh statistics, playout, decoding and DTMF state. */
  private startRemoteSource(ssrc: number, sequenceNumber: number): void {
    if (this.reception !== null) {
      const earlier = this.earlier;
      earlier.packetsReceived += this.reception.received;
      earlier.packetsLost += this.reception.lost;
      earlier.packetsOutOfOrder += this.reception.misordered;
      this.foldPlayoutStats();
      this.jitterBuffer = this.newJitterBuffer();
      this.eventReceiver = this.newEventReceiver();
      this.assembler.reset();
      this.audio.reset();
    }
    this.remoteSsrc = ssrc;
    this.reception = new ReceptionStatistics(sequenceNumber);
  }

  private receiveRtcp(received: Buffer, source: dgram.RemoteInfo): void {
    if (this.config === null || this.closing !== null) return;
    const datagram = this.srtpReceiver === null ? received : this.srtpReceiver.unprotectRtcp(received);
    if (typeof datagram === "string") {
      this.refusedSrtp(datagram, source);
      return;
    }
    const packets = parseRtcpCompound(datagram);
    if (packets === null) return;
    if (!this.rtcpRemote.latched) this.rtcpRemote.latch(source);
    const now = this.clock();
    this.lastPacketTime = now;
    this.reporter.receive(packets, now, this.sendClockRate);
  }

  /** §6.2: reports at randomised intervals (0.5–1.5 × the configured mean) to avoid synchronisation. */
  private scheduleReport(): void {
    this.rtcpTimer = setTimeout(
      () => {
        const length = this.writeReport(this.rtcpBuffer);
        this.sendRtcp(this.rtcpBuffer, length);
        this.scheduleReport();
      },
      this.rtcpIntervalMs * (0.5 + Math.random()),
    );
  }

  /** Sends an RTCP compound packet, as SRTCP when SRTP is on. */
  private sendRtcp(buffer: Buffer, length: number, sent?: () => void): void {
    // RTP on the highest port leaves RTCP no port (§11 puts it one above): nothing is sent until the
    // peer's own RTCP shows where it listens.
    if (this.rtcpRemote.port > MAX_PORT) {
      sent?.();
      return;
    }
    const { port, address } = this.rtcpRemote;
    if (this.srtpSender === null) this.rtcp.send(buffer, 0, length, port, address, sent);
    else {
      const protectedPacket = this.srtpSender.protectRtcp(buffer.subarray(0, length));
      this.rtcp.send(protectedPacket, 0, protectedPacket.length, port, address, sent);
    }
  }

  /** The head of a compound packet (§6.1): an SR when we sent RTP since the last report, else an RR. */
  private writeReport(out: Buffer): number {
    const now = this.clock();
    // Our RTP clock now: the last timestamp moved on by the time since, at our codec's clock rate.
    const ticksSince = Math.round(((now - this.timestampAdvancedAt) * this.sendClockRate) / 1000);
    const sent = this.sentSinceReport
      ? {
          rtpTimestamp: (this.timestamp + ticksSince) >>> 0,
          // The counts of our SSRC since it started, on whichever thread it started.
          packetCount: (this.earlier.packetsSent + this.packetsSent) >>> 0,
          octetCount: (this.earlier.octetsSent + this.octetsSent) >>> 0,
        }
      : null;
    this.sentSinceReport = false;
    const reception = this.reception;
    if (reception !== null && reception.received > 0) {
      this.jitterSumMs += reception.jitterMs;
      this.jitterSamples++;
    }
    return this.reporter.write(out, now, sent, this.remoteSsrc, reception);
  }
}
