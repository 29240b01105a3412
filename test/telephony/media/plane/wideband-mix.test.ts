/**
 * Rooms of mixed codecs on a media thread, over real RTP on loopback: a room mixes at 16 kHz once a
 * wideband stream is in it and goes back to 8 kHz when none is; narrowband streams are taken up to
 * the room's rate and back down through a filter (a 6 kHz tone does not fold into a G.711 stream's
 * band); the listeners who hear the shared frame get it encoded once per codec (the same payloads).
 */
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import dgram from "node:dgram";
import { once } from "node:events";
import { after, describe, it } from "node:test";
import {
  type MediaMix,
  MediaPlane,
  type MediaStream,
} from "../../../../src/telephony/media/plane/media-plane.js";
import { RtpPortAllocator } from "../../../../src/telephony/media/rtp/port-allocator.js";
import { RtpSession } from "../../../../src/telephony/media/rtp/rtp-session.js";
import type { AudioCodecName } from "../../../../src/telephony/media/rtp/rtp-stream.js";
import { goertzelLevelDb, ToneGenerator } from "../../../helpers/audio.js";
import { until } from "../../../helpers/until.js";

const base = 40000 + 2 * randomInt(1500);
const peers = new RtpPortAllocator(base, base + 199);
const plane = new MediaPlane({
  threads: 1,
  bindAddress: "127.0.0.1",
  rtpPorts: { min: base + 200, max: base + 399 },
  mediaTimeoutMs: 0,
  allowFaultInjection: false,
});
const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers) await close();
  await plane.close();
});

const PAYLOAD_TYPES: Record<AudioCodecName, number> = { PCMU: 0, PCMA: 8, G722: 9, opus: 111 };

/** A phone of `codec`: an RTP peer wired to a new stream of the plane. */
async function phone(codec: AudioCodecName): Promise<{ peer: RtpSession; stream: MediaStream }> {
  const peer = await RtpSession.open({ allocator: peers, bindAddress: "127.0.0.1" });
  closers.push(() => peer.close());
  const stream = await plane.openStream();
  const config = {
    codec,
    payloadType: PAYLOAD_TYPES[codec],
    remoteAddress: "127.0.0.1",
    direction: "sendrecv",
    ...(codec === "opus" ? { opus: { useInbandFec: true } } : {}),
  } as const;
  stream.configure({ ...config, remotePort: peer.localPort });
  peer.configure({ ...config, remotePort: stream.localPort });
  return { peer, stream };
}

/** Every phone sends its tone (or silence) at the 20 ms pace for `seconds`; what each heard after the first half second. */
async function talk(
  phones: Array<{ peer: RtpSession; toneHz: number | null }>,
  seconds: number,
): Promise<Int16Array[]> {
  const frames = Math.round(seconds * 50);
  const heard = phones.map(({ peer }) => new Int16Array(frames * (peer.audioRate / 50)));
  const tones = phones.map(({ peer, toneHz }) =>
    toneHz === null ? null : new ToneGenerator(toneHz, 0.5, peer.audioRate),
  );
  const frame = phones.map(({ peer }) => new Int16Array(peer.audioRate / 50));
  const started = performance.now();
  for (let n = 0; n < frames; n++) {
    phones.forEach(({ peer }, i) => {
      const out = frame[i] as Int16Array;
      const tone = tones[i];
      if (tone === null || tone === undefined) out.fill(0);
      else tone.fill(out);
      peer.sendFrame(out);
      const size = out.length;
      peer.readFrame((heard[i] as Int16Array).subarray(n * size, (n + 1) * size));
    });
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, started + (n + 1) * 20 - performance.now())),
    );
  }
  return heard.map((samples, i) => samples.subarray((phones[i] as { peer: RtpSession }).peer.audioRate / 2));
}

async function closeRoom(mix: MediaMix, streams: MediaStream[]): Promise<void> {
  await mix.close();
  for (const stream of streams) stream.close();
}

