/**
 * RTCP packets (RFC 3550 §6): Sender Report and Receiver Report with their report blocks (§6.4),
 * Source Description with the CNAME item (§6.5), BYE (§6.6), and compound packets (§6.1). Every RTCP
 * packet starts with the same header:
 *
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |V=2|P|   count |      PT       |             length            |
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * where length is the packet's size in 32-bit words minus one, header included.
 */

export const RTCP_SENDER_REPORT = 200;
export const RTCP_RECEIVER_REPORT = 201;
export const RTCP_SOURCE_DESCRIPTION = 202;
export const RTCP_GOODBYE = 203;

const RTCP_VERSION = 2;
const HEADER_LENGTH = 4;
/** §6.4.1: NTP timestamp (8), RTP timestamp (4), packet count (4), octet count (4). */
const SENDER_INFO_LENGTH = 20;
const REPORT_BLOCK_LENGTH = 24;
/** The 5-bit count field bounds report blocks, SDES chunks and BYE sources alike. */
const MAX_COUNT = 31;
/** §6.5.1: SDES item type of the canonical end-point identifier. */
const SDES_CNAME = 1;
/** SDES item text and the BYE reason carry an 8-bit length. */
const MAX_TEXT_LENGTH = 255;

/** §6.4.1: reception report about one source. */
export interface ReportBlock {
  ssrc: number;
  /** Fraction lost since the previous report, 8-bit fixed point: lost / expected × 256. */
  fractionLost: number;
  /** Cumulative packets lost, signed 24 bits (negative when duplicates arrived). */
  cumulativeLost: number;
  /** Cycles of the sequence number in the upper 16 bits, highest sequence number received below. */
  extendedHighestSequence: number;
  /** Interarrival jitter in timestamp units. */
  jitter: number;
  /** LSR: middle 32 bits of the NTP timestamp of the source's last SR, 0 when none was received. */
  lastSenderReport: number;
  /** DLSR: delay since that SR was received, in units of 1/65536 s, 0 when none was received. */
  delaySinceLastSenderReport: number;
}

/** §6.4.1: the sender information section of an SR. */
export interface SenderInfo {
  /** NTP timestamp, whole seconds since 1900 (32 bits). */
  ntpSeconds: number;
  /** NTP timestamp, fraction of a second in units of 2^-32 s. */
  ntpFraction: number;
  /** The same instant in the sender's RTP timestamp units. */
  rtpTimestamp: number;
  packetCount: number;
  /** Payload octets sent, headers and padding excluded. */
  octetCount: number;
}

export interface SenderReport {
  type: "SR";
  ssrc: number;
  sender: SenderInfo;
  reports: ReportBlock[];
}

export interface ReceiverReport {
  type: "RR";
  ssrc: number;
  reports: ReportBlock[];
}

export interface SourceDescriptionChunk {
  ssrc: number;
  /** The CNAME item (§6.5.1); other items are skipped when parsing. */
  cname: string | null;
}

export interface SourceDescription {
  type: "SDES";
  chunks: SourceDescriptionChunk[];
}

export interface Goodbye {
  type: "BYE";
  ssrcs: number[];
  reason: string | null;
}

export type RtcpPacket = SenderReport | ReceiverReport | SourceDescription | Goodbye;

/** Seconds from the NTP epoch (1900-01-01) to the Unix epoch (1970-01-01). */
const NTP_UNIX_EPOCH_OFFSET_SECONDS = 2_208_988_800;

export interface NtpTimestamp {
  seconds: number;
  fraction: number;
}

/** The 64-bit NTP timestamp (§4) of a Unix time in milliseconds, seconds wrapping at 2^32. */
export function ntpTimestampFromUnixMs(unixMs: number): NtpTimestamp {
  const wholeSeconds = Math.floor(unixMs / 1000);
  const fraction = Math.floor(((unixMs - wholeSeconds * 1000) / 1000) * 0x1_0000_0000);
  return { seconds: (wholeSeconds + NTP_UNIX_EPOCH_OFFSET_SECONDS) >>> 0, fraction: fraction >>> 0 };
}

