import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import type dgram from "node:dgram";
import { after, describe, it } from "node:test";
import { createEncoder, MAX_ENCODED_FRAME_BYTES } from "../../../../src/telephony/media/codec/audio-codec.js";
import { decodeMulaw, encodeMulaw } from "../../../../src/telephony/media/codec/g711.js";
import { G722Encoder } from "../../../../src/telephony/media/codec/g722.js";
import { OpusDecoder, OpusEncoder } from "../../../../src/telephony/media/codec/opus.js";
import { parseTelephoneEvent } from "../../../../src/telephony/media/dtmf/rfc4733.js";
import { RtpPortAllocator } from "../../../../src/telephony/media/rtp/port-allocator.js";
import {
  parseRtpPacket,
  type RtpPacket,
  writeRtpPacket,
} from "../../../../src/telephony/media/rtp/rtp-packet.js";
import { RtpSession } from "../../../../src/telephony/media/rtp/rtp-session.js";
import type { RtpSessionConfiguration } from "../../../../src/telephony/media/rtp/rtp-stream.js";
import { ToneGenerator, toneAmplitude } from "../../../helpers/audio.js";
import { rawSocket as rawSocketIn, waitFor } from "../../../helpers/raw-udp.js";

const base = 36000 + 2 * randomInt(2000);
const allocator = new RtpPortAllocator(base, base + 199);
const openSessions: RtpSession[] = [];
const rawSockets: dgram.Socket[] = [];
const rawSocket = () => rawSocketIn(rawSockets);

after(async () => {
  await Promise.all(openSessions.map((session) => session.close()));
  for (const socket of rawSockets) socket.close();
});

async function open(): Promise<RtpSession> {
  const session = await RtpSession.open({ allocator, bindAddress: "127.0.0.1", rtcpIntervalMs: 60_000 });
  openSessions.push(session);
  return session;
}

/** The configurations of the three wideband-capable formats, sending the named one. */
const FORMATS = {
  G722: { codec: "G722", payloadType: 9 },
  opus: { codec: "opus", payloadType: 111, opus: { useInbandFec: true } },
  PCMU: { codec: "PCMU", payloadType: 0 },
} as const;

function configuration(
  remotePort: number,
  overrides: Partial<RtpSessionConfiguration> = {},
): RtpSessionConfiguration {
  return {
    ...FORMATS.PCMU,
    telephoneEventPayloadType: 101,
    remoteAddress: "127.0.0.1",
    remotePort,
    direction: "sendrecv",
    ...overrides,
  };
}

function send(socket: dgram.Socket, datagram: Uint8Array, port: number): Promise<void> {
  return new Promise((resolve) => socket.send(datagram, port, "127.0.0.1", () => resolve()));
}

function rtpDatagram(
  payloadType: number,
  sequenceNumber: number,
  timestamp: number,
  payload: Uint8Array,
  marker = false,
): Buffer {
  const out = Buffer.alloc(12 + payload.length);
  writeRtpPacket({ marker, payloadType, sequenceNumber, timestamp, ssrc: 0x600d, csrcs: [] }, payload, out);
  return out;
}

function rtpPackets(received: Buffer[]): RtpPacket[] {
  return received.map((datagram) => parseRtpPacket(datagram)).filter((packet) => packet !== null);
}

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / samples.length);
}

/** A tone at a quarter of full scale (-12 dBFS peak): amplitude 8192. */
const TONE_AMPLITUDE = 0.25;

/**
 * Plays `count` 20 ms ticks to `receiver`: each tick `sendTick(k)` sends (or, returning false, does
 * not send) frame k, and once it arrived the receiver's next frame is read. Returns the frames read
 * from the first one played (the jitter buffer primes first) to the last, with their kinds.
 */
