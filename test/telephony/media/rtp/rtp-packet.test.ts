import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRtpPacket, writeRtpPacket } from "../../../../src/telephony/media/rtp/rtp-packet.js";

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ""), "hex");

describe("parseRtpPacket", () => {
  it("parses a plain PCMU packet", () => {
    const packet = parseRtpPacket(hex("80 00 1234 000000a0 deadbeef ff ff 7f"));
    assert.deepEqual(packet && { ...packet, payload: [...packet.payload] }, {
      marker: false,
      payloadType: 0,
      sequenceNumber: 0x1234,
      timestamp: 160,
      ssrc: 0xdeadbeef,
      csrcs: [],
      extension: null,
      payload: [0xff, 0xff, 0x7f],
    });
  });

  it("parses marker, payload type, CSRCs, a header extension and padding", () => {
    // V=2 P=1 X=1 CC=2 | M=1 PT=101 | seq 65535 | ts 0xffffffff | ssrc 1 | csrc 2, 3 |
    // extension profile 0xbede, 1 word | payload 01 8a 00 a0 | padding 3 octets (00 00 03)
    const datagram = hex("b2 e5 ffff ffffffff 00000001 00000002 00000003 bede 0001 11223344 018a00a0 000003");
    const packet = parseRtpPacket(datagram);
    assert.ok(packet);
    assert.equal(packet.marker, true);
    assert.equal(packet.payloadType, 101);
    assert.equal(packet.sequenceNumber, 65535);
    assert.equal(packet.timestamp, 0xffffffff);
    assert.equal(packet.ssrc, 1);
    assert.deepEqual(packet.csrcs, [2, 3]);
    assert.equal(packet.extension?.profile, 0xbede);
    assert.deepEqual([...(packet.extension?.data ?? [])], [0x11, 0x22, 0x33, 0x44]);
    assert.deepEqual([...packet.payload], [0x01, 0x8a, 0x00, 0xa0]);
  });

  it("accepts an empty payload and padding that fills the packet after the header", () => {
    assert.equal(parseRtpPacket(hex("80 00 0001 00000000 00000001"))?.payload.length, 0);
    assert.equal(parseRtpPacket(hex("a0 00 0001 00000000 00000001 00000004"))?.payload.length, 0);
  });

  it("returns null for malformed packets", () => {
    const malformed = {
      empty: "",
      "shorter than the fixed header": "80 00 0001 00000000 000000",
      "version 1": "40 00 0001 00000000 00000001 ff",
      "version 0 (STUN-like)": "00 01 0001 00000000 00000001 ff",
      "CSRC list beyond the end": "82 00 0001 00000000 00000001 00000002",
      "extension header cut short": "90 00 0001 00000000 00000001 bede",
      "extension longer than the packet": "90 00 0001 00000000 00000001 bede 0002 11223344",
      "padding count zero": "a0 00 0001 00000000 00000001 ff 00",
      "padding into the header": "a0 00 0001 00000000 00000001 ff 03",
    };
    for (const [name, bytes] of Object.entries(malformed))
      assert.equal(parseRtpPacket(hex(bytes)), null, name);
  });
});

describe("writeRtpPacket", () => {
  it("fills a preallocated buffer and round-trips through the parser", () => {
    const out = Buffer.alloc(1500);
    const header = {
      marker: true,
      payloadType: 8,
      sequenceNumber: 0xabcd,
      timestamp: 0x80000000,
      ssrc: 0xcafef00d,
      csrcs: [7],
    };
    const length = writeRtpPacket(header, Uint8Array.of(0xd5, 0xd5), out);
    assert.equal(length, 18);
    assert.deepEqual(out.subarray(0, length), hex("81 88 abcd 80000000 cafef00d 00000007 d5d5"));
    const parsed = parseRtpPacket(out.subarray(0, length));
    assert.deepEqual(parsed && { ...parsed, payload: [...parsed.payload] }, {
      ...header,
      extension: null,
      payload: [0xd5, 0xd5],
    });
  });

  it("refuses a buffer that is too small", () => {
    const header = { marker: false, payloadType: 0, sequenceNumber: 1, timestamp: 0, ssrc: 1, csrcs: [] };
    assert.throws(() => writeRtpPacket(header, new Uint8Array(160), Buffer.alloc(100)), RangeError);
  });
});