/** §6.4.1 LSR: the middle 32 bits of an NTP timestamp, in units of 1/65536 s. */
export function ntpMiddle32(timestamp: NtpTimestamp): number {
  return (((timestamp.seconds & 0xffff) << 16) | (timestamp.fraction >>> 16)) >>> 0;
}

/** Milliseconds as the 1/65536 s units of DLSR, wrapping at 32 bits. */
export function msToNtpShort(ms: number): number {
  return Math.round((ms * 65536) / 1000) >>> 0;
}

/** A duration in 1/65536 s units (LSR, DLSR and their differences) as milliseconds. */
export function ntpShortToMs(units: number): number {
  return (units * 1000) / 65536;
}

function ensureRoom(out: Buffer, offset: number, length: number): void {
  if (offset + length > out.length) {
    throw new RangeError(`RTCP packet needs ${offset + length} octets, buffer has ${out.length}`);
  }
}

function checkCount(count: number, what: string): void {
  if (count > MAX_COUNT) throw new RangeError(`an RTCP packet carries at most ${MAX_COUNT} ${what}`);
}

function writeHeader(out: Buffer, offset: number, count: number, packetType: number, length: number): void {
  out[offset] = (RTCP_VERSION << 6) | count;
  out[offset + 1] = packetType;
  out.writeUInt16BE(length / 4 - 1, offset + 2);
}

function writeReportBlocks(reports: readonly ReportBlock[], out: Buffer, offset: number): number {
  let position = offset;
  for (const block of reports) {
    out.writeUInt32BE(block.ssrc >>> 0, position);
    out[position + 4] = block.fractionLost & 0xff;
    out.writeUIntBE(block.cumulativeLost & 0xffffff, position + 5, 3);
    out.writeUInt32BE(block.extendedHighestSequence >>> 0, position + 8);
    out.writeUInt32BE(block.jitter >>> 0, position + 12);
    out.writeUInt32BE(block.lastSenderReport >>> 0, position + 16);
    out.writeUInt32BE(block.delaySinceLastSenderReport >>> 0, position + 20);
    position += REPORT_BLOCK_LENGTH;
  }
  return position;
}

/** Writes an SR (§6.4.1) at `offset`; returns the offset after it. */
export function writeSenderReport(report: SenderReport, out: Buffer, offset = 0): number {
  checkCount(report.reports.length, "report blocks");
  const length = HEADER_LENGTH + 4 + SENDER_INFO_LENGTH + REPORT_BLOCK_LENGTH * report.reports.length;
  ensureRoom(out, offset, length);
  writeHeader(out, offset, report.reports.length, RTCP_SENDER_REPORT, length);
  out.writeUInt32BE(report.ssrc >>> 0, offset + 4);
  const { sender } = report;
  out.writeUInt32BE(sender.ntpSeconds >>> 0, offset + 8);
  out.writeUInt32BE(sender.ntpFraction >>> 0, offset + 12);
  out.writeUInt32BE(sender.rtpTimestamp >>> 0, offset + 16);
  out.writeUInt32BE(sender.packetCount >>> 0, offset + 20);
  out.writeUInt32BE(sender.octetCount >>> 0, offset + 24);
  return writeReportBlocks(report.reports, out, offset + 28);
}

/** Writes an RR (§6.4.2) at `offset`; returns the offset after it. */
export function writeReceiverReport(report: ReceiverReport, out: Buffer, offset = 0): number {
  checkCount(report.reports.length, "report blocks");
  const length = HEADER_LENGTH + 4 + REPORT_BLOCK_LENGTH * report.reports.length;
  ensureRoom(out, offset, length);
  writeHeader(out, offset, report.reports.length, RTCP_RECEIVER_REPORT, length);
  out.writeUInt32BE(report.ssrc >>> 0, offset + 4);
  return writeReportBlocks(report.reports, out, offset + 8);
}

function textLength(text: string): number {
  const length = Buffer.byteLength(text, "utf8");
  if (length > MAX_TEXT_LENGTH) throw new RangeError(`RTCP text is at most ${MAX_TEXT_LENGTH} octets`);
  return length;
}

/**
 * Writes an SDES packet (§6.5) at `offset`; returns the offset after it. Each chunk's item list ends
 * with a null octet and is padded with more to the next 32-bit boundary (§6.5).
 */
