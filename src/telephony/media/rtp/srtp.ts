/**
 * SRTP and SRTCP (RFC 3711) with the SDES suites (RFC 4568) AES_CM_128_HMAC_SHA1_80 and _32, their
 * 256-bit keyed siblings AES_256_CM_HMAC_SHA1_80 and _32 (RFC 6188), and AEAD_AES_128_GCM and
 * AEAD_AES_256_GCM (RFC 7714). Session keys are derived from the master key and salt (section 4.3,
 * key derivation rate 0) with the AES-CM PRF of the master key's size; the counter mode suites
 * encrypt with AES-CM (4.1.1) and authenticate with HMAC-SHA1 over the packet and the rollover
 * counter (4.2); the GCM suites encrypt and authenticate at once, the header as associated data
 * (RFC 7714 sections 8 and 9). The index is estimated from the sequence number across wraps (3.3.1,
 * appendix A), and a 64-packet window refuses replays (3.3.2). One context protects what we send,
 * another checks what we receive.
 *
 * Here: the contexts, with the index, rollover and replay rules (section 3.3). The suites are in
 * srtp-suites.ts, what each does to one packet in srtp-protection.ts.
 */
import {
  type PacketProtection,
  protectionOf,
  RTCP_HEADER_LENGTH,
  SRTCP_INDEX_LENGTH,
} from "./srtp-protection.js";
import type { SrtpKeyMaterial } from "./srtp-suites.js";

/** Why a packet was refused: too short to be one, a replay, or it did not authenticate. */
export type SrtpRefusal = "malformed" | "replay" | "authentication";

const REPLAY_WINDOW = 64;
/**
 * Sources (SSRCs) a receiver keeps state for, RTP and RTCP each. A peer sends one stream at a time,
 * a new SSRC after a restart; without a limit each SSRC that authenticates would hold its state for
 * the rest of the call, and the caller chooses its own key: it could grow our memory by about 800
 * bytes a packet. Past the limit the longest-known source is forgotten.
 */
export const MAX_SRTP_SOURCES = 16;
const RTP_HEADER_LENGTH = 12;

/**
 * Section 3.3.2: the highest index seen and which of the 64 before it were. Slot `index % 64` holds
 * the last index accepted there; an index within the window was seen exactly when its slot holds it.
 */
class ReplayWindow {
  #highest = -1;
  readonly #slots = new Float64Array(REPLAY_WINDOW).fill(-1);

