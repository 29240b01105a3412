import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  dtmfDigitPackets,
  parseTelephoneEvent,
  type ReceivedDigit,
  TelephoneEventReceiver,
  writeTelephoneEvent,
} from "../../../../src/telephony/media/dtmf/rfc4733.js";
import { parseRtpPacket } from "../../../../src/telephony/media/rtp/rtp-packet.js";

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ""), "hex");

/** A telephone-event payload: event, E bit, volume 10, duration. */
function payload(event: number, end: boolean, duration: number): Uint8Array {
  const bytes = new Uint8Array(4);
  writeTelephoneEvent({ event, end, volume: 10, duration }, bytes);
  return bytes;
}

function collect(): { receiver: TelephoneEventReceiver; digits: ReceivedDigit[] } {
  const digits: ReceivedDigit[] = [];
  return { receiver: new TelephoneEventReceiver((digit) => digits.push(digit)), digits };
}

describe("telephone-event payload (RFC 4733 §2.3)", () => {
  it("parses event, E bit, volume and duration", () => {
    assert.deepEqual(parseTelephoneEvent(hex("0b 8a 0320")), {
      event: 11,
      end: true,
      volume: 10,
      duration: 800,
    });
    assert.deepEqual(parseTelephoneEvent(hex("05 3f ffff")), {
      event: 5,
      end: false,
      volume: 63,
      duration: 65535,
    });
    assert.equal(parseTelephoneEvent(hex("05 0a 00")), null);
  });

  it("parses into the event object given, for a path that allocates nothing per packet", () => {
    const event = { event: 0, end: false, volume: 0, duration: 0 };
    assert.equal(parseTelephoneEvent(hex("0b 8a 0320"), event), event);
    assert.deepEqual(event, { event: 11, end: true, volume: 10, duration: 800 });
    assert.equal(parseTelephoneEvent(hex("05 3f ffff"), event), event);
    assert.deepEqual(event, { event: 5, end: false, volume: 63, duration: 65535 });
  });

  it("ignores the reserved bit and writes it as zero", () => {
    assert.equal(parseTelephoneEvent(hex("01 4a 00a0"))?.volume, 10);
    assert.deepEqual(Buffer.from(payload(1, true, 160)), hex("01 8a 00a0"));
  });
});

describe("TelephoneEventReceiver", () => {
  it("reports a digit once although its end packet is sent three times", () => {
    const { receiver, digits } = collect();
    for (const duration of [160, 320, 480]) receiver.receive(1000, payload(5, false, duration));
    for (let i = 0; i < 3; i++) receiver.receive(1000, payload(5, true, 640));
    assert.deepEqual(digits, [{ key: "5", duration: 640, endSeen: true }]);
  });

  it("reports each event by its RTP timestamp, even for the same key twice", () => {
    const { receiver, digits } = collect();
    receiver.receive(1000, payload(1, true, 800));
    receiver.receive(3000, payload(1, true, 800));
    assert.deepEqual(
      digits.map((d) => d.key),
      ["1", "1"],
    );
  });

  it("reports an event whose end packets were lost when the next event starts", () => {
    const { receiver, digits } = collect();
    receiver.receive(1000, payload(10, false, 160));
    receiver.receive(1000, payload(10, false, 320));
    receiver.receive(5000, payload(11, false, 160));
    receiver.receive(5000, payload(11, true, 480));
    assert.deepEqual(digits, [
      { key: "*", duration: 320, endSeen: false },
      { key: "#", duration: 480, endSeen: true },
    ]);
  });

  it("ignores reordered and retransmitted packets of an event already reported", () => {
    const { receiver, digits } = collect();
    receiver.receive(1000, payload(2, true, 480)); // end overtakes the updates
    receiver.receive(1000, payload(2, false, 160));
    receiver.receive(2000, payload(3, false, 160));
    receiver.receive(1000, payload(2, true, 480)); // late retransmission of the previous event
    receiver.receive(2000, payload(3, true, 320));
    assert.deepEqual(
      digits.map((d) => d.key),
      ["2", "3"],
    );
  });

  it("orders timestamps across the 32-bit wrap and skips non-DTMF events", () => {
    const { receiver, digits } = collect();
    receiver.receive(0xffffff00, payload(16, true, 160)); // hook flash
    receiver.receive(0x00000100, payload(9, true, 160));
    receiver.receive(0xffffff00, payload(7, true, 160)); // older than the current event
    receiver.receive(0x00000100, hex("09")); // truncated
    assert.deepEqual(
      digits.map((d) => d.key),
      ["9"],
    );
  });
});