export function writeSourceDescription(description: SourceDescription, out: Buffer, offset = 0): number {
  checkCount(description.chunks.length, "SDES chunks");
  let length = HEADER_LENGTH;
  for (const chunk of description.chunks) {
    const itemsLength = chunk.cname === null ? 0 : 2 + textLength(chunk.cname);
    length += 4 + ((itemsLength + 4) & ~3);
  }
  ensureRoom(out, offset, length);
  writeHeader(out, offset, description.chunks.length, RTCP_SOURCE_DESCRIPTION, length);
  let position = offset + HEADER_LENGTH;
  for (const chunk of description.chunks) {
    out.writeUInt32BE(chunk.ssrc >>> 0, position);
    const itemsStart = position + 4;
    position = itemsStart;
    if (chunk.cname !== null) {
      out[position] = SDES_CNAME;
      out[position + 1] = textLength(chunk.cname);
      position += 2 + out.write(chunk.cname, position + 2, "utf8");
    }
    const end = itemsStart + ((position - itemsStart + 4) & ~3);
    out.fill(0, position, end);
    position = end;
  }
  return position;
}

/** Writes a BYE (§6.6) at `offset`; returns the offset after it. The reason is zero-padded. */
export function writeGoodbye(goodbye: Goodbye, out: Buffer, offset = 0): number {
  checkCount(goodbye.ssrcs.length, "sources");
  const reasonLength = goodbye.reason === null ? 0 : textLength(goodbye.reason);
  const reasonSpace = goodbye.reason === null ? 0 : (1 + reasonLength + 3) & ~3;
  const length = HEADER_LENGTH + 4 * goodbye.ssrcs.length + reasonSpace;
  ensureRoom(out, offset, length);
  writeHeader(out, offset, goodbye.ssrcs.length, RTCP_GOODBYE, length);
  let position = offset + HEADER_LENGTH;
  for (const ssrc of goodbye.ssrcs) position = out.writeUInt32BE(ssrc >>> 0, position);
  if (goodbye.reason !== null) {
    out[position] = reasonLength;
    const textEnd = position + 1 + out.write(goodbye.reason, position + 1, "utf8");
    out.fill(0, textEnd, position + reasonSpace);
    position += reasonSpace;
  }
  return position;
}

const utf8 = new TextDecoder();

function readUint32(bytes: Uint8Array, offset: number): number {
  return (
    (((bytes[offset] as number) << 24) |
      ((bytes[offset + 1] as number) << 16) |
      ((bytes[offset + 2] as number) << 8) |
      (bytes[offset + 3] as number)) >>>
    0
  );
}

function readReportBlocks(bytes: Uint8Array, offset: number, count: number): ReportBlock[] {
  const reports: ReportBlock[] = [];
  for (let i = 0, position = offset; i < count; i++, position += REPORT_BLOCK_LENGTH) {
    const lost =
      ((bytes[position + 5] as number) << 16) |
      ((bytes[position + 6] as number) << 8) |
      (bytes[position + 7] as number);
    reports.push({
      ssrc: readUint32(bytes, position),
      fractionLost: bytes[position + 4] as number,
      cumulativeLost: (lost << 8) >> 8, // sign-extend the 24-bit field
      extendedHighestSequence: readUint32(bytes, position + 8),
      jitter: readUint32(bytes, position + 12),
      lastSenderReport: readUint32(bytes, position + 16),
      delaySinceLastSenderReport: readUint32(bytes, position + 20),
    });
  }
  return reports;
}

/** §6.5: chunks of items, each list ended by a null item and padded to 32 bits; null when malformed. */
function readSourceDescription(bytes: Uint8Array, start: number, end: number, count: number) {
  const chunks: SourceDescriptionChunk[] = [];
  let position = start;
  for (let i = 0; i < count; i++) {
    if (position + 4 > end) return null;
    const chunk: SourceDescriptionChunk = { ssrc: readUint32(bytes, position), cname: null };
    const itemsStart = position + 4;
    position = itemsStart;
    for (;;) {
      if (position >= end) return null;
      const itemType = bytes[position] as number;
      if (itemType === 0) break;
      if (position + 2 > end) return null;
      const itemLength = bytes[position + 1] as number;
      const textEnd = position + 2 + itemLength;
      if (textEnd > end) return null;
      if (itemType === SDES_CNAME) chunk.cname = utf8.decode(bytes.subarray(position + 2, textEnd));
      position = textEnd;
    }
    // The null item, then padding up to the next 32-bit boundary of the chunk.
    position = itemsStart + ((position - itemsStart + 4) & ~3);
    if (position > end) return null;
    chunks.push(chunk);
  }
  return chunks;
}

