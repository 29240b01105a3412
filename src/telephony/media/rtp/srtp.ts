/**
 * SRTP and SRTCP (RFC 3711) with the AES_CM_128_HMAC_SHA1_80 and _32 suites of SDES (RFC 4568):
 * session keys derived from the master key and salt (section 4.3, key derivation rate 0), AES in
 * counter mode (4.1.1), HMAC-SHA1 authentication over the packet and the rollover counter (4.2),
 * the index estimated from the sequence number across wraps (3.3.1, appendix A), and a 64-packet
 * replay window (3.3.2). One context protects what we send, another checks what we receive.
 */
import { createCipheriv, createHmac, timingSafeEqual } from "node:crypto";

export type SrtpSuite = "AES_CM_128_HMAC_SHA1_80" | "AES_CM_128_HMAC_SHA1_32";

/** The suites we offer and accept, preferred first. */
export const SRTP_SUITES: readonly SrtpSuite[] = ["AES_CM_128_HMAC_SHA1_80", "AES_CM_128_HMAC_SHA1_32"];

/** A master key and salt, as an SDES inline key carries them (RFC 4568 section 6.1). */
export interface SrtpKeyMaterial {
  readonly suite: SrtpSuite;
  /** 16 bytes of master key then 14 of master salt, base64 (what `inline:` carries). */
  readonly inline: string;
}

export const MASTER_KEY_LENGTH = 16;
export const MASTER_SALT_LENGTH = 14;
const SRTP_TAG_LENGTH: Readonly<Record<SrtpSuite, number>> = {
  AES_CM_128_HMAC_SHA1_80: 10,
  AES_CM_128_HMAC_SHA1_32: 4,
};
/** SRTCP keeps the 80-bit tag with both suites (RFC 4568 section 6.2.2). */
const SRTCP_TAG_LENGTH = 10;
const AUTH_KEY_LENGTH = 20;
const REPLAY_WINDOW = 64n;
const RTP_HEADER_LENGTH = 12;
const RTCP_HEADER_LENGTH = 8;

/** The key derivation labels of section 4.3.2. */
const LABEL = {
  rtpEncryption: 0,
  rtpAuthentication: 1,
  rtpSalt: 2,
  rtcpEncryption: 3,
  rtcpAuthentication: 4,
  rtcpSalt: 5,
} as const;

/** Section 4.3.1 with a key derivation rate of 0: AES-CM of zeros from (label at byte 7) XOR salt. */
function derive(masterKey: Buffer, masterSalt: Buffer, label: number, length: number): Buffer {
  const iv = Buffer.alloc(16);
  masterSalt.copy(iv, 0);
  iv[7] = (iv[7] as number) ^ label;
  return createCipheriv("aes-128-ctr", masterKey, iv).update(Buffer.alloc(length));
}

/**
 * Section 4.1.1: IV = (k_s * 2^16) XOR (SSRC * 2^64) XOR (index * 2^16), the counter below; written
 * into `iv` (16 bytes, reused: createCipheriv copies it).
 */
function counterIv(salt: Buffer, ssrc: number, index: bigint, iv: Buffer = Buffer.alloc(16)): Buffer {
  iv.fill(0);
  salt.copy(iv, 0);
  iv.writeUInt32BE((iv.readUInt32BE(4) ^ ssrc) >>> 0, 4);
  const high = Number((index >> 32n) & 0xffffn);
  const low = Number(index & 0xffffffffn);
  iv.writeUInt16BE(iv.readUInt16BE(8) ^ high, 8);
  iv.writeUInt32BE((iv.readUInt32BE(10) ^ low) >>> 0, 10);
  return iv;
}

function keys(material: SrtpKeyMaterial) {
  const master = Buffer.from(material.inline, "base64");
  if (master.length !== MASTER_KEY_LENGTH + MASTER_SALT_LENGTH)
    throw new RangeError(`an SRTP inline key is 30 bytes, not ${master.length}`);
  const masterKey = master.subarray(0, MASTER_KEY_LENGTH);
  const masterSalt = master.subarray(MASTER_KEY_LENGTH);
  return {
    rtp: {
      key: derive(masterKey, masterSalt, LABEL.rtpEncryption, 16),
      auth: derive(masterKey, masterSalt, LABEL.rtpAuthentication, AUTH_KEY_LENGTH),
      salt: derive(masterKey, masterSalt, LABEL.rtpSalt, MASTER_SALT_LENGTH),
    },
    rtcp: {
      key: derive(masterKey, masterSalt, LABEL.rtcpEncryption, 16),
      auth: derive(masterKey, masterSalt, LABEL.rtcpAuthentication, AUTH_KEY_LENGTH),
      salt: derive(masterKey, masterSalt, LABEL.rtcpSalt, MASTER_SALT_LENGTH),
    },
  };
}

