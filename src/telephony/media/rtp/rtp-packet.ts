/**
 * RTP fixed header (RFC 3550 §5.1):
 *
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |V=2|P|X|  CC   |M|     PT      |       sequence number         |
 *  |                           timestamp                           |
 *  |           synchronization source (SSRC) identifier            |
 *  |            contributing source (CSRC) identifiers             |
 *  |                             ....                              |
 *
 * followed, when X is set, by a header extension (§5.3.1) and the payload, and, when P is set, by
 * padding whose last octet counts the padding octets (itself included).
 */

export const RTP_VERSION = 2;
export const RTP_FIXED_HEADER_LENGTH = 12;

export interface RtpHeader {
  marker: boolean;
  /** 7 bits. */
  payloadType: number;
  /** 16 bits. */
  sequenceNumber: number;
  /** 32 bits, unsigned. */
  timestamp: number;
  /** 32 bits, unsigned. */
  ssrc: number;
  /** Contributing sources, at most 15 (§5.1 CC); empty for a packet that did not pass through a mixer. */
  csrcs: readonly number[];
}

export interface RtpHeaderExtension {
  /** The 16-bit profile-defined identifier (§5.3.1), e.g. 0xbede for RFC 8285 one-byte headers. */
  profile: number;
  data: Uint8Array;
}

export interface RtpPacket extends RtpHeader {
  extension: RtpHeaderExtension | null;
  /** The payload without padding; a view into the datagram, not a copy. */
  payload: Uint8Array;
}

function readUint16(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset] as number) << 8) | (bytes[offset + 1] as number);
}

function readUint32(bytes: Uint8Array, offset: number): number {
  return (readUint16(bytes, offset) * 0x10000 + readUint16(bytes, offset + 2)) >>> 0;
}

/** Parses an RTP datagram; returns null when it is not a well-formed version 2 packet. */
export function parseRtpPacket(datagram: Uint8Array): RtpPacket | null {
  if (datagram.length < RTP_FIXED_HEADER_LENGTH) return null;
  const first = datagram[0] as number;
  const second = datagram[1] as number;
  if (first >> 6 !== RTP_VERSION) return null;
  const hasPadding = (first & 0x20) !== 0;
  const hasExtension = (first & 0x10) !== 0;
  const csrcCount = first & 0x0f;

  let offset = RTP_FIXED_HEADER_LENGTH;
  if (datagram.length < offset + 4 * csrcCount) return null;
  const csrcs: number[] = [];
  for (let i = 0; i < csrcCount; i++, offset += 4) csrcs.push(readUint32(datagram, offset));

  let extension: RtpHeaderExtension | null = null;
  if (hasExtension) {
    // §5.3.1: 16-bit profile identifier, then the extension length in 32-bit words, excluding this word.
    if (datagram.length < offset + 4) return null;
    const profile = readUint16(datagram, offset);
    const dataLength = 4 * readUint16(datagram, offset + 2);
    offset += 4;
    if (datagram.length < offset + dataLength) return null;
    extension = { profile, data: datagram.subarray(offset, offset + dataLength) };
    offset += dataLength;
  }

  let end = datagram.length;
  if (hasPadding) {
    // §5.1 P: the last octet counts the padding octets, itself included, so it is at least 1.
    const paddingLength = datagram[end - 1] as number;
    if (paddingLength === 0 || end - paddingLength < offset) return null;
    end -= paddingLength;
  }

  return {
    marker: (second & 0x80) !== 0,
    payloadType: second & 0x7f,
    sequenceNumber: readUint16(datagram, 2),
    timestamp: readUint32(datagram, 4),
    ssrc: readUint32(datagram, 8),
    csrcs,
    extension,
    payload: datagram.subarray(offset, end),
  };
}

/** Octets needed to write a packet with this header and payload length (no extension, no padding). */
export function rtpPacketLength(header: RtpHeader, payloadLength: number): number {
  return RTP_FIXED_HEADER_LENGTH + 4 * header.csrcs.length + payloadLength;
}

/**
 * Writes a version 2 packet without extension or padding into `out` from its start, so a sender can
 * reuse one preallocated buffer per stream; returns the number of octets written.
 */
export function writeRtpPacket(header: RtpHeader, payload: Uint8Array, out: Buffer): number {
  const csrcCount = header.csrcs.length;
  if (csrcCount > 15) throw new RangeError(`an RTP header carries at most 15 CSRCs, got ${csrcCount}`);
  const length = rtpPacketLength(header, payload.length);
  if (out.length < length)
    throw new RangeError(`RTP packet needs ${length} octets, buffer has ${out.length}`);

  out[0] = (RTP_VERSION << 6) | csrcCount;
  out[1] = (header.marker ? 0x80 : 0) | (header.payloadType & 0x7f);
  out.writeUInt16BE(header.sequenceNumber & 0xffff, 2);
  out.writeUInt32BE(header.timestamp >>> 0, 4);
  out.writeUInt32BE(header.ssrc >>> 0, 8);
  let offset = RTP_FIXED_HEADER_LENGTH;
  for (const csrc of header.csrcs) offset = out.writeUInt32BE(csrc >>> 0, offset);
  out.set(payload, offset);
  return length;
}