function readGoodbye(bytes: Uint8Array, start: number, end: number, count: number): Goodbye | null {
  if (start + 4 * count > end) return null;
  const ssrcs: number[] = [];
  for (let i = 0; i < count; i++) ssrcs.push(readUint32(bytes, start + 4 * i));
  const reasonStart = start + 4 * count;
  let reason: string | null = null;
  if (reasonStart < end) {
    const reasonLength = bytes[reasonStart] as number;
    if (reasonStart + 1 + reasonLength > end) return null;
    reason = utf8.decode(bytes.subarray(reasonStart + 1, reasonStart + 1 + reasonLength));
  }
  return { type: "BYE", ssrcs, reason };
}

/**
 * Parses one compound RTCP datagram (§6.1) into its SR, RR, SDES and BYE packets; packet types this
 * module does not know (APP, feedback, XR) are skipped. Returns null when the datagram fails the
 * validity checks of Appendix A.2 (version 2 throughout, first packet SR or RR, padding only on the
 * last packet, lengths adding up to the datagram) or a packet's content overruns its length.
 */
export function parseRtcpCompound(datagram: Uint8Array): RtcpPacket[] | null {
  const packets: RtcpPacket[] = [];
  let offset = 0;
  while (offset < datagram.length) {
    if (offset + HEADER_LENGTH > datagram.length) return null;
    const first = datagram[offset] as number;
    const packetType = datagram[offset + 1] as number;
    const length = 4 * ((((datagram[offset + 2] as number) << 8) | (datagram[offset + 3] as number)) + 1);
    let end = offset + length;
    if (first >> 6 !== RTCP_VERSION || end > datagram.length) return null;
    if (offset === 0 && packetType !== RTCP_SENDER_REPORT && packetType !== RTCP_RECEIVER_REPORT) return null;
    if (first & 0x20) {
      // §6.4.1 P: only the last packet of a compound may be padded; its last octet counts the padding.
      const padding = datagram[end - 1] as number;
      if (end !== datagram.length || padding === 0 || padding > length - HEADER_LENGTH) return null;
      end -= padding;
    }
    const count = first & 0x1f;
    const body = offset + HEADER_LENGTH;
    let packet: RtcpPacket | null = null;
    switch (packetType) {
      case RTCP_SENDER_REPORT:
        if (body + 4 + SENDER_INFO_LENGTH + REPORT_BLOCK_LENGTH * count > end) return null;
        packet = {
          type: "SR",
          ssrc: readUint32(datagram, body),
          sender: {
            ntpSeconds: readUint32(datagram, body + 4),
            ntpFraction: readUint32(datagram, body + 8),
            rtpTimestamp: readUint32(datagram, body + 12),
            packetCount: readUint32(datagram, body + 16),
            octetCount: readUint32(datagram, body + 20),
          },
          reports: readReportBlocks(datagram, body + 24, count),
        };
        break;
      case RTCP_RECEIVER_REPORT:
        if (body + 4 + REPORT_BLOCK_LENGTH * count > end) return null;
        packet = {
          type: "RR",
          ssrc: readUint32(datagram, body),
          reports: readReportBlocks(datagram, body + 4, count),
        };
        break;
      case RTCP_SOURCE_DESCRIPTION: {
        const chunks = readSourceDescription(datagram, body, end, count);
        if (chunks === null) return null;
        packet = { type: "SDES", chunks };
        break;
      }
      case RTCP_GOODBYE:
        packet = readGoodbye(datagram, body, end, count);
        if (packet === null) return null;
        break;
    }
    if (packet !== null) packets.push(packet);
    offset += length;
  }
  return packets.length > 0 ? packets : null;
}
