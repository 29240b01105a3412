/**
 * What each SRTP suite does to one packet (RFC 3711 sections 4.1-4.3; RFC 6188; RFC 7714 sections 8,
 * 9 and 11): session keys derived from the master key, then AES-CM and HMAC-SHA1, or AES-GCM; the
 * replay and rollover bookkeeping is the contexts' (srtp.ts).
 */
import { type Cipher, createCipheriv, createDecipheriv, createHmac, timingSafeEqual } from "node:crypto";
import { type SrtpKeyMaterial, type SrtpSuite, SUITES, type SuiteParameters } from "./srtp-suites.js";

const AUTH_KEY_LENGTH = 20;
const GCM_IV_LENGTH = 12;
export const RTCP_HEADER_LENGTH = 8;
/** The E flag and SRTCP index word (section 3.4). */
export const SRTCP_INDEX_LENGTH = 4;
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

/** The protection of a master key. */
export function protectionOf(material: SrtpKeyMaterial): PacketProtection {
  const { rtp, rtcp } = sessionKeys(material);
  return protectionWith(material.suite, rtp, rtcp);
}
