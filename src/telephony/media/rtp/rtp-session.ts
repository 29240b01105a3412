// Long because sending, receiving, relaying and handing over share one socket pair and per-packet state.
/**
 * One call's media stream over RTP/RTCP (RFC 3550) on a pair of UDP sockets: G.711 audio in 20 ms
 * frames both ways, DTMF as RFC 4733 telephone-events, symmetric RTP towards peers behind NAT, and
 * periodic RTCP reports from which call quality is read.
 *
 * The layer above owns the 20 ms clock: it calls `sendFrame` and `readFrame` once per tick. Received
 * audio waits in a jitter buffer until it is read.
 *
 * Beside it: what a stream is (rtp-stream.ts), DTMF sending (telephone-event-sender.ts), RTCP
 * reports (rtcp-reporter.ts) and the symmetric-RTP latch (symmetric-rtp.ts).
 */

import { randomBytes, randomUUID } from "node:crypto";
import type dgram from "node:dgram";
import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from "../codec/g711.js";
import {
  eventOfDtmfKey,
  type ReceivedDigit,
  type TelephoneEventPacket,
  TelephoneEventReceiver,
} from "../dtmf/rfc4733.js";
import { FrameAssembler } from "../frame-assembler.js";
import { JitterBuffer, type JitterBufferOptions, type PlayoutKind } from "../jitter-buffer.js";
import type { BoundPortPair, RtpPortAllocator } from "./port-allocator.js";
import { parseRtcpCompound, writeGoodbye } from "./rtcp-packet.js";
import { RtcpReporter } from "./rtcp-reporter.js";
import {
  parseRtpPacket,
  RTP_FIXED_HEADER_LENGTH,
  type RtpHeader,
  type RtpPacket,
  writeRtpPacket,
} from "./rtp-packet.js";
import {
  type AudioCodecName,
  type G711Codec,
  isReceiving,
  isSending,
  NO_DROPS,
  type RtpDrops,
  type RtpHandover,
  type RtpSessionConfiguration,
  type RtpSessionStats,
  type RtpTotals,
  remoteRtcpPort,
  SAMPLES_PER_FRAME,
  TIMESTAMP_UNITS_PER_MS,
} from "./rtp-stream.js";
import { ReceptionStatistics } from "./sequence.js";
import { SrtpReceiver, type SrtpRefusal, SrtpSender } from "./srtp.js";
import { SRTP_MAX_RTP_OVERHEAD } from "./srtp-suites.js";
import { RelatchGuard, RemoteEndpoint } from "./symmetric-rtp.js";
import { type SendDigitsOptions, TelephoneEventSender } from "./telephone-event-sender.js";

