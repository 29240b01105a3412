import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import dgram from "node:dgram";
import { after, describe, it } from "node:test";
import { decodeMulaw, encodeAlaw, encodeMulaw } from "../../../../src/telephony/media/codec/g711.js";
import { RtpPortAllocator } from "../../../../src/telephony/media/rtp/port-allocator.js";
import { parseRtcpCompound, type ReceiverReport } from "../../../../src/telephony/media/rtp/rtcp-packet.js";
import {
  parseRtpPacket,
  type RtpPacket,
  writeRtpPacket,
} from "../../../../src/telephony/media/rtp/rtp-packet.js";
import { RtpSession, type SrtpFailures } from "../../../../src/telephony/media/rtp/rtp-session.js";
import { NO_DROPS, type RtpSessionConfiguration } from "../../../../src/telephony/media/rtp/rtp-stream.js";
import { SrtpSender } from "../../../../src/telephony/media/rtp/srtp.js";
import { rawSocket as rawSocketIn, waitFor } from "../../../helpers/raw-udp.js";

const base = 26000 + 2 * randomInt(2500);
const allocator = new RtpPortAllocator(base, base + 199);
const openSessions: RtpSession[] = [];
const rawSockets: dgram.Socket[] = [];
const rawSocket = () => rawSocketIn(rawSockets);

after(async () => {
  await Promise.all(openSessions.map((session) => session.close()));
  for (const socket of rawSockets) socket.close();
});

async function open(rtcpIntervalMs = 60_000): Promise<RtpSession> {
  const session = await RtpSession.open({ allocator, bindAddress: "127.0.0.1", rtcpIntervalMs });
  openSessions.push(session);
  return session;
}

function configuration(
  remotePort: number,
  overrides: Partial<RtpSessionConfiguration> = {},
): RtpSessionConfiguration {
  return {
    codec: "PCMU",
    payloadType: 0,
    telephoneEventPayloadType: 101,
    remoteAddress: "127.0.0.1",
    remotePort,
    direction: "sendrecv",
    ...overrides,
  };
}

async function connectedPair(
  overrides: Partial<RtpSessionConfiguration> = {},
  rtcpIntervalMs?: number,
): Promise<[RtpSession, RtpSession]> {
  const a = await open(rtcpIntervalMs);
  const b = await open(rtcpIntervalMs);
  a.configure(configuration(b.localPort, overrides));
  b.configure(configuration(a.localPort, overrides));
  return [a, b];
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A 1 kHz sine at 8 kHz; frame k has amplitude 2000 + 1000·k so that order shows in the levels. */
function sineFrame(k: number): Int16Array {
  const frame = new Int16Array(160);
  for (let n = 0; n < 160; n++)
    frame[n] = Math.round((2000 + 1000 * k) * Math.sin((2 * Math.PI * 1000 * n) / 8000 + 0.3));
  return frame;
}

function rms(frame: Int16Array): number {
  let sum = 0;
  for (const sample of frame) sum += sample * sample;
  return Math.sqrt(sum / frame.length);
}

function correlation(a: Int16Array, b: Int16Array): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return ab / Math.sqrt(aa * bb);
}

function rtpDatagram(fields: {
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
  payloadType?: number;
}): Buffer {
  const payload = new Uint8Array(160);
  encodeMulaw(sineFrame(0), payload);
  const out = Buffer.alloc(172);
  writeRtpPacket({ marker: false, payloadType: 0, csrcs: [], ...fields }, payload, out);
  return out;
}

function rtpPackets(received: Buffer[]): RtpPacket[] {
  return received.map((datagram) => parseRtpPacket(datagram)).filter((packet) => packet !== null);
}

