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
 */
import {
  type Cipher,
  createCipheriv,
  createDecipheriv,
  createHmac,
  randomBytes,
  timingSafeEqual,
} from "node:crypto";

export type SrtpSuite =
  | "AES_CM_128_HMAC_SHA1_80"
  | "AES_CM_128_HMAC_SHA1_32"
  | "AES_256_CM_HMAC_SHA1_80"
  | "AES_256_CM_HMAC_SHA1_32"
  | "AEAD_AES_128_GCM"
  | "AEAD_AES_256_GCM";

/** Every suite we know, strongest first. */
export const SRTP_SUITES: readonly SrtpSuite[] = [
  "AEAD_AES_256_GCM",
  "AEAD_AES_128_GCM",
  "AES_256_CM_HMAC_SHA1_80",
  "AES_256_CM_HMAC_SHA1_32",
  "AES_CM_128_HMAC_SHA1_80",
  "AES_CM_128_HMAC_SHA1_32",
];

/** The suites offered and accepted unless configured otherwise: those every SDES peer has (RFC 4568). */
export const DEFAULT_SRTP_SUITES: readonly SrtpSuite[] = [
  "AES_CM_128_HMAC_SHA1_80",
  "AES_CM_128_HMAC_SHA1_32",
];

/** SRTP for a call: none, offered and either answer taken, or nothing else accepted (488). */
export const SRTP_POLICIES = ["off", "optional", "required"] as const;
export type SrtpPolicy = (typeof SRTP_POLICIES)[number];

/** A master key and salt, as an SDES inline key carries them (RFC 4568 section 6.1). */
export interface SrtpKeyMaterial {
  readonly suite: SrtpSuite;
  /** The master key then the master salt, base64 (what `inline:` carries). */
  readonly inline: string;
}

interface SuiteParameters {
  /** Master and session encryption key, in bytes. */
  readonly keyLength: number;
  /** Master and session salt, in bytes: 14 for AES-CM, 12 for GCM (RFC 7714 section 11). */
  readonly saltLength: number;
  readonly aead: boolean;
  readonly rtpTagLength: number;
  readonly rtcpTagLength: number;
}

/**
 * RFC 4568 section 6.2 and RFC 6188 section 6: the _32 suites keep an 80-bit SRTCP tag. RFC 7714
 * section 14.2: a 16-octet tag on both.
 */
const SUITES: Readonly<Record<SrtpSuite, SuiteParameters>> = {
  AES_CM_128_HMAC_SHA1_80: {
    keyLength: 16,
    saltLength: 14,
    aead: false,
    rtpTagLength: 10,
    rtcpTagLength: 10,
  },
  AES_CM_128_HMAC_SHA1_32: { keyLength: 16, saltLength: 14, aead: false, rtpTagLength: 4, rtcpTagLength: 10 },
  AES_256_CM_HMAC_SHA1_80: {
    keyLength: 32,
    saltLength: 14,
    aead: false,
    rtpTagLength: 10,
    rtcpTagLength: 10,
  },
  AES_256_CM_HMAC_SHA1_32: { keyLength: 32, saltLength: 14, aead: false, rtpTagLength: 4, rtcpTagLength: 10 },
  AEAD_AES_128_GCM: { keyLength: 16, saltLength: 12, aead: true, rtpTagLength: 16, rtcpTagLength: 16 },
  AEAD_AES_256_GCM: { keyLength: 32, saltLength: 12, aead: true, rtpTagLength: 16, rtcpTagLength: 16 },
};

/** The longest tag any suite adds to an RTP packet (GCM's 16 bytes). */
export const SRTP_MAX_RTP_OVERHEAD = Math.max(...Object.values(SUITES).map((suite) => suite.rtpTagLength));

/** How many bytes the inline key of `suite` holds: master key and salt. */
export function inlineKeyLength(suite: SrtpSuite): number {
  return SUITES[suite].keyLength + SUITES[suite].saltLength;
}

/** A fresh random master key and salt for `suite`. */
export function newSrtpKey(suite: SrtpSuite): SrtpKeyMaterial {
  return { suite, inline: randomBytes(inlineKeyLength(suite)).toString("base64") };
}