export interface RtpSessionOptions {
  allocator: RtpPortAllocator;
  bindAddress: string;
  /** Bind this port pair instead of the allocator's next free one (a stream carried on from elsewhere). */
  port?: number;
  /** Carries on a stream another session sent and received until now. */
  handover?: RtpHandover;
  /** Monotonic milliseconds; default performance.now. */
  clock?: () => number;
  /** Mean interval between RTCP reports, default 5000 ms; each is randomised to 0.5–1.5 times it (§6.2). */
  rtcpIntervalMs?: number;
  /** SDES CNAME, default a random identifier as RFC 7022 recommends. */
  cname?: string;
  jitterBuffer?: JitterBufferOptions;
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
/** The most G.711 samples one datagram can carry (a 1500-byte MTU less IP, UDP and RTP headers). */
const MAX_PAYLOAD_SAMPLES = 1500 - 20 - 8 - RTP_FIXED_HEADER_LENGTH;
/** At most one report of SRTP authentication failures per this many ms. */
const SRTP_WARNING_INTERVAL_MS = 10_000;
/** What a received payload type carries (the index of `payloadKinds`). */
const PAYLOAD_UNKNOWN = 0;
const PAYLOAD_PCMU = 1;
const PAYLOAD_PCMA = 2;
const PAYLOAD_TELEPHONE_EVENT = 3;
/** G.722 and Opus are not decoded here yet (issue 27: the rtp part brings them). */
const PAYLOAD_OF_CODEC: Readonly<Record<AudioCodecName, number>> = {
  PCMU: PAYLOAD_PCMU,
  PCMA: PAYLOAD_PCMA,
  G722: PAYLOAD_UNKNOWN,
  opus: PAYLOAD_UNKNOWN,
};

function randomUint32(): number {
  return randomBytes(4).readUInt32BE(0);
}

const MAX_PORT = 65_535;

export class RtpSession extends EventEmitter<RtpSessionEvents> {
  /**
   * Told of each received audio packet's samples as it arrives, before the jitter buffer delays,
   * reorders or trims anything (for in-band tone detection). The samples are the session's: read
   * `count` of them before returning.
   */
  onDecodedAudio: ((samples: Int16Array, count: number) => void) | undefined;
  /** Our synchronization source, random (§8.1). */
  readonly ssrc: number;
  private readonly rtp: dgram.Socket;
  private readonly rtcp: dgram.Socket;
  private readonly port: number;
  private readonly allocator: RtpPortAllocator;
  private readonly clock: () => number;
  private readonly rtcpIntervalMs: number;
  private readonly cname: string;
  private readonly jitterBufferOptions: JitterBufferOptions;
  private config: RtpSessionConfiguration | null = null;
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
  private timestamp = randomUint32();
  /** When `timestamp` last advanced, to extrapolate the SR's RTP timestamp. */
  private timestampAdvancedAt: number;
  /** §5.1: the marker bit is set on the first packet of a talkspurt, here the first after (re)starting to send. */
  private markNextFrame = true;
  private readonly sendBuffers = Array.from({ length: SEND_BUFFER_COUNT }, () =>
    Buffer.alloc(RTP_FIXED_HEADER_LENGTH + MAX_PAYLOAD_SAMPLES + SRTP_MAX_RTP_OVERHEAD),
  );
  // SRTP, when negotiated: what protects what we send and opens what we receive.
  private srtpSender: SrtpSender | null = null;
  private srtpReceiver: SrtpReceiver | null = null;
  private nextSendBuffer = 0;
  private readonly encoded = new Uint8Array(SAMPLES_PER_FRAME);
  /** A relayed packet's payload turned into our G.711 law. */
  private readonly transcoded = new Uint8Array(MAX_PAYLOAD_SAMPLES);
  private packetsSent = 0;
  private octetsSent = 0;
  private sentSinceReport = false;

  // DTMF sending, one telephone-event packet per 20 ms tick.
  private readonly dtmf = new TelephoneEventSender({
    timestamp: () => this.timestamp,
    sendEventPacket: (packet) => this.sendEventPacket(packet),
  });

  // Relaying: the session whose received packets this one sends on, and how their sequence numbers
  // and timestamps map onto ours (the far end sees one stream from us, whoever's audio it carries).
  /** Where this session's received packets go, instead of its own playout; null when played out here. */
  private relayPeer: RtpSession | null = null;
  /** The relayed source our offsets were taken for; null before the first relayed packet. */
  private relayedSsrc: number | null = null;
  private relaySequenceOffset = 0;
  private relayTimestampOffset = 0;

  // Receiving, from one remote source at a time.
  /** Decoded samples of one packet: up to a full datagram's payload, whatever the packet length. */
  private readonly decoded = new Int16Array(MAX_PAYLOAD_SAMPLES);
  private readonly assembler = new FrameAssembler((frameIndex, frame) =>
    this.jitterBuffer.push(frameIndex, frame),
  );
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
    dropped: { ...NO_DROPS },
  };
  private lastPacketTime: number | null = null;

  // RTCP.
  private rtcpTimer: NodeJS.Timeout | null = null;
  private readonly rtcpBuffer = Buffer.alloc(RTCP_BUFFER_LENGTH);
  private readonly reporter: RtcpReporter;

  /** Binds an RTP/RTCP port pair from the allocator. */
  static async open(options: RtpSessionOptions): Promise<RtpSession> {
    const pair =
      options.port === undefined
        ? await options.allocator.bindPair(options.bindAddress)
        : await options.allocator.bindExactPair(options.bindAddress, options.port);
    return new RtpSession(pair, options);
  }

