import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  msToNtpShort,
  ntpMiddle32,
  ntpShortToMs,
  ntpTimestampFromUnixMs,
  parseRtcpCompound,
  type ReceiverReport,
  type SenderReport,
  writeGoodbye,
  writeReceiverReport,
  writeSenderReport,
  writeSourceDescription,
} from "../../../../src/telephony/media/rtp/rtcp-packet.js";

function hex(text: string): Buffer {
  return Buffer.from(text.replace(/\s+/g, ""), "hex");
}

function written(write: (out: Buffer) => number): Buffer {
  const out = Buffer.alloc(1500);
  return out.subarray(0, write(out));
}

const receiverReport: ReceiverReport = {
  type: "RR",
  ssrc: 0x01020304,
  reports: [
    {
      ssrc: 0x0a0b0c0d,
      fractionLost: 0x40,
      cumulativeLost: -2,
      extendedHighestSequence: 0x00010005,
      jitter: 0x20,
      lastSenderReport: 0x12345678,
      delaySinceLastSenderReport: 0x00018000,
    },
  ],
};
// V=2 RC=1, PT=201, length 7 words − 1; the block with cumulative lost −2 as 24-bit two's complement.
const receiverReportBytes = hex(`
  81 c9 00 07  01 02 03 04
  0a 0b 0c 0d  40 ff ff fe  00 01 00 05  00 00 00 20  12 34 56 78  00 01 80 00`);

const senderReport: SenderReport = {
  type: "SR",
  ssrc: 0xdeadbeef,
  sender: {
    ntpSeconds: 0xe0000001,
    ntpFraction: 0x80000000,
    rtpTimestamp: 1000,
    packetCount: 5,
    octetCount: 800,
  },
  reports: [],
};
// V=2 RC=0, PT=200, length 7 words − 1: SSRC, NTP msw and lsw, RTP timestamp, packet and octet counts.
const senderReportBytes = hex(`
  80 c8 00 06  de ad be ef  e0 00 00 01  80 00 00 00  00 00 03 e8  00 00 00 05  00 00 03 20`);

// SC=1, PT=202, 4 words − 1: chunk SSRC, CNAME item (type 1, length 2, "ab"), null item padded to 32 bits.
const sourceDescriptionBytes = hex("81 ca 00 03  01 02 03 04  01 02 61 62  00 00 00 00");

// SC=1, PT=203, 3 words − 1: the source, then reason length 3 and "bye".
const goodbyeBytes = hex("81 cb 00 02  01 02 03 04  03 62 79 65");

describe("RTCP packet writers", () => {
  it("writes a receiver report with a report block (RFC 3550 §6.4.2)", () => {
    assert.deepEqual(
      written((out) => writeReceiverReport(receiverReport, out)),
      receiverReportBytes,
    );
  });

  it("writes a sender report (§6.4.1)", () => {
    assert.deepEqual(
      written((out) => writeSenderReport(senderReport, out)),
      senderReportBytes,
    );
  });

  it("writes an SDES CNAME chunk, null-terminated and padded to 32 bits (§6.5)", () => {
    const chunks = [{ ssrc: 0x01020304, cname: "ab" }];
    assert.deepEqual(
      written((out) => writeSourceDescription({ type: "SDES", chunks }, out)),
      sourceDescriptionBytes,
    );
    // Three text octets leave room for the null item in the same word: 2 + 3 + 1 = 6 → 8 octets.
    const odd = written((out) =>
      writeSourceDescription({ type: "SDES", chunks: [{ ssrc: 1, cname: "abc" }] }, out),
    );
    assert.deepEqual(odd, hex("81 ca 00 03  00 00 00 01  01 03 61 62  63 00 00 00"));
  });

  it("writes BYE with and without a reason (§6.6)", () => {
    assert.deepEqual(
      written((out) => writeGoodbye({ type: "BYE", ssrcs: [0x01020304], reason: "bye" }, out)),
      goodbyeBytes,
    );
    assert.deepEqual(
      written((out) => writeGoodbye({ type: "BYE", ssrcs: [0x01020304], reason: null }, out)),
      hex("81 cb 00 01  01 02 03 04"),
    );
  });

  it("writes consecutive packets of a compound at the given offset", () => {
    const compound = written((out) => {
      const offset = writeReceiverReport(receiverReport, out);
      return writeGoodbye({ type: "BYE", ssrcs: [0x01020304], reason: "bye" }, out, offset);
    });
    assert.deepEqual(compound, Buffer.concat([receiverReportBytes, goodbyeBytes]));
  });

  it("refuses a buffer too small for the packet", () => {
    assert.throws(() => writeSenderReport(senderReport, Buffer.alloc(27)), RangeError);
  });
});