/** Section 3.3.2: the highest index seen and a bitmask of the 64 before it. */
class ReplayWindow {
  #highest = -1n;
  #seen = 0n;

  /** Whether `index` is new: not seen, and not older than the window. */
  fresh(index: bigint): boolean {
    if (index > this.#highest) return true;
    const behind = this.#highest - index;
    return behind < REPLAY_WINDOW && (this.#seen & (1n << behind)) === 0n;
  }

  accept(index: bigint): void {
    if (index > this.#highest) {
      const shift = this.#highest < 0n ? REPLAY_WINDOW : index - this.#highest;
      this.#seen = shift >= REPLAY_WINDOW ? 1n : ((this.#seen << shift) | 1n) & ((1n << REPLAY_WINDOW) - 1n);
      this.#highest = index;
    } else this.#seen |= 1n << (this.#highest - index);
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
  readonly #keys: ReturnType<typeof keys>;
  readonly #tagLength: number;
  /** Per-packet scratch: the counter IV and the rollover counter the tag covers. */
  readonly #iv = Buffer.alloc(16);
  readonly #roc = Buffer.alloc(4);
  /** Rollover counters and last sequence numbers, by SSRC (a relay may send more than one). */
  readonly #streams = new Map<number, { roc: number; lastSequence: number }>();
  #rtcpIndex = 0;

  constructor(material: SrtpKeyMaterial, state?: SrtpState) {
    this.#keys = keys(material);
    this.#tagLength = SRTP_TAG_LENGTH[material.suite];
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
    return this.#tagLength;
  }

  /**
   * Protects the RTP packet in `buffer[0, length)` in place: its payload encrypted, the tag written
   * after it. Returns the new length; `buffer` must have room for the tag.
   */
  protectRtp(buffer: Buffer, length: number): number {
    const headerLength = rtpHeaderLength(buffer, length);
    const ssrc = buffer.readUInt32BE(8);
    const sequence = buffer.readUInt16BE(2);
    const stream = this.#streams.get(ssrc);
    let roc = stream?.roc ?? 0;
    if (stream !== undefined && sequence < stream.lastSequence && stream.lastSequence - sequence > 0x8000)
      roc = (roc + 1) >>> 0;
    if (stream === undefined || roc !== stream.roc || sequence > stream.lastSequence)
      this.#streams.set(ssrc, { roc, lastSequence: sequence });
    const index = (BigInt(roc) << 16n) | BigInt(sequence);
    const { key, auth, salt } = this.#keys.rtp;
    const payload = buffer.subarray(headerLength, length);
    createCipheriv("aes-128-ctr", key, counterIv(salt, ssrc, index, this.#iv))
      .update(payload)
      .copy(payload);
    this.#roc.writeUInt32BE(roc, 0);
    const tag = createHmac("sha1", auth).update(buffer.subarray(0, length)).update(this.#roc).digest();
    tag.copy(buffer, length, 0, this.#tagLength);
    return length + this.#tagLength;
  }

  /** Protects an RTCP compound packet into a new buffer: encrypted, E flag and index, tag. */
  protectRtcp(packet: Buffer): Buffer {
    const index = this.#rtcpIndex;
    this.#rtcpIndex = (this.#rtcpIndex + 1) & 0x7fffffff;
    return protectRtcpWithIndex(this.#keys.rtcp, packet, index);
  }
}

/** Tells whether what arrives is genuine and new, and opens it. */
export class SrtpReceiver {
  readonly #keys: ReturnType<typeof keys>;
  readonly #tagLength: number;
  /** Per-packet scratch: the counter IV and the rollover counter the tag covers. */
  readonly #iv = Buffer.alloc(16);
  readonly #roc = Buffer.alloc(4);
  readonly #streams = new Map<number, { roc: number; highestSequence: number; replay: ReplayWindow }>();
  readonly #rtcpReplay = new Map<number, ReplayWindow>();

  constructor(material: SrtpKeyMaterial, state?: SrtpState) {
    this.#keys = keys(material);
    this.#tagLength = SRTP_TAG_LENGTH[material.suite];
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

  /**
   * The plain RTP packet of an SRTP datagram, in a new buffer; undefined when it is too short, fails
   * authentication or is a replay (all to be dropped).
   */
  unprotectRtp(datagram: Buffer): Buffer | undefined {
    const length = datagram.length - this.#tagLength;
    if (length < RTP_HEADER_LENGTH) return undefined;
    const headerLength = rtpHeaderLength(datagram, length);
    if (headerLength > length) return undefined;
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
    const index = (BigInt(roc) << 16n) | BigInt(sequence);
    const replay = stream?.replay ?? new ReplayWindow();
    if (!replay.fresh(index)) return undefined;
    const { key, auth, salt } = this.#keys.rtp;
    this.#roc.writeUInt32BE(roc, 0);
    const expected = createHmac("sha1", auth).update(datagram.subarray(0, length)).update(this.#roc).digest();
    if (!timingSafeEqual(expected.subarray(0, this.#tagLength), datagram.subarray(length))) return undefined;
    const plain = Buffer.from(datagram.subarray(0, length));
    const payload = plain.subarray(headerLength);
    createCipheriv("aes-128-ctr", key, counterIv(salt, ssrc, index, this.#iv))
      .update(payload)
      .copy(payload);
    replay.accept(index);
    const highestIndex =
      stream === undefined ? -1n : (BigInt(stream.roc) << 16n) | BigInt(stream.highestSequence);
    if (stream === undefined || index > highestIndex)
      this.#streams.set(ssrc, { roc, highestSequence: sequence, replay });
    return plain;
  }

  /** The plain RTCP compound packet of an SRTCP datagram; undefined when not genuine or a replay. */
  unprotectRtcp(datagram: Buffer): Buffer | undefined {
    const length = datagram.length - SRTCP_TAG_LENGTH - 4;
    if (length < RTCP_HEADER_LENGTH) return undefined;
    const { key, auth, salt } = this.#keys.rtcp;
    const expected = createHmac("sha1", auth)
      .update(datagram.subarray(0, length + 4))
      .digest();
    if (!timingSafeEqual(expected.subarray(0, SRTCP_TAG_LENGTH), datagram.subarray(length + 4)))
      return undefined;
    const word = datagram.readUInt32BE(length);
    const encrypted = (word & 0x80000000) !== 0;
    const index = BigInt(word & 0x7fffffff);
    const ssrc = datagram.readUInt32BE(4);
    const replay = this.#rtcpReplay.get(ssrc) ?? new ReplayWindow();
    if (!replay.fresh(index)) return undefined;
    const plain = Buffer.from(datagram.subarray(0, length));
    if (encrypted) {
      const body = plain.subarray(RTCP_HEADER_LENGTH);
      createCipheriv("aes-128-ctr", key, counterIv(salt, ssrc, index, this.#iv))
        .update(body)
        .copy(body);
    }
    replay.accept(index);
    this.#rtcpReplay.set(ssrc, replay);
    return plain;
  }
}

/** SRTCP with a given index (section 3.4): what SrtpSender.protectRtcp does, exposed for its tests. */
export function protectRtcpWithIndex(
  rtcpKeys: { key: Buffer; auth: Buffer; salt: Buffer },
  packet: Buffer,
  index: number,
): Buffer {
  const out = Buffer.alloc(packet.length + 4 + SRTCP_TAG_LENGTH);
  packet.copy(out);
  const ssrc = packet.readUInt32BE(4);
  const body = out.subarray(RTCP_HEADER_LENGTH, packet.length);
  createCipheriv("aes-128-ctr", rtcpKeys.key, counterIv(rtcpKeys.salt, ssrc, BigInt(index)))
    .update(body)
    .copy(body);
  out.writeUInt32BE((0x80000000 | index) >>> 0, packet.length);
  const tag = createHmac("sha1", rtcpKeys.auth)
    .update(out.subarray(0, packet.length + 4))
    .digest();
  tag.copy(out, packet.length + 4, 0, SRTCP_TAG_LENGTH);
  return out;
}

/** The session keys of a master key, for tests against the RFC's vectors. */
export function sessionKeys(material: SrtpKeyMaterial): ReturnType<typeof keys> {
  return keys(material);
}

/** The RTP header's length: fixed part, CSRCs and any header extension (RFC 3550 section 5.3.1). */
function rtpHeaderLength(packet: Buffer, length: number): number {
  const csrcs = (packet[0] as number) & 0x0f;
  let headerLength = RTP_HEADER_LENGTH + 4 * csrcs;
  if (((packet[0] as number) & 0x10) !== 0 && headerLength + 4 <= length)
    headerLength += 4 + 4 * packet.readUInt16BE(headerLength + 2);
  return headerLength;
}