describe("dtmfDigitPackets", () => {
  it("sends a marked start, updates every 20 ms and three end packets (§2.5.1)", () => {
    const packets = dtmfDigitPackets("#", { timestamp: 8000, durationMs: 100 });
    assert.deepEqual(
      packets.map((p) => [p.marker, p.timestamp, p.sendOffsetMs, Buffer.from(p.payload).toString("hex")]),
      [
        [true, 8000, 0, "0b0a00a0"],
        [false, 8000, 20, "0b0a0140"],
        [false, 8000, 40, "0b0a01e0"],
        [false, 8000, 60, "0b0a0280"],
        [false, 8000, 80, "0b8a0320"],
        [false, 8000, 100, "0b8a0320"],
        [false, 8000, 120, "0b8a0320"],
      ],
    );
  });

  it("counts durations on the clock given, and holds a long key at the 16-bit most", () => {
    const durations = (durationMs: number) =>
      dtmfDigitPackets("1", { timestamp: 0, durationMs, clockRate: 48000 }).map(
        (packet) => parseTelephoneEvent(packet.payload)?.duration,
      );
    assert.deepEqual(durations(60), [960, 1920, 2880, 2880, 2880]);
    const long = durations(2000);
    assert.equal(long[67], 65280);
    assert.ok(long.slice(68).every((duration) => duration === 0xffff));
  });

  it("is decoded by the receiver as exactly one digit", () => {
    const { receiver, digits } = collect();
    for (const packet of dtmfDigitPackets("d", { timestamp: 42, durationMs: 60, volume: 5 })) {
      receiver.receive(packet.timestamp, packet.payload);
    }
    assert.deepEqual(digits, [{ key: "D", duration: 480, endSeen: true }]);
  });

  it("rejects what is not a DTMF key", () => {
    assert.throws(() => dtmfDigitPackets("E", { timestamp: 0 }), RangeError);
  });
});

/** UDP payloads of the IPv4 packets in a classic pcap file with Ethernet link type. */
function* udpPayloads(file: Buffer): Generator<Buffer> {
  // Global header (24 octets): the magic number tells the byte order of the remaining fields.
  const magic = file.readUInt32LE(0);
  const littleEndian = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  const readUint32 = (offset: number) =>
    littleEndian ? file.readUInt32LE(offset) : file.readUInt32BE(offset);
  assert.equal(readUint32(20), 1, "link type is Ethernet");
  let offset = 24;
  while (offset + 16 <= file.length) {
    // Record header: seconds, sub-seconds, captured length, original length.
    const capturedLength = readUint32(offset + 8);
    const frame = file.subarray(offset + 16, offset + 16 + capturedLength);
    offset += 16 + capturedLength;
    if (frame.length < 14 || frame.readUInt16BE(12) !== 0x0800) continue; // IPv4 only
    const ip = frame.subarray(14);
    if (ip[9] !== 17) continue; // UDP
    const udp = ip.subarray(((ip[0] as number) & 0x0f) * 4); // IHL counts 32-bit words
    yield udp.subarray(8, udp.readUInt16BE(4));
  }
}

const SIPP_PCAP = "/usr/share/sip-tester/dtmf_2833_1.pcap";

describe("SIPp capture", () => {
  it("decodes the digit in dtmf_2833_1.pcap", (t) => {
    if (!existsSync(SIPP_PCAP)) {
      assert.notEqual(
        process.env.CI,
        "true",
        `${SIPP_PCAP} is missing: the test command installs sip-tester`,
      );
      t.skip(`${SIPP_PCAP} not present (installed by the sip-tester package)`);
      return;
    }
    const { receiver, digits } = collect();
    for (const datagram of udpPayloads(readFileSync(SIPP_PCAP))) {
      const packet = parseRtpPacket(datagram);
      // telephone-event uses a dynamic payload type and four-octet payloads.
      if (packet && packet.payloadType >= 96 && packet.payload.length === 4) {
        receiver.receive(packet.timestamp, packet.payload);
      }
    }
    assert.deepEqual(
      digits.map((d) => d.key),
      ["1"],
    );
  });
});