describe("RtpSession", () => {
  for (const codec of ["PCMU", "PCMA"] as const) {
    it(`carries a 1 kHz sine both ways in ${codec}`, async () => {
      const [a, b] = await connectedPair({ codec, payloadType: codec === "PCMU" ? 0 : 8 });
      const frameCount = 10;
      for (const [sender, receiver] of [
        [a, b],
        [b, a],
      ] as const) {
        for (let k = 0; k < frameCount; k++) sender.sendFrame(sineFrame(k));
        await waitFor(() => receiver.stats().packetsReceived >= frameCount - 1, "the frames");
        const out = new Int16Array(160);
        // The jitter buffer primes for its playout delay before the first frame.
        let kind = receiver.readFrame(out);
        while (kind !== "frame") kind = receiver.readFrame(out);
        for (let k = 0; k < frameCount; k++) {
          if (k > 0) assert.equal(receiver.readFrame(out), "frame");
          const input = sineFrame(k);
          assert.ok(correlation(input, out) > 0.99, `frame ${k} correlates`);
          assert.ok(
            Math.abs(rms(out) / rms(input) - 1) < 0.05,
            `frame ${k} keeps its level: ${rms(out)} vs ${rms(input)}`,
          );
        }
      }
      assert.equal(a.stats().packetsSent, frameCount);
      assert.equal(b.stats().packetsLost, 0);
      assert.ok(b.lastPacketAt !== null);
    });
  }

  it("under SRTP carries the sine both ways, sends nothing readable, and drops plain or foreign packets", async () => {
    const key = (fill: number) => ({
      suite: "AES_CM_128_HMAC_SHA1_80" as const,
      inline: Buffer.alloc(30, fill).toString("base64"),
    });
    const a = await open();
    const b = await open();
    a.configure(configuration(b.localPort, { srtp: { send: key(1), receive: key(2) } }));
    b.configure(configuration(a.localPort, { srtp: { send: key(2), receive: key(1) } }));
    for (let k = 0; k < 10; k++) a.sendFrame(sineFrame(k));
    await waitFor(() => b.stats().packetsReceived >= 9, "the frames");
    const out = new Int16Array(160);
    let kind = b.readFrame(out);
    while (kind !== "frame") kind = b.readFrame(out);
    assert.ok(correlation(sineFrame(0), out) > 0.99, "the first frame decrypts to the sine");

    // What goes on the wire: not the G.711 of the sine, and 10 bytes of tag longer.
    const spy = dgram.createSocket("udp4");
    rawSockets.push(spy);
    await new Promise<void>((resolve) => spy.bind(0, "127.0.0.1", resolve));
    const wire = new Promise<Buffer>((resolve) => spy.once("message", resolve));
    const tap = await open();
    tap.configure(configuration(spy.address().port, { srtp: { send: key(1), receive: key(2) } }));
    tap.sendFrame(sineFrame(0));
    const datagram = await wire;
    assert.equal(datagram.length, 12 + 160 + 10);
    const plain = new Uint8Array(160);
    encodeMulaw(sineFrame(0), plain);
    assert.notDeepEqual(new Uint8Array(datagram.subarray(12, 172)), plain);

    // A plain RTP packet (or one under another key) sent to b is dropped unheard.
    const before = b.stats().packetsReceived;
    const intruder = dgram.createSocket("udp4");
    rawSockets.push(intruder);
    const packet = Buffer.alloc(12 + 160);
    writeRtpPacket(
      { marker: false, payloadType: 0, sequenceNumber: 7, timestamp: 7, ssrc: 7, csrcs: [] },
      plain,
      packet,
    );
    await new Promise<void>((resolve) => intruder.send(packet, b.localPort, "127.0.0.1", () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(b.stats().packetsReceived, before);
  });

  it("delivers each DTMF key once, repeated keys included", async () => {
    const [a, b] = await connectedPair();
    const digits: string[] = [];
    b.on("digit", (digit) => {
      assert.ok(digit.endSeen);
      digits.push(digit.key);
    });
    assert.equal(await a.sendDigits("1122#"), true);
    await waitFor(() => digits.length >= 5, "five digits");
    await delay(200);
    assert.deepEqual(digits, ["1", "1", "2", "2", "#"]);
    // Per key: 4 updates and 3 end packets for the default 100 ms (RFC 4733 §2.5.1).
    assert.equal(a.stats().packetsSent, 5 * 7);
  });

  it("sends telephone-events on the audio stream's SSRC and sequence, suppressing audio during the event", async () => {
    const peer = await rawSocket();
    const session = await open();
    session.configure(configuration(peer.port));
    session.sendFrame(sineFrame(0));
    const sent = session.sendDigits("5");
    session.sendFrame(sineFrame(1));
    assert.equal(await sent, true);
    session.sendFrame(sineFrame(2));
    await waitFor(() => peer.received.length >= 9, "the packets");
    const packets = rtpPackets(peer.received);
    assert.deepEqual(
      packets.map((packet) => packet.payloadType),
      [0, 101, 101, 101, 101, 101, 101, 101, 0],
    );
    const first = packets[0] as RtpPacket;
    packets.forEach((packet, i) => {
      assert.equal(packet.ssrc, session.ssrc);
      assert.equal(packet.sequenceNumber, (first.sequenceNumber + i) & 0xffff);
    });
    // The event starts after the first frame; audio resumes 7 × 20 ms later.
    for (const packet of packets.slice(1, 8)) assert.equal(packet.timestamp, (first.timestamp + 160) >>> 0);
    assert.equal(packets[8]?.timestamp, (first.timestamp + 8 * 160) >>> 0);
    assert.deepEqual(
      packets.map((packet) => packet.marker),
      [true, true, false, false, false, false, false, false, false],
    );
  });

  it("waits a second for a comma between keys", async () => {
    const [a, b] = await connectedPair();
    const digits: string[] = [];
    b.on("digit", (digit) => digits.push(digit.key));
    const started = performance.now();
    assert.equal(await a.sendDigits("1,1"), true);
    assert.ok(performance.now() - started >= 900);
    await waitFor(() => digits.length >= 2, "two digits");
    assert.deepEqual(digits, ["1", "1"]);
  });

  it("refuses DTMF without a telephone-event payload type, and characters that are not keys", async () => {
    const [a] = await connectedPair({ telephoneEventPayloadType: undefined });
    assert.throws(() => a.sendDigits("1"), /telephone-event/);
    a.configure(configuration(1, { telephoneEventPayloadType: 101 }));
    assert.throws(() => a.sendDigits("1x"), RangeError);
  });

  it("latches RTP and RTCP onto the addresses packets come from (symmetric RTP)", async () => {
    const configured = await rawSocket();
    const peerRtp = await rawSocket();
    const peerRtcp = await rawSocket();
    const now = 123_456;
    const session = await RtpSession.open({
      allocator,
      bindAddress: "127.0.0.1",
      rtcpIntervalMs: 100,
      clock: () => now,
    });
    openSessions.push(session);
    session.configure(configuration(configured.port));
    session.sendFrame(sineFrame(0));
    await waitFor(() => configured.received.length === 1, "a frame at the configured address");
    assert.equal(session.lastPacketAt, null);

    for (let i = 0; i < 3; i++) {
      const datagram = rtpDatagram({ sequenceNumber: 500 + i, timestamp: 160 * i, ssrc: 42 });
      peerRtp.socket.send(datagram, session.localPort, "127.0.0.1");
    }
    await waitFor(() => session.stats().packetsReceived >= 2, "the peer's packets");
    assert.equal(session.lastPacketAt, now);
    session.sendFrame(sineFrame(1));
    await waitFor(() => rtpPackets(peerRtp.received).length >= 1, "a frame at the latched address");

    const receiverReport = Buffer.alloc(8);
    receiverReport.set([0x80, 201, 0, 1, 0, 0, 0, 42]);
    peerRtcp.socket.send(receiverReport, session.localPort + 1, "127.0.0.1");
    await waitFor(() => peerRtcp.received.length >= 1, "RTCP at the latched address");
    const report = parseRtcpCompound(peerRtcp.received[0] as Buffer);
    assert.ok(report?.[0]?.type === "SR" || report?.[0]?.type === "RR");
    assert.equal(configured.received.length, 1);
  });

  it("sends RTCP to a peer whose RTP is on port 65535 only once the peer's RTCP shows where (no port 65536)", async () => {
    const peerRtcp = await rawSocket();
    const session = await open(20);
    session.configure(configuration(65_535));
    // Reports are due every 20 ms: before, the first one threw out of its timer (ERR_SOCKET_BAD_PORT).
    await delay(200);
    const receiverReport = Buffer.alloc(8);
    receiverReport.set([0x80, 201, 0, 1, 0, 0, 0, 42]);
    peerRtcp.socket.send(receiverReport, session.localPort + 1, "127.0.0.1");
    await waitFor(() => peerRtcp.received.length >= 1, "RTCP at the latched address");
    await session.close();
  });

  it("closes without RTCP to send when the peer's RTP is on port 65535", async () => {
    const session = await open();
    session.configure(configuration(65_535));
    // Before, the BYE threw and close() rejected.
    await session.close();
  });

  it("moves to a new source only when it sends a new SSRC in sequence after the latched one went silent", async () => {
    const phone = await rawSocket();
    const moved = await rawSocket();
    const stranger = await rawSocket();
    let now = 1_000_000;
    const session = await RtpSession.open({
      allocator,
      bindAddress: "127.0.0.1",
      rtcpIntervalMs: 60_000,
      clock: () => now,
    });
    openSessions.push(session);
    session.configure(configuration(phone.port));
    const send = async (from: { socket: dgram.Socket }, ssrc: number, first: number, count: number) => {
      for (let i = 0; i < count; i++)
        from.socket.send(
          rtpDatagram({ sequenceNumber: first + i, timestamp: 160 * (first + i), ssrc }),
          session.localPort,
          "127.0.0.1",
        );
      await new Promise((resolve) => setTimeout(resolve, 50));
    };
    const sentTo = async (peer: { received: Buffer[] }) => {
      const before = rtpPackets(peer.received).length;
      session.sendFrame(sineFrame(0));
      await new Promise((resolve) => setTimeout(resolve, 50));
      return rtpPackets(peer.received).length > before;
    };
    await send(phone, 42, 100, 3);
    const heard = session.stats().packetsReceived;
    assert.ok(heard >= 2);
    assert.ok(await sentTo(phone), "latched to the phone");

    // A stranger with a new SSRC while the phone still talks: dropped, nothing moves.
    await send(stranger, 99, 1, 5);
    assert.equal(session.stats().packetsReceived, heard, "the stranger's packets are not heard");
    assert.ok(await sentTo(phone));
    // The phone's own SSRC from elsewhere, even after silence: not a move.
    now += 2_000;
    await send(stranger, 42, 103, 5);
    assert.equal(session.stats().packetsReceived, heard);
    // Out of sequence packets with a new SSRC after silence: not yet.
    await send(stranger, 77, 10, 1);
    await send(stranger, 77, 20, 1);
    await send(stranger, 77, 30, 1);
    assert.ok(await sentTo(phone));
    // The phone reappears from a new address with a new SSRC, three packets in sequence: the stream moves.
    await send(moved, 43, 500, 3);
    assert.ok(await sentTo(moved), "our audio follows the phone to its new address");
  });

  it("exchanges RTCP reports with packet counts, jitter and round-trip time", async () => {
    const [a, b] = await connectedPair({}, 150);
    const frame = sineFrame(0);
    const ticker = setInterval(() => {
      a.sendFrame(frame);
      b.sendFrame(frame);
    }, 20);
    try {
      await waitFor(
        () => [a, b].every((session) => session.stats().roundTripMs !== null),
        "round-trip times from both sides",
        20_000,
      );
    } finally {
      clearInterval(ticker);
    }
    await delay(200);
    for (const [session, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const stats = session.stats();
      assert.ok(stats.packetsSent > 0);
      assert.ok(stats.packetsReceived > 0);
      assert.ok(stats.packetsReceived >= other.stats().packetsSent - 2);
      assert.equal(stats.packetsLost, 0);
      assert.equal(stats.remoteFractionLost, 0);
      assert.ok(stats.jitterMs >= 0 && stats.jitterMs < 200, `jitter ${stats.jitterMs} ms`);
      assert.ok(stats.remoteJitterMs !== null && stats.remoteJitterMs >= 0 && stats.remoteJitterMs < 200);
      assert.ok(stats.roundTripMs !== null && stats.roundTripMs >= 0 && stats.roundTripMs < 1000);
      assert.equal(stats.fractionLost, 0);
    }
  });

  it("measures loss in a stream with gaps and reports it in RTCP", async () => {
    const peerRtp = await rawSocket();
    const peerRtcp = await rawSocket();
    // The first report comes 0.5–1.5 s after configure, well after the packets, and the next one no sooner than 0.5 s later.
    const session = await open(1000);
    session.configure(configuration(peerRtp.port, { remoteRtcpPort: peerRtcp.port }));
    const missing = new Set([105, 106, 110]);
    for (let sequenceNumber = 100; sequenceNumber < 120; sequenceNumber++) {
      if (missing.has(sequenceNumber)) continue;
      const datagram = rtpDatagram({ sequenceNumber, timestamp: 160 * sequenceNumber, ssrc: 0x1234 });
      peerRtp.socket.send(datagram, session.localPort, "127.0.0.1");
    }
    // A payload type that was not negotiated is ignored.
    peerRtp.socket.send(
      rtpDatagram({ sequenceNumber: 121, timestamp: 0, ssrc: 0x1234, payloadType: 8 }),
      session.localPort,
      "127.0.0.1",
    );
    // Probation (RFC 3550 A.1) takes the first packet, so counting starts at 101: 19 expected, 16 received.
    await waitFor(() => session.stats().packetsReceived >= 16, "the packets");
    await delay(100);
    assert.equal(session.stats().packetsReceived, 16);
    assert.equal(session.stats().packetsLost, 3);

    await waitFor(
      () => peerRtcp.received.some((datagram) => parseRtcpCompound(datagram)?.[0]?.type === "RR"),
      "a receiver report",
    );
    const report = peerRtcp.received
      .map((datagram) => parseRtcpCompound(datagram))
      .find((packets) => packets?.[0]?.type === "RR");
    const [receiverReport, description] = report ?? [];
    assert.deepEqual((receiverReport as ReceiverReport).reports[0], {
      ssrc: 0x1234,
      fractionLost: Math.floor((3 * 256) / 19),
      cumulativeLost: 3,
      extendedHighestSequence: 119,
      jitter: (receiverReport as ReceiverReport).reports[0]?.jitter,
      lastSenderReport: 0,
      delaySinceLastSenderReport: 0,
    });
    assert.equal(description?.type, "SDES");
    assert.equal(session.stats().fractionLost, Math.floor((3 * 256) / 19) / 256);
  });

  it("stops sending on hold while the timestamp keeps advancing", async () => {
    const peer = await rawSocket();
    const session = await open();
    session.configure(configuration(peer.port));
    session.sendFrame(sineFrame(0));
    for (const direction of ["recvonly", "inactive"] as const) {
      session.configure(configuration(peer.port, { direction }));
      session.sendFrame(sineFrame(1));
      session.sendFrame(sineFrame(1));
    }
    await delay(200);
    assert.equal(rtpPackets(peer.received).length, 1);
    session.configure(configuration(peer.port, { direction: "sendonly" }));
    session.sendFrame(sineFrame(2));
    await waitFor(() => peer.received.length >= 2, "the frame after the hold");
    const [first, resumed] = rtpPackets(peer.received) as [RtpPacket, RtpPacket];
    assert.equal(resumed.sequenceNumber, (first.sequenceNumber + 1) & 0xffff);
    assert.equal(resumed.timestamp, (first.timestamp + 5 * 160) >>> 0);
    assert.equal(resumed.marker, true);
    assert.equal(session.stats().packetsSent, 2);
  });

  it("plays audio sent in 30 ms packets (a=ptime is only a preference, RFC 4566 section 6)", async () => {
    const session = await open();
    const peer = await rawSocket();
    session.configure(configuration(peer.port));
    const sine = new Int16Array(240 * 10);
    for (let n = 0; n < sine.length; n++)
      sine[n] = Math.round(3000 * Math.sin((2 * Math.PI * 1000 * n) / 8000));
    const payload = new Uint8Array(240);
    const datagram = Buffer.alloc(12 + 240);
    for (let k = 0; k < 10; k++) {
      encodeMulaw(sine.subarray(240 * k, 240 * (k + 1)), payload);
      writeRtpPacket(
        {
          marker: k === 0,
          payloadType: 0,
          csrcs: [],
          sequenceNumber: 100 + k,
          timestamp: 5000 + 240 * k,
          ssrc: 77,
        },
        payload,
        datagram,
      );
      peer.socket.send(datagram, session.localPort, "127.0.0.1");
      await delay(30);
    }
    // The first packet of a new source is on probation and not counted (RFC 3550 A.1).
    await waitFor(() => session.stats().packetsReceived >= 9, "the packets");
    const out = new Int16Array(160);
    const played: Int16Array[] = [];
    for (let tick = 0; tick < 20; tick++) if (session.readFrame(out) === "frame") played.push(out.slice());
    assert.ok(played.length >= 12, `15 frames of audio in ten 30 ms packets, ${played.length} played`);
    for (const frame of played) assert.ok(rms(frame) > 1500, "each frame carries the sine");
  });

  it("does not play audio received while it is not receiving", async () => {
    const [a, b] = await connectedPair();
    b.configure(configuration(a.localPort, { direction: "sendonly" }));
    for (let k = 0; k < 6; k++) a.sendFrame(sineFrame(k));
    await waitFor(() => b.stats().packetsReceived >= 5, "the frames");
    const out = new Int16Array(160);
    for (let i = 0; i < 10; i++) assert.equal(b.readFrame(out), "silence");
  });

  it("says BYE, closes its sockets and releases its port on close, once", async () => {
    const [a, b] = await connectedPair();
    const byes: (string | null)[] = [];
    b.on("bye", (reason) => byes.push(reason));
    const allocated = allocator.allocated;
    const closing = a.close();
    assert.equal(a.close(), closing);
    await closing;
    assert.equal(allocator.allocated, allocated - 1);
    await waitFor(() => byes.length === 1, "the BYE");
    // The port can be bound again.
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(a.localPort, "127.0.0.1", resolve));
    socket.close();
    a.sendFrame(sineFrame(0));
    assert.equal(await a.sendDigits("1"), false);
  });
});

describe("RtpSession: what it receives, and what it drops", () => {
  /** An RTP datagram of frame `k` of the sine in `codec` under `payloadType`. */
  function sineDatagram(k: number, codec: "PCMU" | "PCMA", payloadType: number, ssrc = 0x5151): Buffer {
    const payload = new Uint8Array(160);
    if (codec === "PCMU") encodeMulaw(sineFrame(k), payload);
    else encodeAlaw(sineFrame(k), payload);
    const out = Buffer.alloc(12 + 160 + 16);
    const length = writeRtpPacket(
      { marker: k === 0, payloadType, sequenceNumber: 1000 + k, timestamp: 160 * k, ssrc, csrcs: [] },
      payload,
      out,
    );
    return out.subarray(0, length);
  }

  function send(socket: dgram.Socket, datagram: Buffer, port: number): Promise<void> {
    return new Promise((resolve) => socket.send(datagram, port, "127.0.0.1", () => resolve()));
  }

  it("hears every format the answer listed: a peer switching between PCMA and PCMU packet by packet", async () => {
    const peer = await rawSocket();
    const session = await open();
    session.configure(
      configuration(peer.port, {
        receiveFormats: [
          { codec: "PCMU", payloadType: 0 },
          { codec: "PCMA", payloadType: 8 },
        ],
      }),
    );
    const frames = 10;
    for (let k = 0; k < frames; k++)
      await send(
        peer.socket,
        sineDatagram(k, k % 2 === 0 ? "PCMA" : "PCMU", k % 2 === 0 ? 8 : 0),
        session.localPort,
      );
    // Probation (RFC 3550 A.1) takes the first packet.
    await waitFor(() => session.stats().packetsReceived >= frames - 1, "the packets");
    const out = new Int16Array(160);
    let kind = session.readFrame(out);
    while (kind !== "frame") kind = session.readFrame(out);
    for (let k = 0; k < frames; k++) {
      assert.ok(
        correlation(sineFrame(k), out) > 0.99,
        `frame ${k} (${k % 2 === 0 ? "PCMA" : "PCMU"}) is the sine`,
      );
      if (k < frames - 1) assert.equal(session.readFrame(out), "frame");
    }
    assert.deepEqual(session.stats().dropped, NO_DROPS);
  });

  it("relays each packet from its own law: PCMA received where PCMU was chosen goes out as PCMU", async () => {
    const caller = await rawSocket();
    const far = await rawSocket();
    const receiving = await open();
    const relaying = await open();
    receiving.configure(
      configuration(caller.port, {
        receiveFormats: [
          { codec: "PCMU", payloadType: 0 },
          { codec: "PCMA", payloadType: 8 },
        ],
      }),
    );
    relaying.configure(configuration(far.port));
    receiving.relayTo(relaying);
    for (let k = 0; k < 4; k++) await send(caller.socket, sineDatagram(k, "PCMA", 8), receiving.localPort);
    await waitFor(() => far.received.length >= 4, "the relayed packets");
    rtpPackets(far.received).forEach((relayed, k) => {
      assert.equal(relayed.payloadType, 0);
      const samples = new Int16Array(160);
      decodeMulaw(relayed.payload, samples);
      assert.ok(correlation(sineFrame(k), samples) > 0.99, `relayed frame ${k} is the sine in PCMU`);
    });
  });

  it("counts what it drops by reason: unknown payload types, strangers, malformed, jitter-buffer overflow", async () => {
    const peer = await rawSocket();
    const stranger = await rawSocket();
    const session = await open();
    // Nothing negotiated yet: whoever sends is unknown.
    await send(stranger.socket, sineDatagram(0, "PCMU", 0, 0x77), session.localPort);
    await waitFor(() => session.stats().dropped.unknownSource === 1, "the packet before the negotiation");
    session.configure(configuration(peer.port));
    for (let k = 0; k < 30; k++) await send(peer.socket, sineDatagram(k, "PCMU", 0), session.localPort);
    for (const payloadType of [8, 18, 96])
      await send(peer.socket, sineDatagram(30, "PCMA", payloadType), session.localPort);
    // The stream latched onto the peer: the stranger's packets, even in its SSRC, are not heard.
    for (let k = 31; k < 33; k++) await send(stranger.socket, sineDatagram(k, "PCMU", 0), session.localPort);
    await send(peer.socket, Buffer.from([0x80, 0, 0, 1]), session.localPort);
    await waitFor(() => session.stats().dropped.malformed === 1, "the malformed packet");
    assert.equal(session.stats().packetsReceived, 29);
    // 30 frames buffered and none played: playout trims back to its delay.
    const out = new Int16Array(160);
    for (let tick = 0; tick < 5; tick++) session.readFrame(out);
    const { dropped } = session.stats();
    assert.equal(dropped.unknownPayloadType, 3);
    assert.equal(dropped.unknownSource, 3);
    assert.equal(dropped.malformed, 1);
    assert.ok(dropped.jitterBufferOverflow >= 20, `${dropped.jitterBufferOverflow} frames trimmed`);
    assert.equal(dropped.srtpAuthentication + dropped.srtpReplay, 0);
  });

  it("under SRTP counts authentication failures and replays, and reports failures at once, then at most every 10 s", async () => {
    const key = { suite: "AEAD_AES_128_GCM" as const, inline: Buffer.alloc(28, 5).toString("base64") };
    const peer = await rawSocket();
    const intruder = await rawSocket();
    let now = 1_000;
    const session = await RtpSession.open({ allocator, bindAddress: "127.0.0.1", clock: () => now });
    openSessions.push(session);
    session.configure(configuration(peer.port, { srtp: { send: key, receive: key } }));
    const reports: SrtpFailures[] = [];
    session.on("srtpAuthenticationFailed", (failures) => reports.push(failures));

    const sender = new SrtpSender(key);
    const genuine = sineDatagram(0, "PCMU", 0);
    const protectedPacket = Buffer.alloc(genuine.length + sender.overhead);
    genuine.copy(protectedPacket);
    sender.protectRtp(protectedPacket, genuine.length);
    await send(peer.socket, protectedPacket, session.localPort);
    await send(peer.socket, protectedPacket, session.localPort);
    await waitFor(() => session.stats().dropped.srtpReplay === 1, "the replay");

    // Plain RTP, and SRTCP under another key: neither authenticates.
    for (let k = 1; k <= 3; k++) await send(intruder.socket, sineDatagram(k, "PCMU", 0), session.localPort);
    const forged = new SrtpSender({ ...key, inline: Buffer.alloc(28, 6).toString("base64") }).protectRtcp(
      Buffer.from([0x80, 201, 0, 1, 0, 0, 0, 42]),
    );
    await send(intruder.socket, forged, session.localPort + 1);
    await waitFor(() => session.stats().dropped.srtpAuthentication === 4, "the failures");
    assert.deepEqual(reports, [{ address: "127.0.0.1", port: intruder.port, count: 1 }]);

    now += 10_000;
    await send(intruder.socket, sineDatagram(4, "PCMU", 0), session.localPort);
    await waitFor(() => reports.length === 2, "the next report");
    assert.deepEqual(reports[1], { address: "127.0.0.1", port: intruder.port, count: 4 });
    assert.equal(session.stats().packetsReceived, 0, "the probation packet is the only genuine one");
  });
});