/** Why a packet was refused: too short to be one, a replay, or it did not authenticate. */
export type SrtpRefusal = "malformed" | "replay" | "authentication";

const AUTH_KEY_LENGTH = 20;
const GCM_IV_LENGTH = 12;
const REPLAY_WINDOW = 64;
/**
 * Sources (SSRCs) a receiver keeps state for, RTP and RTCP each. A peer sends one stream at a time,
 * a new SSRC after a restart; without a limit each SSRC that authenticates would hold its state for
 * the rest of the call, and the caller chooses its own key: it could grow our memory by about 800
 * bytes a packet. Past the limit the longest-known source is forgotten.
 */
export const MAX_SRTP_SOURCES = 16;
const RTP_HEADER_LENGTH = 12;
const RTCP_HEADER_LENGTH = 8;
/** The E flag and SRTCP index word (section 3.4). */
const SRTCP_INDEX_LENGTH = 4;
const ENCRYPTED_FLAG = 0x80000000;

/** The key derivation labels of section 4.3.2. */
const LABEL = {
  rtpEncryption: 0,
  rtpAuthentication: 1,
  rtpSalt: 2,
  rtcpEncryption: 3,
  rtcpAuthentication: 4,
  rtcpSalt: 5,
} as const;

/**
 * Section 4.3.1 with a key derivation rate of 0: AES-CM (of the master key's size, RFC 6188 section
 * 5.1) of zeros from (label at byte 7) XOR salt; a 12-byte GCM salt is padded with zeros (RFC 7714
 * section 11).
 */
function derive(masterKey: Buffer, masterSalt: Buffer, label: number, length: number): Buffer {
  const iv = Buffer.alloc(16);
  masterSalt.copy(iv, 0);
  iv[7] = (iv[7] as number) ^ label;
  return createCipheriv(`aes-${masterKey.length * 8}-ctr`, masterKey, iv).update(Buffer.alloc(length));
}

/**
 * AES in counter mode (section 4.1.1) on one AES block cipher kept for the context: the keystream of
 * a packet is E(IV), E(IV + 1), ..., so no cipher is made per packet.
 */
class CounterMode {
  readonly #block: Cipher;
  readonly #salt: Buffer;
  /** The packet's counter blocks, rewritten for each packet. */
  #counters = Buffer.alloc(1504);

  constructor(key: Buffer, salt: Buffer) {
    this.#block = createCipheriv(`aes-${key.length * 8}-ecb`, key, null);
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

/** The session keys of one kind of packet (RTP or RTCP). */
export interface SessionKeys {
  readonly key: Buffer;
  readonly salt: Buffer;
  /** The HMAC-SHA1 key; empty for the GCM suites, whose tag is GCM's own. */
  readonly auth: Buffer;
}

/**
 * What a suite does to one packet, the replay and rollover bookkeeping aside. `seal*` protect,
 * `open*` return the plain packet in a new buffer or undefined when it does not authenticate.
 */
export interface PacketProtection {
  readonly rtpTagLength: number;
  readonly rtcpTagLength: number;
  sealRtp(
    buffer: Buffer,
    headerLength: number,
    length: number,
    ssrc: number,
    roc: number,
    sequence: number,
  ): number;
  openRtp(
    datagram: Buffer,
    headerLength: number,
    ssrc: number,
    roc: number,
    sequence: number,
  ): Buffer | undefined;
  sealRtcp(packet: Buffer, index: number): Buffer;
  /** Where the E flag and index word sits in an SRTCP datagram of this suite. */
  rtcpIndexOffset(datagram: Buffer): number;
  openRtcp(datagram: Buffer): Buffer | undefined;
}

/** AES-CM and HMAC-SHA1 (RFC 3711 sections 4.1.1 and 4.2.1; RFC 6188 for 256-bit keys). */
class CounterModeHmac implements PacketProtection {
  readonly rtpTagLength: number;
  readonly rtcpTagLength: number;
  readonly #rtp: { cipher: CounterMode; auth: Buffer };
  readonly #rtcp: { cipher: CounterMode; auth: Buffer };
  /** Per-packet scratch: the rollover counter the tag covers. */
  readonly #roc = Buffer.alloc(4);

  constructor(parameters: SuiteParameters, rtp: SessionKeys, rtcp: SessionKeys) {
    this.rtpTagLength = parameters.rtpTagLength;
    this.rtcpTagLength = parameters.rtcpTagLength;
    this.#rtp = { cipher: new CounterMode(rtp.key, rtp.salt), auth: rtp.auth };
    this.#rtcp = { cipher: new CounterMode(rtcp.key, rtcp.salt), auth: rtcp.auth };
  }

  /**
   * A new HMAC per packet: copying precomputed inner and outer hash states instead measured slower on
   * Node 20 (two hash objects per packet against one HMAC).
   */
  #tag(key: Buffer, data: Buffer, trailer?: Buffer): Buffer {
    const hmac = createHmac("sha1", key).update(data);
    if (trailer !== undefined) hmac.update(trailer);
    return hmac.digest();
  }

  sealRtp(
    buffer: Buffer,
    headerLength: number,
    length: number,
    ssrc: number,
    roc: number,
    sequence: number,
  ): number {
    this.#rtp.cipher.apply(ssrc, roc * 0x10000 + sequence, buffer.subarray(headerLength, length));
    this.#roc.writeUInt32BE(roc, 0);
    this.#tag(this.#rtp.auth, buffer.subarray(0, length), this.#roc).copy(
      buffer,
      length,
      0,
      this.rtpTagLength,
    );
    return length + this.rtpTagLength;
  }