  private constructor(pair: BoundPortPair, options: RtpSessionOptions) {
    super();
    this.rtp = pair.rtp;
    this.rtcp = pair.rtcp;
    this.port = pair.port;
    this.allocator = options.allocator;
    this.clock = options.clock ?? (() => performance.now());
    this.rtcpIntervalMs = options.rtcpIntervalMs ?? DEFAULT_RTCP_INTERVAL_MS;
    const handover = options.handover;
    this.ssrc = handover?.ssrc ?? randomUint32();
    this.header.ssrc = this.ssrc;
    this.cname = handover?.cname ?? options.cname ?? randomUUID();
    this.reporter = new RtcpReporter(this.ssrc, this.cname, (reason) => this.emit("bye", reason));
    this.jitterBufferOptions = options.jitterBuffer ?? {};
    this.jitterBuffer = new JitterBuffer(this.jitterBufferOptions);
    this.eventReceiver = this.newEventReceiver();
    this.timestampAdvancedAt = this.clock();
    if (handover !== undefined) this.carryOn(handover);
    this.rtp.on("message", (datagram, source) => this.receiveRtp(datagram, source));
    this.rtcp.on("message", (datagram, source) => this.receiveRtcp(datagram, source));
    const onSocketError = (error: Error) => this.emit("socketError", error);
    this.rtp.on("error", onSocketError);
    this.rtcp.on("error", onSocketError);
  }

  /** The local RTP port; RTCP is on the port above. */
  get localPort(): number {
    return this.port;
  }

  /** Monotonic time (the session's clock, ms) of the last RTP or RTCP packet from the remote; null before one. */
  get lastPacketAt(): number | null {
    return this.lastPacketTime;
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
    this.config = { ...config };
    this.payloadKinds.fill(PAYLOAD_UNKNOWN);
    if (config.telephoneEventPayloadType !== undefined)
      this.payloadKinds[config.telephoneEventPayloadType & 0x7f] = PAYLOAD_TELEPHONE_EVENT;
    for (const format of config.receiveFormats ?? [])
      this.payloadKinds[format.payloadType & 0x7f] = PAYLOAD_OF_CODEC[format.codec];
    this.payloadKinds[config.payloadType & 0x7f] = PAYLOAD_OF_CODEC[config.codec];
    if (this.rtcpTimer === null) this.scheduleReport();
  }