describe("parseRtcpCompound", () => {
  it("parses a compound RR, SDES and BYE", () => {
    const parsed = parseRtcpCompound(
      Buffer.concat([receiverReportBytes, sourceDescriptionBytes, goodbyeBytes]),
    );
    assert.deepEqual(parsed, [
      receiverReport,
      { type: "SDES", chunks: [{ ssrc: 0x01020304, cname: "ab" }] },
      { type: "BYE", ssrcs: [0x01020304], reason: "bye" },
    ]);
  });

  it("parses a sender report and sign-extends the cumulative loss", () => {
    assert.deepEqual(parseRtcpCompound(senderReportBytes), [senderReport]);
    const positive = Buffer.from(receiverReportBytes);
    positive.set([0x7f, 0xff, 0xff], 13);
    const [parsed] = parseRtcpCompound(positive) ?? [];
    assert.equal(parsed?.type, "RR");
    assert.equal((parsed as ReceiverReport).reports[0]?.cumulativeLost, 0x7fffff);
  });

  it("skips SDES items other than CNAME and packet types it does not know", () => {
    // RR without blocks; SDES with a NAME item (type 2) before CNAME; an APP packet (PT 204).
    const datagram = hex(`
      80 c9 00 01  00 00 00 07
      81 ca 00 03  00 00 00 07  02 01 78 01  02 61 62 00
      80 cc 00 02  00 00 00 07  74 65 73 74`);
    assert.deepEqual(parseRtcpCompound(datagram), [
      { type: "RR", ssrc: 7, reports: [] },
      { type: "SDES", chunks: [{ ssrc: 7, cname: "ab" }] },
    ]);
  });

  it("accepts padding on the last packet", () => {
    // BYE without reason plus 4 octets of padding, the last one counting them; length covers them.
    const datagram = hex("80 c9 00 01  00 00 00 07  a1 cb 00 02  00 00 00 07  00 00 00 04");
    assert.deepEqual(parseRtcpCompound(datagram), [
      { type: "RR", ssrc: 7, reports: [] },
      { type: "BYE", ssrcs: [7], reason: null },
    ]);
  });

  it("round-trips what the writers produce", () => {
    const compound = written((out) => {
      let offset = writeSenderReport({ ...senderReport, reports: receiverReport.reports }, out);
      offset = writeSourceDescription(
        { type: "SDES", chunks: [{ ssrc: 9, cname: "bridgeline@example" }] },
        out,
        offset,
      );
      return writeGoodbye({ type: "BYE", ssrcs: [9, 10], reason: "hang up" }, out, offset);
    });
    assert.deepEqual(parseRtcpCompound(compound), [
      { ...senderReport, reports: receiverReport.reports },
      { type: "SDES", chunks: [{ ssrc: 9, cname: "bridgeline@example" }] },
      { type: "BYE", ssrcs: [9, 10], reason: "hang up" },
    ]);
  });

  const rr = "80 c9 00 01  00 00 00 07";
  const malformed: [string, string][] = [
    ["an empty datagram", ""],
    ["a truncated header", "80 c9 00"],
    ["version 1", "40 c9 00 01  00 00 00 07"],
    ["a compound starting with SDES (§6.1)", "81 ca 00 03  01 02 03 04  01 02 61 62  00 00 00 00"],
    ["a length beyond the datagram", "80 c9 00 02  00 00 00 07"],
    ["trailing octets shorter than a header", `${rr} 00 00`],
    ["a report count beyond the length", "81 c9 00 01  00 00 00 07"],
    ["a sender report without sender info", "80 c8 00 01  00 00 00 07"],
    ["padding on a packet that is not the last", `a0 c9 00 01  00 00 00 01  ${goodbyeBytes.toString("hex")}`],
    ["a padding count of zero", "a0 c9 00 01  00 00 00 00"],
    ["a padding count beyond the packet", "a0 c9 00 01  00 00 00 09"],
    ["an SDES chunk without its null item", `${rr} 81 ca 00 02  00 00 00 07  01 02 61 62`],
    ["an SDES item overrunning the packet", `${rr} 81 ca 00 02  00 00 00 07  01 09 61 62`],
    ["an SDES chunk count beyond the packet", `${rr} 82 ca 00 03  00 00 00 07  01 01 61 00`],
    ["a BYE source count beyond the packet", `${rr} 82 cb 00 01  00 00 00 07`],
    ["a BYE reason overrunning the packet", `${rr} 81 cb 00 02  00 00 00 07  09 62 79 65`],
  ];
  for (const [what, bytes] of malformed) {
    it(`returns null for ${what}`, () => {
      assert.equal(parseRtcpCompound(hex(bytes)), null);
    });
  }
});

describe("NTP timestamps", () => {
  it("converts Unix milliseconds to NTP seconds and fraction", () => {
    // 2 208 988 800 s from 1900 to 1970 = 0x83aa7e80.
    assert.deepEqual(ntpTimestampFromUnixMs(0), { seconds: 0x83aa7e80, fraction: 0 });
    assert.deepEqual(ntpTimestampFromUnixMs(1500), { seconds: 0x83aa7e81, fraction: 0x80000000 });
  });

  it("takes the middle 32 bits for LSR (§6.4.1)", () => {
    assert.equal(ntpMiddle32({ seconds: 0x83aa7e81, fraction: 0x80004321 }), 0x7e818000);
  });

  it("converts between milliseconds and 1/65536 s units", () => {
    assert.equal(msToNtpShort(1000), 65536);
    assert.equal(msToNtpShort(500), 32768);
    assert.equal(ntpShortToMs(0x18000), 1500);
  });
});