  openRtp(
    datagram: Buffer,
    headerLength: number,
    ssrc: number,
    roc: number,
    sequence: number,
  ): Buffer | undefined {
    const length = datagram.length - this.rtpTagLength;
    this.#roc.writeUInt32BE(roc, 0);
    const expected = this.#tag(this.#rtp.auth, datagram.subarray(0, length), this.#roc);
    if (!timingSafeEqual(expected.subarray(0, this.rtpTagLength), datagram.subarray(length)))
      return undefined;
    const plain = Buffer.from(datagram.subarray(0, length));
    this.#rtp.cipher.apply(ssrc, roc * 0x10000 + sequence, plain.subarray(headerLength));
    return plain;
  }

  /** Section 3.4: header, encrypted rest, E flag and index, then the tag over all of it. */
  sealRtcp(packet: Buffer, index: number): Buffer {
    const out = Buffer.alloc(packet.length + SRTCP_INDEX_LENGTH + this.rtcpTagLength);
    packet.copy(out);
    this.#rtcp.cipher.apply(packet.readUInt32BE(4), index, out.subarray(RTCP_HEADER_LENGTH, packet.length));
    out.writeUInt32BE((ENCRYPTED_FLAG | index) >>> 0, packet.length);
    const covered = packet.length + SRTCP_INDEX_LENGTH;
    this.#tag(this.#rtcp.auth, out.subarray(0, covered)).copy(out, covered, 0, this.rtcpTagLength);
    return out;
  }

  rtcpIndexOffset(datagram: Buffer): number {
    return datagram.length - this.rtcpTagLength - SRTCP_INDEX_LENGTH;
  }

  openRtcp(datagram: Buffer): Buffer | undefined {
    const covered = datagram.length - this.rtcpTagLength;
    const expected = this.#tag(this.#rtcp.auth, datagram.subarray(0, covered));
    if (!timingSafeEqual(expected.subarray(0, this.rtcpTagLength), datagram.subarray(covered)))
      return undefined;
    const length = covered - SRTCP_INDEX_LENGTH;
    const word = datagram.readUInt32BE(length);
    const plain = Buffer.from(datagram.subarray(0, length));
    if ((word & ENCRYPTED_FLAG) !== 0)
      this.#rtcp.cipher.apply(plain.readUInt32BE(4), word & 0x7fffffff, plain.subarray(RTCP_HEADER_LENGTH));
    return plain;
  }
}