describe("wideband rooms on a media thread", { concurrency: false }, () => {
  it("mixes G.722 and PCMU at 16 kHz: 6 kHz reaches the G.722 phone and does not fold into the PCMU phone's band", async () => {
    const mix = plane.openMix();
    const wide = await phone("G722");
    const narrow = await phone("PCMU");
    const other = await phone("G722");
    for (const each of [wide, narrow, other]) each.stream.join(mix, false);
    const [wideHeard, narrowHeard, otherHeard] = (await talk(
      [
        { peer: wide.peer, toneHz: 6000 },
        { peer: narrow.peer, toneHz: 500 },
        { peer: other.peer, toneHz: 1200 },
      ],
      2,
    )) as [Int16Array, Int16Array, Int16Array];
    const levels = (samples: Int16Array, rate: number, hz: number[]) =>
      hz.map((each) => `${each} Hz ${goertzelLevelDb(samples, each, rate).toFixed(1)}`).join(", ");
    const otherLevels = levels(otherHeard, 16000, [6000, 500, 1200, 1000, 2000]);
    assert.ok(goertzelLevelDb(otherHeard, 6000, 16000) > -20, `the other G.722 phone: ${otherLevels}`);
    assert.ok(goertzelLevelDb(otherHeard, 500, 16000) > -20, `the other G.722 phone: ${otherLevels}`);
    assert.ok(goertzelLevelDb(otherHeard, 1200, 16000) < -50, `the other G.722 phone: ${otherLevels}`);
    // Clean: nothing but the two tones (a glitch each frame would put 50 Hz harmonics everywhere).
    assert.ok(goertzelLevelDb(otherHeard, 1000, 16000) < -55, `the other G.722 phone: ${otherLevels}`);
    const narrowLevels = levels(narrowHeard, 8000, [1200, 2000, 500, 1000]);
    assert.ok(goertzelLevelDb(narrowHeard, 1200, 8000) > -20, `the PCMU phone: ${narrowLevels}`);
    assert.ok(goertzelLevelDb(narrowHeard, 2000, 8000) < -55, `the PCMU phone: ${narrowLevels}`);
    assert.ok(goertzelLevelDb(narrowHeard, 500, 8000) < -50, `the PCMU phone: ${narrowLevels}`);
    const wideLevels = levels(wideHeard, 16000, [1200, 500, 6000]);
    assert.ok(goertzelLevelDb(wideHeard, 1200, 16000) > -20, `the G.722 phone: ${wideLevels}`);
    assert.ok(goertzelLevelDb(wideHeard, 6000, 16000) < -50, `the G.722 phone: ${wideLevels}`);
    await closeRoom(mix, [wide.stream, narrow.stream, other.stream]);
  });

  it("encodes the listeners' shared frame once per codec: Opus listeners who joined apart get the same payloads", async () => {
    const mix = plane.openMix();
    const talker = await phone("G722");
    talker.stream.join(mix, false);
    // Listeners that send nothing: raw sockets that keep every payload they are sent.
    const listeners = await Promise.all(
      [0, 1, 2].map(async () => {
        const socket = dgram.createSocket("udp4");
        socket.bind(0, "127.0.0.1");
        await once(socket, "listening");
        closers.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
        const stream = await plane.openStream(mix);
        stream.configure({
          codec: "opus",
          payloadType: 111,
          opus: { useInbandFec: true },
          remoteAddress: "127.0.0.1",
          remotePort: socket.address().port,
          direction: "sendrecv",
        });
        const payloads = new Set<string>();
        socket.on("message", (packet) => {
          if (packet.length > 12 && ((packet[1] ?? 0) & 0x7f) === 111)
            payloads.add(packet.subarray(12).toString("hex"));
        });
        return { stream, payloads };
      }),
    );
    const [first, second, late] = listeners as [
      (typeof listeners)[0],
      (typeof listeners)[0],
      (typeof listeners)[0],
    ];
    first.stream.join(mix, false);
    second.stream.join(mix, false);
    await talk([{ peer: talker.peer, toneHz: 1000 }], 0.4);
    // An encoder of its own, started now, could not give the same packets as one that ran 400 ms.
    late.stream.join(mix, false);
    await talk([{ peer: talker.peer, toneHz: 1000 }], 1.2);
    const stats = await plane.stats();
    const figures = stats.threads.flatMap((thread) => thread.streams);
    for (const each of [talker.stream, first.stream, late.stream]) {
      const stream = figures.find((candidate) => candidate.streamId === each.id);
      assert.equal(stream?.roomRate, 16000);
    }
    assert.ok(late.payloads.size > 40, `the late listener got ${late.payloads.size} packets`);
    for (const listener of [first, second]) {
      const shared = [...late.payloads].filter((payload) => listener.payloads.has(payload)).length;
      assert.ok(shared >= late.payloads.size - 2, `${shared} of ${late.payloads.size} payloads the same`);
    }
    await closeRoom(mix, [talker.stream, ...listeners.map((listener) => listener.stream)]);
  });

  it("goes back to 8 kHz when its last wideband member leaves", async () => {
    const mix = plane.openMix();
    const wide = await phone("G722");
    const narrow = await phone("PCMU");
    wide.stream.join(mix, false);
    narrow.stream.join(mix, false);
    const roomRate = async () =>
      (await plane.stats()).threads
        .flatMap((thread) => thread.streams)
        .find((stream) => stream.streamId === narrow.stream.id)?.roomRate;
    assert.equal(await roomRate(), 16000);
    wide.stream.leave();
    await until("the room back at 8 kHz", async () => ((await roomRate()) === 8000 ? true : undefined));
    await closeRoom(mix, [wide.stream, narrow.stream]);
  });

  it("mixes no more talkers than the plane is told: with one, two people talking hear nothing of each other, a listener hears one", async () => {
    const single = new MediaPlane({
      threads: 1,
      bindAddress: "127.0.0.1",
      rtpPorts: { min: base + 400, max: base + 459 },
      mediaTimeoutMs: 0,
      mixTalkers: 1,
    });
    closers.push(() => single.close());
    const mix = single.openMix();
    const phones = await Promise.all(
      ["PCMU", "PCMU", "PCMU"].map(async () => {
        const peer = await RtpSession.open({ allocator: peers, bindAddress: "127.0.0.1" });
        closers.push(() => peer.close());
        const stream = await single.openStream(mix);
        const config = {
          codec: "PCMU",
          payloadType: 0,
          remoteAddress: "127.0.0.1",
          direction: "sendrecv",
        } as const;
        stream.configure({ ...config, remotePort: peer.localPort });
        peer.configure({ ...config, remotePort: stream.localPort });
        stream.join(mix, false);
        return peer;
      }),
    );
    const [loud, quiet, listener] = phones as [RtpSession, RtpSession, RtpSession];
    const [loudHeard, quietHeard, listenerHeard] = (await talk(
      [
        { peer: loud, toneHz: 700 },
        { peer: quiet, toneHz: 1100 },
        { peer: listener, toneHz: null },
      ],
      1.5,
    )) as [Int16Array, Int16Array, Int16Array];
    // The two talkers are as loud as each other: the one mixed first keeps its place. Whichever it
    // is, the listener hears it alone, and it hears nothing of the other (whom nobody hears).
    const heard = [700, 1100].filter((hz) => goertzelLevelDb(listenerHeard, hz) > -20);
    assert.equal(heard.length, 1, `the listener heard ${heard.join(", ")} Hz`);
    const [mixedHeard, unmixedHz] = heard[0] === 700 ? [loudHeard, 1100] : [quietHeard, 700];
    assert.ok(goertzelLevelDb(mixedHeard, unmixedHz) < -40, "the talker mixed hears the one not mixed");
    await mix.close();
  });

  it("refuses a count of talkers to mix that is not one (before any thread would meet it)", () => {
    for (const mixTalkers of [0, 2.5, Number.NaN]) {
      assert.throws(
        () =>
          new MediaPlane({
            threads: 1,
            bindAddress: "127.0.0.1",
            rtpPorts: { min: base + 460, max: base + 469 },
            mediaTimeoutMs: 0,
            mixTalkers,
          }),
        /talkers must be a whole number from 1/,
      );
    }
  });
});
