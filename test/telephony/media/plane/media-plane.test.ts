/**
 * The media plane on real worker threads, with real RTP peers on loopback (plain RtpSessions driven
 * at the 20 ms pace by the test): mixing, a stream moving to its mix's thread, playback and voice
 * recording, figures, fault isolation (a mix that throws, a thread that dies), and failed requests
 * answered by code.
 */
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { after, describe, it } from "node:test";
import { RTCPeerConnection } from "werift";
import { createLogger } from "../../../../src/log.js";
import {
  MEDIA_ERRORS,
  MediaError,
  type MediaErrorCode,
} from "../../../../src/telephony/media/media-error.js";
import {
  type MediaMix,
  MediaPlane,
  type MediaStream,
} from "../../../../src/telephony/media/plane/media-plane.js";
import { SOUND_SAMPLE_RATE } from "../../../../src/telephony/media/plane/protocol.js";
import { RtpPortAllocator } from "../../../../src/telephony/media/rtp/port-allocator.js";
import { RtpSession } from "../../../../src/telephony/media/rtp/rtp-session.js";
import { exchangeAudio, goertzelLevelDb, ToneGenerator } from "../../../helpers/audio.js";
import { until } from "../../../helpers/until.js";

const base = 44000 + 2 * randomInt(1500);
const peers = new RtpPortAllocator(base, base + 199);
/** A plane on loopback whose mixes can be made to fail. */
function newPlane(threads: number, ports: { min: number; max: number }): MediaPlane {
  return new MediaPlane({
    threads,
    bindAddress: "127.0.0.1",
    rtpPorts: ports,
    mediaTimeoutMs: 0,
    allowFaultInjection: true,
  });
}

const plane = newPlane(2, { min: base + 200, max: base + 599 });
const sessions: RtpSession[] = [];

after(async () => {
  await Promise.all(sessions.map((session) => session.close()));
  await plane.close();
});

/** A phone: an RTP peer wired to a new stream of the plane (next to `near` when given). */
async function phone(near?: MediaMix, on = plane): Promise<{ peer: RtpSession; stream: MediaStream }> {
  const peer = await RtpSession.open({ allocator: peers, bindAddress: "127.0.0.1" });
  sessions.push(peer);
  const stream = await on.openStream(near);
  const config = {
    codec: "PCMU",
    payloadType: 0,
    remoteAddress: "127.0.0.1",
    direction: "sendrecv",
  } as const;
  stream.configure({ ...config, telephoneEventPayloadType: 101, remotePort: peer.localPort });
  peer.configure({ ...config, telephoneEventPayloadType: 101, remotePort: stream.localPort });
  return { peer, stream };
}

function endpoint(peer: RtpSession) {
  return {
    sendAudio: (frame: Int16Array) => peer.sendFrame(frame),
    readAudio: (out: Int16Array) => peer.readFrame(out),
  };
}

/** Both phones talk for `seconds`; what each heard. */
async function talk(a: RtpSession, b: RtpSession, seconds = 1.5): Promise<[Int16Array, Int16Array]> {
  const [heardByA, heardByB] = await Promise.all([
    exchangeAudio(endpoint(a), seconds, new ToneGenerator(440)),
    exchangeAudio(endpoint(b), seconds, new ToneGenerator(880)),
  ]);
  // The first half second is the jitter buffers filling and the streams latching.
  return [heardByA.heard.subarray(4000), heardByB.heard.subarray(4000)];
}

function assertHearEachOther([heardByA, heardByB]: [Int16Array, Int16Array]): void {
  assert.ok(
    goertzelLevelDb(heardByA, 880) > -20,
    `A hears B at ${goertzelLevelDb(heardByA, 880).toFixed(1)} dBFS`,
  );
  assert.ok(
    goertzelLevelDb(heardByB, 440) > -20,
    `B hears A at ${goertzelLevelDb(heardByB, 440).toFixed(1)} dBFS`,
  );
  assert.ok(goertzelLevelDb(heardByA, 440) < -40, "A does not hear itself");
  assert.ok(goertzelLevelDb(heardByB, 880) < -40, "B does not hear itself");
}

async function room(
  on = plane,
): Promise<{ mix: MediaMix; a: RtpSession; b: RtpSession; streams: MediaStream[] }> {
  const mix = on.openMix();
  const [first, second] = [await phone(mix, on), await phone(mix, on)];
  first.stream.join(mix, false);
  second.stream.join(mix, false);
  return { mix, a: first.peer, b: second.peer, streams: [first.stream, second.stream] };
}