/** AES-GCM (RFC 7714): the IV of sections 8.1 and 9.1, the header as associated data, a 16-byte tag. */
class GaloisCounterMode implements PacketProtection {
  readonly rtpTagLength: number;
  readonly rtcpTagLength: number;
  readonly #algorithm: "aes-128-gcm" | "aes-256-gcm";
  readonly #rtp: SessionKeys;
  readonly #rtcp: SessionKeys;
  /** Per-packet scratch: the IV, and SRTCP's E flag and index word (part of its associated data). */
  readonly #iv = Buffer.alloc(GCM_IV_LENGTH);
  readonly #indexWord = Buffer.alloc(SRTCP_INDEX_LENGTH);

  constructor(parameters: SuiteParameters, rtp: SessionKeys, rtcp: SessionKeys) {
    this.rtpTagLength = parameters.rtpTagLength;
    this.rtcpTagLength = parameters.rtcpTagLength;
    this.#algorithm = parameters.keyLength === 32 ? "aes-256-gcm" : "aes-128-gcm";
    this.#rtp = rtp;
    this.#rtcp = rtcp;
  }

  /** Sections 8.1 and 9.1: (00 00 || SSRC || ROC or 00 00 || SEQ or index) XOR the session salt. */
  #ivOf(salt: Buffer, ssrc: number, high: number, low: number, lowLength: 2 | 4): Buffer {
    const iv = this.#iv;
    iv.fill(0);
    iv.writeUInt32BE(ssrc, 2);
    if (lowLength === 2) {
      iv.writeUInt32BE(high, 6);
      iv.writeUInt16BE(low, 10);
    } else iv.writeUInt32BE(low, 8);
    for (let i = 0; i < GCM_IV_LENGTH; i++) iv[i] = (iv[i] as number) ^ (salt[i] as number);
    return iv;
  }

  sealRtp(
    buffer: Buffer,
    headerLength: number,
    length: number,
    ssrc: number,
    roc: number,
    sequence: number,
  ): number {
    const iv = this.#ivOf(this.#rtp.salt, ssrc, roc, sequence, 2);
    const cipher = createCipheriv(this.#algorithm, this.#rtp.key, iv, { authTagLength: this.rtpTagLength });
    cipher.setAAD(buffer.subarray(0, headerLength));
    cipher.update(buffer.subarray(headerLength, length)).copy(buffer, headerLength);
    cipher.final();
    cipher.getAuthTag().copy(buffer, length);
    return length + this.rtpTagLength;
  }

  openRtp(
    datagram: Buffer,
    headerLength: number,
    ssrc: number,
    roc: number,
    sequence: number,
  ): Buffer | undefined {
    const length = datagram.length - this.rtpTagLength;
    const iv = this.#ivOf(this.#rtp.salt, ssrc, roc, sequence, 2);
    const decipher = createDecipheriv(this.#algorithm, this.#rtp.key, iv, {
      authTagLength: this.rtpTagLength,
    });
    decipher.setAAD(datagram.subarray(0, headerLength));
    decipher.setAuthTag(datagram.subarray(length));
    const plain = Buffer.allocUnsafe(length);
    datagram.copy(plain, 0, 0, headerLength);
    decipher.update(datagram.subarray(headerLength, length)).copy(plain, headerLength);
    try {
      decipher.final();
    } catch {
      return undefined;
    }
    return plain;
  }

  /** Section 9: header, then the rest encrypted with its tag, then the E flag and index. */
  sealRtcp(packet: Buffer, index: number): Buffer {
    const ssrc = packet.readUInt32BE(4);
    const cipher = createCipheriv(
      this.#algorithm,
      this.#rtcp.key,
      this.#ivOf(this.#rtcp.salt, ssrc, 0, index, 4),
      {
        authTagLength: this.rtcpTagLength,
      },
    );
    const out = Buffer.alloc(packet.length + this.rtcpTagLength + SRTCP_INDEX_LENGTH);
    packet.copy(out, 0, 0, RTCP_HEADER_LENGTH);
    const word = (ENCRYPTED_FLAG | index) >>> 0;
    this.#indexWord.writeUInt32BE(word, 0);
    // Section 9.1, figure 5: the associated data is the header and the E flag and index word.
    cipher.setAAD(packet.subarray(0, RTCP_HEADER_LENGTH));
    cipher.setAAD(this.#indexWord);
    cipher.update(packet.subarray(RTCP_HEADER_LENGTH)).copy(out, RTCP_HEADER_LENGTH);
    cipher.final();
    cipher.getAuthTag().copy(out, packet.length);
    out.writeUInt32BE(word, packet.length + this.rtcpTagLength);
    return out;
  }

  rtcpIndexOffset(datagram: Buffer): number {
    return datagram.length - SRTCP_INDEX_LENGTH;
  }

  openRtcp(datagram: Buffer): Buffer | undefined {
    const indexOffset = datagram.length - SRTCP_INDEX_LENGTH;
    const tagOffset = indexOffset - this.rtcpTagLength;
    const word = datagram.readUInt32BE(indexOffset);
    const encrypted = (word & ENCRYPTED_FLAG) !== 0;
    const ssrc = datagram.readUInt32BE(4);
    const iv = this.#ivOf(this.#rtcp.salt, ssrc, 0, word & 0x7fffffff, 4);
    const decipher = createDecipheriv(this.#algorithm, this.#rtcp.key, iv, {
      authTagLength: this.rtcpTagLength,
    });
    // Unencrypted (section 9.2, figure 6): the whole packet is associated data, the plaintext empty.
    decipher.setAAD(datagram.subarray(0, encrypted ? RTCP_HEADER_LENGTH : tagOffset));
    decipher.setAAD(datagram.subarray(indexOffset));
    decipher.setAuthTag(datagram.subarray(tagOffset, indexOffset));
    const plain = Buffer.allocUnsafe(tagOffset);
    datagram.copy(plain, 0, 0, encrypted ? RTCP_HEADER_LENGTH : tagOffset);
    if (encrypted)
      decipher.update(datagram.subarray(RTCP_HEADER_LENGTH, tagOffset)).copy(plain, RTCP_HEADER_LENGTH);
    try {
      decipher.final();
    } catch {
      return undefined;
    }
    return plain;
  }
}