  /** Whether `index` is new: not seen, and not older than the window. */
  fresh(index: number): boolean {
    if (index > this.#highest) return true;
    return this.#highest - index < REPLAY_WINDOW && this.#slots[index % REPLAY_WINDOW] !== index;
  }

  accept(index: number): void {
    this.#slots[index % REPLAY_WINDOW] = index;
    if (index > this.#highest) this.#highest = index;
  }
}

/** Where a context stands, so that a stream moving to another thread carries on (section 3.3.1). */
export interface SrtpState {
  /** SSRC, rollover counter, and the last (sender) or highest (receiver) sequence number. */
  readonly streams: readonly (readonly [number, number, number])[];
  readonly rtcpIndex: number;
}

/** What we send: RTP and RTCP protected under one master key. */
export class SrtpSender {
  readonly #protection: PacketProtection;
  /** Rollover counters and last sequence numbers, by SSRC (a relay may send more than one). */
  readonly #streams = new Map<number, { roc: number; lastSequence: number }>();
  #rtcpIndex = 0;

  constructor(material: SrtpKeyMaterial, state?: SrtpState) {
    this.#protection = protectionOf(material);
    for (const [ssrc, roc, lastSequence] of state?.streams ?? [])
      this.#streams.set(ssrc, { roc, lastSequence });
    this.#rtcpIndex = state?.rtcpIndex ?? 0;
  }

  get state(): SrtpState {
    return {
      streams: [...this.#streams].map(([ssrc, stream]) => [ssrc, stream.roc, stream.lastSequence] as const),
      rtcpIndex: this.#rtcpIndex,
    };
  }

  /** The bytes protection adds to an RTP packet (its tag). */
  get overhead(): number {
    return this.#protection.rtpTagLength;
  }

  /**
   * Protects the RTP packet in `buffer[0, length)` in place: its payload encrypted, the tag written
   * after it. Returns the new length; `buffer` must have room for the tag.
   */
  protectRtp(buffer: Buffer, length: number): number {
    const headerLength = rtpHeaderLength(buffer, length);
    const ssrc = buffer.readUInt32BE(8);
    const sequence = buffer.readUInt16BE(2);
    let stream = this.#streams.get(ssrc);
    if (stream === undefined) {
      stream = { roc: 0, lastSequence: sequence };
      this.#streams.set(ssrc, stream);
    } else if (sequence < stream.lastSequence && stream.lastSequence - sequence > 0x8000) {
      stream.roc = (stream.roc + 1) >>> 0;
      stream.lastSequence = sequence;
    } else if (sequence > stream.lastSequence) stream.lastSequence = sequence;
    return this.#protection.sealRtp(buffer, headerLength, length, ssrc, stream.roc, sequence);
  }

  /** Protects an RTCP compound packet into a new buffer: encrypted, with its E flag, index and tag. */
  protectRtcp(packet: Buffer): Buffer {
    const index = this.#rtcpIndex;
    this.#rtcpIndex = (this.#rtcpIndex + 1) & 0x7fffffff;
    return this.#protection.sealRtcp(packet, index);
  }
}

/** Tells whether what arrives is genuine and new, and opens it. */
export class SrtpReceiver {
  readonly #protection: PacketProtection;
  readonly #streams = new Map<number, { roc: number; highestSequence: number; replay: ReplayWindow }>();
  readonly #rtcpReplay = new Map<number, ReplayWindow>();

  constructor(material: SrtpKeyMaterial, state?: SrtpState) {
    this.#protection = protectionOf(material);
    // The replay windows start afresh: a packet from before the move is one the old context saw.
    for (const [ssrc, roc, highestSequence] of state?.streams ?? [])
      this.#streams.set(ssrc, { roc, highestSequence, replay: new ReplayWindow() });
  }

  get state(): SrtpState {
    return {
      streams: [...this.#streams].map(
        ([ssrc, stream]) => [ssrc, stream.roc, stream.highestSequence] as const,
      ),
      rtcpIndex: 0,
    };
  }

  /** The plain RTP packet of an SRTP datagram, in a new buffer, or why it is to be dropped. */
  unprotectRtp(datagram: Buffer): Buffer | SrtpRefusal {
    const length = datagram.length - this.#protection.rtpTagLength;
    if (length < RTP_HEADER_LENGTH) return "malformed";
    const headerLength = rtpHeaderLength(datagram, length);
    if (headerLength > length) return "malformed";
    const ssrc = datagram.readUInt32BE(8);
    const sequence = datagram.readUInt16BE(2);
    const stream = this.#streams.get(ssrc);
    // Appendix A: the rollover counter this packet was sent under.
    let roc = stream?.roc ?? 0;
    if (stream !== undefined) {
      const highest = stream.highestSequence;
      if (highest < 0x8000) {
        if (sequence - highest > 0x8000) roc = (roc - 1) >>> 0;
      } else if (highest - 0x8000 > sequence) roc = (roc + 1) >>> 0;
    }
    const index = roc * 0x10000 + sequence;
    if (stream !== undefined && !stream.replay.fresh(index)) return "replay";
    const plain = this.#protection.openRtp(datagram, headerLength, ssrc, roc, sequence);
    if (plain === undefined) return "authentication";
    if (stream === undefined) {
      const replay = new ReplayWindow();
      replay.accept(index);
      makeRoom(this.#streams, ssrc);
      this.#streams.set(ssrc, { roc, highestSequence: sequence, replay });
    } else {
      stream.replay.accept(index);
      if (index > stream.roc * 0x10000 + stream.highestSequence) {
        stream.roc = roc;
        stream.highestSequence = sequence;
      }
    }
    return plain;
  }

  /** The plain RTCP compound packet of an SRTCP datagram, or why it is to be dropped. */
  unprotectRtcp(datagram: Buffer): Buffer | SrtpRefusal {
    if (datagram.length < RTCP_HEADER_LENGTH + SRTCP_INDEX_LENGTH + this.#protection.rtcpTagLength)
      return "malformed";
    const indexOffset = this.#protection.rtcpIndexOffset(datagram);
    const index = datagram.readUInt32BE(indexOffset) & 0x7fffffff;
    const ssrc = datagram.readUInt32BE(4);
    const replay = this.#rtcpReplay.get(ssrc);
    if (replay !== undefined && !replay.fresh(index)) return "replay";
    const plain = this.#protection.openRtcp(datagram);
    if (plain === undefined) return "authentication";
    if (replay === undefined) {
      const window = new ReplayWindow();
      window.accept(index);
      makeRoom(this.#rtcpReplay, ssrc);
      this.#rtcpReplay.set(ssrc, window);
    } else replay.accept(index);
    return plain;
  }
}

/** Makes room for `ssrc` among a receiver's sources: the longest known goes when there are as many as allowed. */
function makeRoom(sources: Map<number, unknown>, ssrc: number): void {
  if (sources.size >= MAX_SRTP_SOURCES && !sources.has(ssrc))
    sources.delete(sources.keys().next().value as number);
}

/** The RTP header's length: fixed part, CSRCs and any header extension (RFC 3550 section 5.3.1). */
function rtpHeaderLength(packet: Buffer, length: number): number {
  const csrcs = (packet[0] as number) & 0x0f;
  let headerLength = RTP_HEADER_LENGTH + 4 * csrcs;
  if (((packet[0] as number) & 0x10) !== 0 && headerLength + 4 <= length)
    headerLength += 4 + 4 * packet.readUInt16BE(headerLength + 2);
  return headerLength;
}