  /**
   * Sends one 20 ms frame (160 samples) in the negotiated G.711 law. The timestamp advances even when
   * the direction forbids sending; while a DTMF event is being sent the frame is dropped instead
   * (RFC 4733 §2.5.1.1), the event's packets advancing the timestamp.
   */
  sendFrame(samples: Int16Array): void {
    if (this.closing !== null || this.dtmf.sendingEvent) return;
    const config = this.config;
    if (config !== null && isSending(config.direction)) {
      const length =
        config.codec === "PCMU" ? encodeMulaw(samples, this.encoded) : encodeAlaw(samples, this.encoded);
      const payload = length === SAMPLES_PER_FRAME ? this.encoded : this.encoded.subarray(0, length);
      this.sendRtp(config.payloadType, this.timestamp, payload, this.markNextFrame);
      this.markNextFrame = false;
    }
    this.advanceTimestamp(samples.length);
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
   * Relays: every packet this session receives from now on is sent out of `peer` as `peer`'s own
   * stream (its SSRC, its sequence numbers and timestamps carried on, its payload types; the payload
   * as it came, or turned into the other G.711 law when the two calls use different ones), instead
   * of being played out here. Keys and talking are then the far end's business. null stops it.
   */
  relayTo(peer: RtpSession | null): void {
    this.relayPeer = peer;
    if (peer !== null) peer.relayedSsrc = null;
  }

  /** Writes the next 20 ms of received audio (160 samples) into `out`. */
  readFrame(out: Int16Array): PlayoutKind {
    return this.jitterBuffer.pull(out);
  }

  stats(): RtpSessionStats {
    const totals = this.totals();
    return {
      packetsSent: totals.packetsSent,
      packetsReceived: totals.packetsReceived,
      packetsLost: totals.packetsLost,
      fractionLost: this.reporter.lastFractionLost,
      jitterMs: (this.reception?.jitter ?? 0) / TIMESTAMP_UNITS_PER_MS,
      remoteFractionLost: this.reporter.remoteFractionLost,
      remoteJitterMs: this.reporter.remoteJitterMs,
      roundTripMs: this.reporter.roundTripMs,
      packetsLate: totals.packetsLate,
      packetsDuplicate: totals.packetsDuplicate,
      packetsOutOfOrder: totals.packetsOutOfOrder,
      framesConcealed: totals.framesConcealed,
      dropped: totals.dropped,
    };
  }

  /**
   * Stops the session without a word to the far end (no RTCP BYE: the stream goes on elsewhere),
   * closes the sockets, and returns what the session carrying it on needs. The port stays taken in
   * this allocator until `release`d by whoever ends the stream.
   */
  async handOver(): Promise<RtpHandover> {
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
      srtp:
        this.srtpSender === null || this.srtpReceiver === null
          ? undefined
          : { sender: this.srtpSender.state, receiver: this.srtpReceiver.state },
    };
    this.closing = new Promise((resolve) => {
      if (this.rtcpTimer !== null) clearTimeout(this.rtcpTimer);
      this.dtmf.stop();
      let open = 2;
      const closed = () => {
        if (--open === 0) resolve();
      };
      this.rtp.close(closed);
      this.rtcp.close(closed);
    });
    await this.closing;
    this.allocator.release(this.port);
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
    return {
      packetsSent: earlier.packetsSent + this.packetsSent,
      octetsSent: earlier.octetsSent + this.octetsSent,
      packetsReceived: earlier.packetsReceived + (reception?.received ?? 0),
      packetsLost: earlier.packetsLost + (reception?.lost ?? 0),
      packetsLate: earlier.packetsLate + playout.late,
      packetsDuplicate: earlier.packetsDuplicate + playout.duplicate,
      packetsOutOfOrder: earlier.packetsOutOfOrder + (reception?.misordered ?? 0),
      framesConcealed: earlier.framesConcealed + playout.concealed,
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
      const finish = () => {
        this.rtp.close();
        this.rtcp.close();
        this.allocator.release(this.port);
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

  private newEventReceiver(): TelephoneEventReceiver {
    return new TelephoneEventReceiver((digit) => this.emit("digit", digit));
  }

  private advanceTimestamp(samples: number): void {
    this.timestamp = (this.timestamp + samples) >>> 0;
    this.timestampAdvancedAt = this.clock();
  }

  private sendRtp(
    payloadType: number,
    timestamp: number,
    payload: Uint8Array,
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
    const plainLength = writeRtpPacket(header, payload, buffer);
    const length = this.srtpSender === null ? plainLength : this.srtpSender.protectRtp(buffer, plainLength);
    this.rtp.send(buffer, 0, length, this.rtpRemote.port, this.rtpRemote.address);
    this.packetsSent++;
    this.octetsSent += payload.length;
    this.sentSinceReport = true;
  }

  /** Sends one telephone-event packet when the stream may send; the timestamp advances one tick either way. */
  private sendEventPacket(packet: TelephoneEventPacket): void {
    const config = this.config;
    if (config?.telephoneEventPayloadType !== undefined && isSending(config.direction)) {
      this.sendRtp(config.telephoneEventPayloadType, packet.timestamp, packet.payload, packet.marker);
    }
    this.advanceTimestamp(SAMPLES_PER_FRAME);
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
    const isAudio = kind !== PAYLOAD_TELEPHONE_EVENT;
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
    (this.reception as ReceptionStatistics).onPacket(
      packet.sequenceNumber,
      packet.timestamp,
      now * TIMESTAMP_UNITS_PER_MS,
      isAudio,
    );
    if (!isReceiving(config.direction)) return;
    if (this.relayPeer !== null) {
      this.relayPeer.sendRelayed(packet, isAudio, kind === PAYLOAD_PCMU ? "PCMU" : "PCMA");
      return;
    }
    if (isAudio) {
      // Any packet length: the assembler cuts the samples into 20 ms frames by timestamp.
      if (packet.payload.length > MAX_PAYLOAD_SAMPLES) return;
      const count =
        kind === PAYLOAD_PCMU
          ? decodeMulaw(packet.payload, this.decoded.subarray(0, packet.payload.length))
          : decodeAlaw(packet.payload, this.decoded.subarray(0, packet.payload.length));
      this.assembler.push(packet.timestamp, this.decoded, count);
      this.onDecodedAudio?.(this.decoded, count);
    } else {
      // The sender suppresses audio during the event; the jitter buffer conceals the gap and fades out.
      this.eventReceiver.receive(packet.timestamp, packet.payload);
    }
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

  /** Sends a packet another session received, as the next of our own stream (see relayTo). */
  private sendRelayed(packet: RtpPacket, isAudio: boolean, codec: G711Codec): void {
    const config = this.config;
    if (config === null || this.closing !== null || !isSending(config.direction)) return;
    const payloadType = isAudio ? config.payloadType : config.telephoneEventPayloadType;
    if (payloadType === undefined || packet.payload.length > MAX_PAYLOAD_SAMPLES) return;
    let marker = packet.marker;
    if (packet.ssrc !== this.relayedSsrc) {
      // A new source: its numbers continue ours (§5.1), and its first packet starts a talkspurt.
      this.relayedSsrc = packet.ssrc;
      this.relaySequenceOffset = (this.sequenceNumber - packet.sequenceNumber) & 0xffff;
      this.relayTimestampOffset = (this.timestamp - packet.timestamp) >>> 0;
      marker = true;
    }
    let payload: Uint8Array = packet.payload;
    if (isAudio && codec !== config.codec) {
      const count = packet.payload.length;
      const samples = this.decoded.subarray(0, count);
      if (codec === "PCMU") decodeMulaw(packet.payload, samples);
      else decodeAlaw(packet.payload, samples);
      payload = this.transcoded.subarray(0, count);
      if (config.codec === "PCMU") encodeMulaw(samples, payload);
      else encodeAlaw(samples, payload);
    }
    const sequenceNumber = (packet.sequenceNumber + this.relaySequenceOffset) & 0xffff;
    const timestamp = (packet.timestamp + this.relayTimestampOffset) >>> 0;
    this.sendRtp(payloadType, timestamp, payload, marker, sequenceNumber);
    if (isAudio) {
      this.timestamp = (timestamp + payload.length) >>> 0;
      this.timestampAdvancedAt = this.clock();
    }
  }

  /** A new remote SSRC (first packet, or the peer restarted): fresh statistics, playout and DTMF state. */
  private startRemoteSource(ssrc: number, sequenceNumber: number): void {
    if (this.reception !== null) {
      const earlier = this.earlier;
      const playout = this.jitterBuffer.stats;
      earlier.packetsReceived += this.reception.received;
      earlier.packetsLost += this.reception.lost;
      earlier.packetsOutOfOrder += this.reception.misordered;
      earlier.packetsLate += playout.late;
      earlier.packetsDuplicate += playout.duplicate;
      earlier.framesConcealed += playout.concealed;
      earlier.dropped.jitterBufferOverflow += playout.trimmed;
      this.jitterBuffer = new JitterBuffer(this.jitterBufferOptions);
      this.eventReceiver = this.newEventReceiver();
      this.assembler.reset();
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
    this.reporter.receive(packets, now);
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
    const sent = this.sentSinceReport
      ? {
          rtpTimestamp:
            (this.timestamp + Math.round((now - this.timestampAdvancedAt) * TIMESTAMP_UNITS_PER_MS)) >>> 0,
          // The counts of our SSRC since it started, on whichever thread it started.
          packetCount: (this.earlier.packetsSent + this.packetsSent) >>> 0,
          octetCount: (this.earlier.octetsSent + this.octetsSent) >>> 0,
        }
      : null;
    this.sentSinceReport = false;
    return this.reporter.write(out, now, sent, this.remoteSsrc, this.reception);
  }
}