/** The session keys of a master key (section 4.3), RTP's and RTCP's. */
export function sessionKeys(material: SrtpKeyMaterial): { rtp: SessionKeys; rtcp: SessionKeys } {
  const parameters = SUITES[material.suite];
  const master = Buffer.from(material.inline, "base64");
  if (master.length !== parameters.keyLength + parameters.saltLength)
    throw new RangeError(
      `an SRTP inline key of ${material.suite} is ${parameters.keyLength + parameters.saltLength} bytes, not ${master.length}`,
    );
  const masterKey = master.subarray(0, parameters.keyLength);
  const masterSalt = master.subarray(parameters.keyLength);
  const session = (encryption: number, authentication: number, salting: number): SessionKeys => ({
    key: derive(masterKey, masterSalt, encryption, parameters.keyLength),
    salt: derive(masterKey, masterSalt, salting, parameters.saltLength),
    auth: parameters.aead ? Buffer.alloc(0) : derive(masterKey, masterSalt, authentication, AUTH_KEY_LENGTH),
  });
  return {
    rtp: session(LABEL.rtpEncryption, LABEL.rtpAuthentication, LABEL.rtpSalt),
    rtcp: session(LABEL.rtcpEncryption, LABEL.rtcpAuthentication, LABEL.rtcpSalt),
  };
}

/** The protection of `suite` under given session keys (the RFC vectors give session keys). */
export function protectionWith(suite: SrtpSuite, rtp: SessionKeys, rtcp: SessionKeys): PacketProtection {
  const parameters = SUITES[suite];
  return parameters.aead
    ? new GaloisCounterMode(parameters, rtp, rtcp)
    : new CounterModeHmac(parameters, rtp, rtcp);
}

function protectionOf(material: SrtpKeyMaterial): PacketProtection {
  const { rtp, rtcp } = sessionKeys(material);
  return protectionWith(material.suite, rtp, rtcp);
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
