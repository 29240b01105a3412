/**
 * SRTP and SRTCP (RFC 3711) with the AES_CM_128_HMAC_SHA1_80 and _32 suites of SDES (RFC 4568):
 * session keys derived from the master key and salt (section 4.3, key derivation rate 0), AES in
 * counter mode (4.1.1), HMAC-SHA1 authentication over the packet and the rollover counter (4.2),
 * the index estimated from the sequence number across wraps (3.3.1, appendix A), and a 64-packet
 * replay window (3.3.2). One context protects what we send, another checks what we receive.
 */
import { type Cipher, createCipheriv, createHmac, timingSafeEqual } from "node:crypto";

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
const REPLAY_WINDOW = 64;
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
 * AES in counter mode (section 4.1.1) on one AES-128 block cipher kept for the context: the
 * keystream of a packet is E(IV), E(IV + 1), ..., so no cipher is made per packet.
 */
class CounterMode {
  readonly #block: Cipher;
  readonly #salt: Buffer;
  /** The packet's counter blocks, rewritten for each packet. */
  #counters = Buffer.alloc(1504);

  constructor(key: Buffer, salt: Buffer) {
    this.#block = createCipheriv("aes-128-ecb", key, null);
    this.#block.setAutoPadding(false);
    this.#salt = salt;
  }