async function playThrough(
  receiver: RtpSession,
  count: number,
  sendTick: (k: number) => Promise<boolean> | boolean,
): Promise<{ frames: Int16Array[]; kinds: string[] }> {
  let decoded = 0;
  receiver.onDecodedAudio = () => {
    decoded++;
  };
  const frames: Int16Array[] = [];
  const kinds: string[] = [];
  const out = new Int16Array(receiver.audioRate / 50);
  const read = () => {
    const kind = receiver.readFrame(out);
    if (kind === "frame" || frames.length > 0) {
      frames.push(out.slice());
      kinds.push(kind);
    }
  };
  for (let k = 0; k < count; k++) {
    const before = decoded;
    if (await sendTick(k)) await waitFor(() => decoded > before, `frame ${k}`);
    read();
  }
  // What the playout delay (3 frames) still holds.
  for (let tick = 0; tick < 3; tick++) read();
  receiver.onDecodedAudio = undefined;
  return { frames, kinds };
}

describe("RtpSession in wideband: G.722 and Opus", () => {
  for (const codec of ["G722", "opus"] as const) {
    it(`carries a 6 kHz tone at 16 kHz in ${codec} from one session to another`, async () => {
      const a = await open();
      const b = await open();
      a.configure(configuration(b.localPort, FORMATS[codec]));
      b.configure(configuration(a.localPort, FORMATS[codec]));
      assert.equal(a.audioRate, 16000);
      assert.equal(b.audioRate, 16000);
      const generator = new ToneGenerator(6000, TONE_AMPLITUDE, 16000);
      const frame = new Int16Array(320);
      const { frames, kinds } = await playThrough(b, 40, (k) => {
        a.sendFrame(generator.fill(frame));
        return k >= 0;
      });
      assert.ok(
        kinds.slice(0, 40).every((kind) => kind === "frame"),
        kinds.join(),
      );
      // Past the codec's start-up: every frame holds the tone at its level.
      for (const [index, heard] of frames.slice(5, 40).entries()) {
        const amplitude = toneAmplitude(heard, 6000, 16000);
        assert.ok(Math.abs(amplitude / 8192 - 1) < 0.15, `frame ${index + 5}: 6 kHz at ${amplitude}`);
      }
      // The RTP clock: G.722's 8 kHz (160 a packet), Opus's 48 kHz (960).
      const ticks = codec === "opus" ? 960 : 160;
      const peer = await rawSocket();
      a.configure(configuration(peer.port, FORMATS[codec]));
      a.sendFrame(frame);
      a.sendFrame(frame);
      await waitFor(() => peer.received.length === 2, "two packets");
      const [first, second] = rtpPackets(peer.received) as [RtpPacket, RtpPacket];
      assert.equal(second.timestamp - first.timestamp, ticks);
      assert.equal(first.payloadType, FORMATS[codec].payloadType);
    });
  }

  it("sends 16 kHz frames as PCMU downsampled: a 6 kHz tone is gone, a 1 kHz one comes through", async () => {
    const a = await open();
    const b = await open();
    // a sends PCMU but may receive G.722, so it works at 16 kHz; b is narrowband throughout.
    a.configure(configuration(b.localPort, { receiveFormats: [FORMATS.G722, FORMATS.PCMU] }));
    b.configure(configuration(a.localPort));
    assert.equal(a.audioRate, 16000);
    assert.equal(b.audioRate, 8000);
    assert.throws(() => a.sendFrame(new Int16Array(160)), RangeError);
    for (const [hertz, heard] of [
      [6000, false],
      [1000, true],
    ] as const) {
      const generator = new ToneGenerator(hertz, TONE_AMPLITUDE, 16000);
      const frame = new Int16Array(320);
      const { frames } = await playThrough(b, 12, () => {
        a.sendFrame(generator.fill(frame));
        return true;
      });
      for (const received of frames.slice(2, 12)) {
        assert.equal(received.length, 160);
        if (heard) assert.ok(Math.abs(toneAmplitude(received, 1000) / 8192 - 1) < 0.1, "1 kHz through PCMU");
        // Above 4 kHz nothing is left, and nothing folds down (6 kHz would alias to 2 kHz).
        else assert.ok(rms(received) < 30, `6 kHz through PCMU leaves ${rms(received)} RMS`);
      }
    }
  });

  it("hears a peer switching between G.722 and PCMU packet by packet, PCMU upsampled", async () => {
    const peer = await rawSocket();
    const session = await open();
    session.configure(
      configuration(peer.port, { ...FORMATS.G722, receiveFormats: [FORMATS.G722, FORMATS.PCMU] }),
    );
    assert.equal(session.audioRate, 16000);
    // One tone, 1 kHz (G.711 carries nothing above 4 kHz), generated at both rates in step.
    const wide = new ToneGenerator(1000, TONE_AMPLITUDE, 16000);
    const narrow = new ToneGenerator(1000, TONE_AMPLITUDE, 8000);
    const wideFrame = new Int16Array(320);
    const narrowFrame = new Int16Array(160);
    const g722 = new G722Encoder();
    const payload = new Uint8Array(160);
    const { frames } = await playThrough(session, 30, async (k) => {
      wide.fill(wideFrame);
      narrow.fill(narrowFrame);
      // Both on an 8 kHz clock: 160 ticks a packet either way.
      if (k % 2 === 0) g722.encode(wideFrame, payload);
      else encodeMulaw(narrowFrame, payload);
      await send(peer.socket, rtpDatagram(k % 2 === 0 ? 9 : 0, 100 + k, 160 * k, payload), session.localPort);
      return true;
    });
    assert.equal(frames[0]?.length, 320);
    for (const [index, heard] of frames.slice(2, 30).entries()) {
      const amplitude = toneAmplitude(heard, 1000, 16000);
      assert.ok(Math.abs(amplitude / 8192 - 1) < 0.15, `frame ${index + 2}: 1 kHz at ${amplitude}`);
    }
    assert.equal(session.stats().dropped.unknownPayloadType, 0);
  });

  it("rebuilds every 20th Opus packet, dropped, from the next one's FEC: no frame falls silent", async () => {
    const peer = await rawSocket();
    const session = await open();
    session.configure(configuration(peer.port, FORMATS.opus));
    // A steady low tone reads as background to libopus's voice detector, which then codes no FEC
    // data; a 6 kHz one (measured) has FEC data in every packet.
    const generator = new ToneGenerator(6000, TONE_AMPLITUDE, 16000);
    const frame = new Int16Array(320);
    const encoder = new OpusEncoder({
      sampleRate: 16000,
      bitrate: 24_000,
      inbandFec: true,
      expectedLossPercent: 10,
    });
    const packet = new Uint8Array(MAX_ENCODED_FRAME_BYTES);
    const lost = (k: number) => k % 20 === 10;
    const count = 100;
    const { frames, kinds } = await playThrough(session, count, async (k) => {
      const length = encoder.encode(generator.fill(frame), packet);
      if (lost(k)) return false;
      await send(
        peer.socket,
        rtpDatagram(111, 7000 + k, 960 * k, packet.subarray(0, length), k === 0),
        session.localPort,
      );
      return true;
    });
    encoder.dispose();
    const dropped = Array.from({ length: count }, (_, k) => k).filter(lost).length;
    const stats = session.stats();
    assert.equal(stats.framesRecovered, dropped, "each lost frame rebuilt from FEC data");
    assert.equal(stats.framesConcealed, 0, "none concealed, by libopus or by the jitter buffer");
    assert.equal(stats.packetsLost, dropped);
    assert.ok(
      kinds.slice(0, count).every((kind) => kind === "frame"),
      kinds.join(),
    );
    // The tone's level frame by frame, the rebuilt frames included.
    for (const [k, heard] of frames.slice(5, count).entries()) {
      const level = toneAmplitude(heard, 6000, 16000) / 8192;
      assert.ok(
        level > 0.7 && level < 1.3,
        `frame ${k + 5}${lost(k + 5) ? " (lost)" : ""} at ${level} of the tone`,
      );
    }
  });

  it("conceals Opus frames lost in a row with libopus before rebuilding the last from FEC, and drops packets that come after", async () => {
    const peer = await rawSocket();
    const session = await open();
    session.configure(configuration(peer.port, FORMATS.opus));
    const generator = new ToneGenerator(300, TONE_AMPLITUDE, 16000);
    const encoder = new OpusEncoder({
      sampleRate: 16000,
      bitrate: 24_000,
      inbandFec: true,
      expectedLossPercent: 10,
    });
    const frame = new Int16Array(320);
    const packet = new Uint8Array(MAX_ENCODED_FRAME_BYTES);
    const packets: Uint8Array[] = [];
    for (let k = 0; k < 30; k++) packets.push(packet.slice(0, encoder.encode(generator.fill(frame), packet)));
    encoder.dispose();
    let decoded = 0;
    session.onDecodedAudio = (_, count, sampleRate) => {
      assert.equal(sampleRate, 16000);
      decoded += count;
    };
    const deliver = async (k: number) => {
      await send(
        peer.socket,
        rtpDatagram(111, 500 + k, 960 * k, packets[k] as Uint8Array),
        session.localPort,
      );
    };
    for (let k = 0; k < 10; k++) await deliver(k);
    // Packets 10-12 are lost; 13 arrives: three frames stand in (10 and 11 concealed, 12 from FEC), then 13.
    await deliver(13);
    await waitFor(() => decoded === 14 * 320, "the audio up to frame 13");
    // 12 arrives late: its audio was rebuilt already.
    await deliver(12);
    await deliver(14);
    await waitFor(() => decoded === 15 * 320, "frame 14");
    let stats = session.stats();
    assert.equal(stats.framesConcealed, 2);
    assert.equal(stats.framesRecovered, 1);
    assert.equal(stats.packetsLate, 1);
    // A key pressed: the sender sends an event instead of audio (RFC 4733 §2.5.1.1), and the gap
    // it leaves before frame 20 is no loss.
    const event = Uint8Array.of(1, 0x8a, 0x0f, 0x00);
    await send(peer.socket, rtpDatagram(101, 515, 960 * 15, event, true), session.localPort);
    await deliver(20);
    await waitFor(() => decoded === 16 * 320, "frame 20");
    stats = session.stats();
    assert.equal(stats.framesConcealed, 2);
    assert.equal(stats.framesRecovered, 1);
  });

  it("sends DTMF beside Opus on its 48 kHz clock, and hears keys on every telephone-event payload type", async () => {
    const peer = await rawSocket();
    const session = await open();
    session.configure(configuration(peer.port, FORMATS.opus));
    const frame = new Int16Array(320);
    session.sendFrame(frame);
    assert.equal(await session.sendDigits("5"), true);
    session.sendFrame(frame);
    await waitFor(() => peer.received.length >= 9, "the packets");
    const packets = rtpPackets(peer.received);
    const first = packets[0] as RtpPacket;
    const events = packets.slice(1, 8);
    // RFC 4733 §2.1: the event's timestamp and durations are on the audio's clock, 960 a packet.
    assert.deepEqual(
      events.map((event) => parseTelephoneEvent(event.payload)?.duration),
      [960, 1920, 2880, 3840, 4800, 4800, 4800],
    );
    for (const event of events) assert.equal(event.timestamp, first.timestamp + 960);
    assert.equal(packets[8]?.timestamp, first.timestamp + 8 * 960);

    // A session that takes keys at 101 (48 kHz, beside Opus) and at 100 (8 kHz, beside PCMU).
    const a = await open();
    const b = await open();
    b.configure(
      configuration(a.localPort, {
        ...FORMATS.opus,
        receiveFormats: [FORMATS.opus, FORMATS.PCMU],
        receiveTelephoneEventPayloadTypes: [101, 100],
      }),
    );
    const digits: string[] = [];
    b.on("digit", (digit) => digits.push(digit.key));
    a.configure(configuration(b.localPort, FORMATS.opus));
    assert.equal(await a.sendDigits("12"), true);
    a.configure(configuration(b.localPort, { ...FORMATS.PCMU, telephoneEventPayloadType: 100 }));
    assert.equal(await a.sendDigits("3"), true);
    await waitFor(() => digits.length >= 3, "three keys");
    assert.deepEqual(digits, ["1", "2", "3"]);
  });

  it("relays between Opus and PCMU calls, re-encoding audio and retiming telephone-events both ways", async () => {
    const caller = await rawSocket();
    const far = await rawSocket();
    const opusLeg = await open();
    const pcmuLeg = await open();
    opusLeg.configure(configuration(caller.port, FORMATS.opus));
    pcmuLeg.configure(configuration(far.port));
    opusLeg.relayTo(pcmuLeg);
    pcmuLeg.relayTo(opusLeg);

    // The caller's Opus, 1 kHz, then a key: out of the PCMU leg as PCMU at 160 ticks a packet.
    const encoder = new OpusEncoder({ sampleRate: 16000, bitrate: 24_000 });
    const wide = new ToneGenerator(1000, TONE_AMPLITUDE, 16000);
    const frame = new Int16Array(320);
    const packet = new Uint8Array(MAX_ENCODED_FRAME_BYTES);
    for (let k = 0; k < 20; k++) {
      const length = encoder.encode(wide.fill(frame), packet);
      await send(
        caller.socket,
        rtpDatagram(111, 10 + k, 48_000 + 960 * k, packet.subarray(0, length)),
        opusLeg.localPort,
      );
    }
    encoder.dispose();
    // A key after the audio (RFC 4733 at 48 kHz: 1920 ticks = 40 ms so far), then the end.
    const event = Uint8Array.of(7, 10, 1920 >> 8, 1920 & 0xff);
    await send(caller.socket, rtpDatagram(101, 30, 48_000 + 960 * 20, event, true), opusLeg.localPort);
    await waitFor(() => far.received.length >= 21, "the relayed packets");
    const relayed = rtpPackets(far.received);
    const audio = relayed.filter((relayedPacket) => relayedPacket.payloadType === 0);
    assert.equal(audio.length, 20);
    audio.forEach((relayedPacket, k) => {
      assert.equal(relayedPacket.ssrc, pcmuLeg.ssrc);
      assert.equal(relayedPacket.payload.length, 160);
      assert.equal(relayedPacket.timestamp, ((audio[0] as RtpPacket).timestamp + 160 * k) >>> 0);
      if (k < 2) return; // Opus's start-up
      const samples = new Int16Array(160);
      decodeMulaw(relayedPacket.payload, samples);
      const amplitude = toneAmplitude(samples, 1000);
      assert.ok(Math.abs(amplitude / 8192 - 1) < 0.15, `relayed frame ${k}: 1 kHz at ${amplitude}`);
    });
    const relayedEvent = relayed.find((relayedPacket) => relayedPacket.payloadType === 101) as RtpPacket;
    assert.equal(relayedEvent.timestamp, ((audio[0] as RtpPacket).timestamp + 160 * 20) >>> 0);
    assert.deepEqual(parseTelephoneEvent(relayedEvent.payload), {
      event: 7,
      end: false,
      volume: 10,
      duration: 320,
    });

    // The far end's PCMU, out of the Opus leg as Opus at 960 ticks a packet.
    const narrow = new ToneGenerator(1000, TONE_AMPLITUDE, 8000);
    const narrowFrame = new Int16Array(160);
    const payload = new Uint8Array(160);
    for (let k = 0; k < 20; k++) {
      encodeMulaw(narrow.fill(narrowFrame), payload);
      await send(far.socket, rtpDatagram(0, 90 + k, 8000 + 160 * k, payload), pcmuLeg.localPort);
    }
    await waitFor(() => caller.received.length >= 20, "the packets relayed the other way");
    const decoder = new OpusDecoder({ sampleRate: 16000 });
    const out = new Int16Array(320);
    const opus = rtpPackets(caller.received);
    opus.forEach((relayedPacket, k) => {
      assert.equal(relayedPacket.payloadType, 111);
      assert.equal(relayedPacket.timestamp, ((opus[0] as RtpPacket).timestamp + 960 * k) >>> 0);
      assert.equal(decoder.decode(relayedPacket.payload, out), 320);
      if (k < 3) return;
      const amplitude = toneAmplitude(out, 1000, 16000);
      assert.ok(Math.abs(amplitude / 8192 - 1) < 0.15, `relayed frame ${k}: 1 kHz at ${amplitude}`);
    });
    decoder.dispose();
  });

  it("passes Opus through unchanged between two Opus calls", async () => {
    const caller = await rawSocket();
    const far = await rawSocket();
    const a = await open();
    const b = await open();
    a.configure(configuration(caller.port, FORMATS.opus));
    b.configure(configuration(far.port, FORMATS.opus));
    a.relayTo(b);
    const payloads = [Uint8Array.of(0x48, 1, 2, 3), Uint8Array.of(0x48, 4, 5)];
    for (const [k, payload] of payloads.entries())
      await send(caller.socket, rtpDatagram(111, 3 + k, 960 * k, payload), a.localPort);
    await waitFor(() => far.received.length >= 2, "the relayed packets");
    assert.deepEqual(
      rtpPackets(far.received).map((relayed) => [...relayed.payload]),
      payloads.map((payload) => [...payload]),
    );
  });

  it("sends payloads of a shared encoder made from its encoderSpec as they are, 20 ms of clock apart", async () => {
    const peer = await rawSocket();
    const session = await open();
    assert.equal(session.encoderSpec, null);
    assert.equal(session.audioRate, 8000);
    session.configure(
      configuration(peer.port, { ...FORMATS.opus, opus: { useInbandFec: false, maxAverageBitrate: 32_000 } }),
    );
    const spec = session.encoderSpec;
    assert.deepEqual(spec, { codec: "opus", opus: { useInbandFec: false, maxAverageBitrate: 32_000 } });
    const encoder = createEncoder(spec ?? { codec: "PCMU" });
    assert.equal(encoder.sampleRate, 16000);
    const generator = new ToneGenerator(6000, TONE_AMPLITUDE, 16000);
    const frame = new Int16Array(320);
    const payload = new Uint8Array(MAX_ENCODED_FRAME_BYTES);
    const sent: Uint8Array[] = [];
    for (let k = 0; k < 10; k++) {
      const encoded = payload.subarray(0, encoder.encode(generator.fill(frame), payload));
      sent.push(encoded.slice());
      session.sendEncoded(encoded);
    }
    encoder.dispose();
    await waitFor(() => peer.received.length >= 10, "the packets");
    const packets = rtpPackets(peer.received);
    const decoder = new OpusDecoder({ sampleRate: 16000 });
    const out = new Int16Array(320);
    packets.forEach((packet, k) => {
      assert.deepEqual([...packet.payload], [...(sent[k] as Uint8Array)]);
      assert.equal(packet.timestamp, ((packets[0] as RtpPacket).timestamp + 960 * k) >>> 0);
      assert.equal(packet.marker, k === 0);
      decoder.decode(packet.payload, out);
    });
    decoder.dispose();
    assert.ok(Math.abs(toneAmplitude(out, 6000, 16000) / 8192 - 1) < 0.15, "decodes to the tone");
  });
});