describe("media plane", { concurrency: true }, () => {
  // On the plane above, one test after another: where a stream or mix goes depends on what is there.
  describe("on one plane of two threads", { concurrency: false }, () => {
    it("mixes a room on a media thread: each phone hears the other, not itself", async () => {
      const { mix, a, b, streams } = await room();
      assert.ok(streams.every((stream) => stream.thread === mix.thread));
      assertHearEachOther(await talk(a, b));
      const stats = await plane.stats();
      const thread = stats.threads[mix.thread.index];
      assert.ok(thread !== undefined && thread.legs >= 2 && thread.mixes >= 1 && thread.ticks > 50);
      for (const stream of streams) {
        const figures = thread.streams.find((candidate) => candidate.streamId === stream.id);
        assert.ok(figures !== undefined && figures.packetsReceived > 50 && figures.packetsSent > 50);
      }
      await mix.close();
      for (const stream of streams) stream.close();
    });

    it("moves a stream opened on another thread to its mix's thread, on the same port", async () => {
      const lone = await phone();
      const mix = plane.openMix();
      // The least loaded thread takes the mix: not the one the lone stream is on.
      assert.notEqual(lone.stream.thread, mix.thread);
      const port = lone.stream.localPort;
      const other = await phone(mix);
      lone.stream.join(mix, false);
      other.stream.join(mix, false);
      assertHearEachOther(await talk(lone.peer, other.peer));
      assert.equal(lone.stream.thread, mix.thread);
      assert.equal(lone.stream.localPort, port);
      const figures = (await plane.stats()).threads[mix.thread.index]?.streams.find(
        (stream) => stream.streamId === lone.stream.id,
      );
      // The counts go on from before the move.
      assert.ok(figures !== undefined && figures.packetsSent > 60, `sent ${figures?.packetsSent}`);
      await mix.close();
      lone.stream.close();
      other.stream.close();
    });

    it("plays to a caller alone and records what they say", async () => {
      const { peer, stream } = await phone();
      // Sounds cross between the threads at 16 kHz; the caller's G.711 stream takes them down to 8 kHz.
      const tone = new Int16Array(SOUND_SAMPLE_RATE / 2);
      new ToneGenerator(660, 0.5, SOUND_SAMPLE_RATE).fill(tone);
      const [heard] = await Promise.all([
        exchangeAudio(endpoint(peer), 1.4, null),
        stream.play({ samples: tone }),
      ]);
      assert.ok(goertzelLevelDb(heard.heard, 660) > -20, "the caller heard the sound played to it");
      const recording = stream.recordVoice(1000);
      await exchangeAudio(endpoint(peer), 1.2, new ToneGenerator(550));
      const voice = await recording;
      // One second of what the caller said, brought up to 16 kHz.
      assert.equal(voice.length, SOUND_SAMPLE_RATE);
      assert.ok(
        goertzelLevelDb(voice, 550, SOUND_SAMPLE_RATE) > -20,
        "the recording holds the caller's voice",
      );
      stream.close();
    });

    it("replaces a media thread that dies; what ran on it is told, new rooms run on the new one", async () => {
      const doomed = await room();
      const index = doomed.mix.thread.index;
      const dead = plane.threads[index];
      const mixFailed = once(doomed.mix, "failed");
      const streamFailed = once(doomed.streams[0] as MediaStream, "failed");
      dead?.kill();
      const [reason] = (await mixFailed) as [string];
      assert.match(reason, /media thread failed/);
      await streamFailed;
      await until("a new thread in the dead one's place", async () =>
        plane.threads[index] !== dead ? true : undefined,
      );
      // Both threads are empty again; rooms are placed on either, the new one included.
      const rooms = [await room(), await room()];
      assert.ok(rooms.some(({ mix }) => mix.thread === plane.threads[index]));
      // Both at once, on the two threads: with the same tones in each, a room hearing the other fails.
      for (const heard of await Promise.all(rooms.map(({ a, b }) => talk(a, b)))) assertHearEachOther(heard);
      for (const { mix, streams } of rooms) {
        await mix.close();
        for (const stream of streams) stream.close();
      }
    });
  });

  // Each on a plane of its own (its own ports): they run alongside the tests above.
  it("ends a mix whose tick throws alone: the other room on its thread keeps mixing", async () => {
    // One thread runs both rooms: the failure is caught within the tick that mixes both.
    const single = newPlane(1, { min: base + 600, max: base + 639 });
    const broken = await room(single);
    const healthy = await room(single);
    const failed = once(broken.mix, "failed");
    broken.mix.injectFault();
    const [reason] = (await failed) as [string];
    assert.match(reason, /fault injected/);
    assertHearEachOther(await talk(healthy.a, healthy.b));
    await healthy.mix.close();
    for (const stream of [...broken.streams, ...healthy.streams]) stream.close();
    await single.close();
  });

  it("brings what a thread's streams dropped to the main thread, and logs SRTP failures with their source", async () => {
    const lines: string[] = [];
    const logged = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const watched = new MediaPlane({
      threads: 1,
      bindAddress: "127.0.0.1",
      rtpPorts: { min: base + 640, max: base + 659 },
      mediaTimeoutMs: 0,
      logger: createLogger("info", logged),
    });
    const key = { suite: "AES_256_CM_HMAC_SHA1_80" as const, inline: Buffer.alloc(46, 3).toString("base64") };
    const stream = await watched.openStream();
    const peer = await RtpSession.open({ allocator: peers, bindAddress: "127.0.0.1" });
    sessions.push(peer);
    stream.configure({
      codec: "PCMU",
      payloadType: 0,
      remoteAddress: "127.0.0.1",
      remotePort: peer.localPort,
      direction: "sendrecv",
      srtp: { send: key, receive: key },
    });
    // The peer sends plain RTP to an SRTP stream: none of it authenticates.
    peer.configure({
      codec: "PCMU",
      payloadType: 0,
      remoteAddress: "127.0.0.1",
      remotePort: stream.localPort,
      direction: "sendrecv",
    });
    for (let k = 0; k < 5; k++) peer.sendFrame(new Int16Array(160));
    const dropped = await until("the drops counted on the media thread", async () => {
      const { threads } = await watched.stats();
      const totals = threads[0]?.rtpTotals.dropped;
      return totals !== undefined && totals.srtpAuthentication >= 5 ? totals : undefined;
    });
    assert.equal(dropped.unknownPayloadType, 0);
    await until("the warning", async () => (lines.length > 0 ? true : undefined));
    const warning = JSON.parse(lines[0] as string);
    assert.equal(warning.level, 40);
    assert.equal(warning.address, "127.0.0.1");
    assert.equal(warning.port, peer.localPort);
    assert.equal(lines.length, 1, "one warning for the burst");
    stream.close();
    await watched.close();
  });

  it("answers every failed request with its code, which the main thread's error carries", async () => {
    // Two port pairs, on one worker thread: a phone's stream and a browser's take them, the third finds none.
    const coded = newPlane(1, { min: base + 660, max: base + 663 });
    const thread = coded.threads[0] as MediaPlane["threads"][number];
    const scratch = await mkdtemp(path.join(tmpdir(), "media-errors-"));
    const reached = new Map<MediaErrorCode, string>();
    const failure = async (attempt: () => Promise<unknown>): Promise<void> => {
      const error = await attempt().then(
        () => assert.fail("the request succeeded"),
        (rejected: unknown) => rejected,
      );
      assert.ok(error instanceof MediaError, String(error));
      reached.set(error.code, error.message);
    };
    const stream = await coded.openStream();
    // A browser's offer (made by werift as a page would): its stream cannot move to another thread.
    const page = new RTCPeerConnection({ iceServers: [] });
    page.addTransceiver("audio", { direction: "sendrecv" });
    await page.setLocalDescription(await page.createOffer());
    const browser = await coded.openWebRtcStream(page.localDescription?.sdp ?? "", ["127.0.0.1"]);
    // At once: a peer no page reaches may end (its ICE giving up on a loaded machine) and free its port.
    await failure(() => thread.request({ type: "detach-stream", streamId: browser.stream.id }));
    await failure(() => coded.openStream());
    await failure(() =>
      thread.request({
        type: "open-webrtc-stream",
        streamId: 9003,
        offer: "v=0\r\n",
        candidateAddresses: [],
      }),
    );
    // Its own port, asked for again (as a stream moving here would).
    await failure(() => thread.request({ type: "open-stream", streamId: 9001, port: stream.localPort }));
    await failure(() => thread.request({ type: "detach-stream", streamId: 9002 }));
    const closed = coded.openMix();
    await closed.close();
    await failure(() => closed.pauseRecording());
    // A recording whose folder cannot be made: a file stands where it would be.
    const blocker = path.join(scratch, "a-file");
    await writeFile(blocker, "");
    await failure(() => coded.openMix().startRecording(path.join(blocker, "room.wav")));
    // The mix closes while its recording's file is being opened.
    const closing = coded.openMix();
    const recording = closing.startRecording(path.join(scratch, "room.wav"));
    void closing.close();
    await failure(() => recording);
    await failure(() =>
      thread.request({ type: "play", streamId: stream.id, sound: { prompts: ["no-such-prompt" as never] } }),
    );
    const waiting = thread.request({ type: "record-voice", streamId: stream.id, maxMs: 60_000 });
    thread.kill();
    await failure(() => waiting);
    await page.close();
    assert.deepEqual([...reached.keys()].sort(), Object.keys(MEDIA_ERRORS).sort());
    assert.match(reached.get("MEDIA_ERR_NO_FREE_PORT") ?? "", /^no free RTP port pair in /);
    assert.match(reached.get("MEDIA_ERR_MIX_CLOSED") ?? "", /the mix was closed/);
    await coded.close();
    await rm(scratch, { recursive: true, force: true });
  });
});