  /** XORs the keystream of packet `index` of `ssrc` into `data`, in place. */
  apply(ssrc: number, index: number, data: Buffer): void {
    const length = Math.ceil(data.length / 16) * 16;
    if (this.#counters.length < length) this.#counters = Buffer.alloc(length);
    const counters = this.#counters;
    // IV = (k_s * 2^16) XOR (SSRC * 2^64) XOR (index * 2^16); its low 16 bits count the blocks.
    counters.fill(0, 0, 16);
    this.#salt.copy(counters, 0);
    counters.writeUInt32BE((counters.readUInt32BE(4) ^ ssrc) >>> 0, 4);
    counters.writeUInt16BE(counters.readUInt16BE(8) ^ (Math.floor(index / 0x100000000) & 0xffff), 8);
    counters.writeUInt32BE((counters.readUInt32BE(10) ^ index) >>> 0, 10);
    for (let offset = 16, block = 1; offset < length; offset += 16, block++) {
      counters.copy(counters, offset, 0, 14);
      counters.writeUInt16BE(block, offset + 14);
    }
    const keystream = this.#block.update(counters.subarray(0, length));
    for (let i = 0; i < data.length; i++) data[i] = (data[i] as number) ^ (keystream[i] as number);
  }
}

/**
 * HMAC-SHA1 (section 4.2.1). A new HMAC per packet: copying precomputed inner and outer hash states
 * instead measured slower on Node 20 (two hash objects per packet against one HMAC).
 */
class Authenticator {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  /** The full 20-byte tag of `data` followed by `trailer` when given. */
  tag(data: Buffer, trailer?: Buffer): Buffer {
    const hmac = createHmac("sha1", this.#key).update(data);
    if (trailer !== undefined) hmac.update(trailer);
    return hmac.digest();
  }
}

function keys(material: SrtpKeyMaterial) {
  const master = Buffer.from(material.inline, "base64");
  if (master.length !== MASTER_KEY_LENGTH + MASTER_SALT_LENGTH)
    throw new RangeError(`an SRTP inline key is 30 bytes, not ${master.length}`);
  const masterKey = master.subarray(0, MASTER_KEY_LENGTH);
  const masterSalt = master.subarray(MASTER_KEY_LENGTH);
  const session = (encryption: number, authentication: number, salting: number) => {
    const key = derive(masterKey, masterSalt, encryption, 16);
    const auth = derive(masterKey, masterSalt, authentication, AUTH_KEY_LENGTH);
    const salt = derive(masterKey, masterSalt, salting, MASTER_SALT_LENGTH);
    return { key, auth, salt, cipher: new CounterMode(key, salt), authenticator: new Authenticator(auth) };
  };
  return {
    rtp: session(LABEL.rtpEncryption, LABEL.rtpAuthentication, LABEL.rtpSalt),
    rtcp: session(LABEL.rtcpEncryption, LABEL.rtcpAuthentication, LABEL.rtcpSalt),
  };
}

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
  readonly #keys: ReturnType<typeof keys>;
  readonly #tagLength: number;
  /** Per-packet scratch: the rollover counter the tag covers. */
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
    let stream = this.#streams.get(ssrc);
    if (stream === undefined) {
      stream = { roc: 0, lastSequence: sequence };
      this.#streams.set(ssrc, stream);
    } else if (sequence < stream.lastSequence && stream.lastSequence - sequence > 0x8000) {
      stream.roc = (stream.roc + 1) >>> 0;
      stream.lastSequence = sequence;
    } else if (sequence > stream.lastSequence) stream.lastSequence = sequence;
    const roc = stream.roc;
    const { cipher, authenticator } = this.#keys.rtp;
    cipher.apply(ssrc, roc * 0x10000 + sequence, buffer.subarray(headerLength, length));
    this.#roc.writeUInt32BE(roc, 0);
    authenticator.tag(buffer.subarray(0, length), this.#roc).copy(buffer, length, 0, this.#tagLength);
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
  /** Per-packet scratch: the rollover counter the tag covers. */
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
    const index = roc * 0x10000 + sequence;
    if (stream !== undefined && !stream.replay.fresh(index)) return undefined;
    const { cipher, authenticator } = this.#keys.rtp;
    this.#roc.writeUInt32BE(roc, 0);
    const expected = authenticator.tag(datagram.subarray(0, length), this.#roc);
    if (!timingSafeEqual(expected.subarray(0, this.#tagLength), datagram.subarray(length))) return undefined;
    const plain = Buffer.from(datagram.subarray(0, length));
    cipher.apply(ssrc, index, plain.subarray(headerLength));
    if (stream === undefined) {
      const replay = new ReplayWindow();
      replay.accept(index);
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

  /** The plain RTCP compound packet of an SRTCP datagram; undefined when not genuine or a replay. */
  unprotectRtcp(datagram: Buffer): Buffer | undefined {
    const length = datagram.length - SRTCP_TAG_LENGTH - 4;
    if (length < RTCP_HEADER_LENGTH) return undefined;
    const { cipher, authenticator } = this.#keys.rtcp;
    const expected = authenticator.tag(datagram.subarray(0, length + 4));
    if (!timingSafeEqual(expected.subarray(0, SRTCP_TAG_LENGTH), datagram.subarray(length + 4)))
      return undefined;
    const word = datagram.readUInt32BE(length);
    const encrypted = (word & 0x80000000) !== 0;
    const index = word & 0x7fffffff;
    const ssrc = datagram.readUInt32BE(4);
    const replay = this.#rtcpReplay.get(ssrc) ?? new ReplayWindow();
    if (!replay.fresh(index)) return undefined;
    const plain = Buffer.from(datagram.subarray(0, length));
    if (encrypted) {
      cipher.apply(ssrc, index, plain.subarray(RTCP_HEADER_LENGTH));
    }
    replay.accept(index);
    this.#rtcpReplay.set(ssrc, replay);
    return plain;
  }
}

/** SRTCP with a given index (section 3.4): what SrtpSender.protectRtcp does, exposed for its tests. */
export function protectRtcpWithIndex(
  rtcpKeys: { cipher: CounterMode; authenticator: Authenticator },
  packet: Buffer,
  index: number,
): Buffer {
  const out = Buffer.alloc(packet.length + 4 + SRTCP_TAG_LENGTH);
  packet.copy(out);
  const ssrc = packet.readUInt32BE(4);
  rtcpKeys.cipher.apply(ssrc, index, out.subarray(RTCP_HEADER_LENGTH, packet.length));
  out.writeUInt32BE((0x80000000 | index) >>> 0, packet.length);
  rtcpKeys.authenticator
    .tag(out.subarray(0, packet.length + 4))
    .copy(out, packet.length + 4, 0, SRTCP_TAG_LENGTH);
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
