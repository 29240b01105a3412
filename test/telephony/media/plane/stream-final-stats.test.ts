/**
 * A stream's final counts come back when it closes (the close-stream request's answer), on real
 * worker threads with a real RTP peer on loopback: of the whole stream when it moved between threads
 * on the way (the far end's last report carried with it), zeros for a stream that carried nothing,
 * null once its thread is gone; the same answer to every close.
 */
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { after, describe, it } from "node:test";
import { callQuality } from "../../../../src/telephony/call-quality.js";
import { MediaPlane } from "../../../../src/telephony/media/plane/media-plane.js";
import { RtpPortAllocator } from "../../../../src/telephony/media/rtp/port-allocator.js";
import { RtpSession } from "../../../../src/telephony/media/rtp/rtp-session.js";
import { exchangeAudio, ToneGenerator } from "../../../helpers/audio.js";
import { until } from "../../../helpers/until.js";

const base = 30000 + 2 * randomInt(2000);
const peers = new RtpPortAllocator(base, base + 19);
const plane = new MediaPlane({
  threads: 2,
  bindAddress: "127.0.0.1",
  rtpPorts: { min: base + 20, max: base + 99 },
  mediaTimeoutMs: 0,
});
const sessions: RtpSession[] = [];
after(async () => {
  await Promise.all(sessions.map((session) => session.close()));
  await plane.close();
});

describe("a stream's final counts", () => {
  it("come back at close, of the whole stream when it moved to another thread on the way", async () => {
    // The far end reports every 200 ms or so, so that its reports about our stream come during the test.
    const peer = await RtpSession.open({ allocator: peers, bindAddress: "127.0.0.1", rtcpIntervalMs: 200 });
    sessions.push(peer);
    const stream = await plane.openStream();
    const first = stream.thread;
    const config = {
      codec: "PCMU",
      payloadType: 0,
      remoteAddress: "127.0.0.1",
      direction: "sendrecv",
    } as const;
    stream.configure({ ...config, remotePort: peer.localPort });
    peer.configure({ ...config, remotePort: stream.localPort });
    const endpoint = {
      sendAudio: (frame: Int16Array) => peer.sendFrame(frame),
      readAudio: (out: Int16Array) => peer.readFrame(out),
    };
    // Played to, the stream sends and plays out on its thread.
    void stream.play({ samples: new ToneGenerator(440, 0.5, 16000).fill(new Int16Array(16000 * 3)) });
    await exchangeAudio(endpoint, 1.5, new ToneGenerator(880));
    const before = await until("the far end's report about our stream", async () => {
      const stats = (await plane.stats()).threads.flatMap((thread) => thread.streams);
      const ours = stats.find((each) => each.streamId === stream.id);
      return ours?.remoteLossShare === null ? undefined : ours;
    });
    assert.ok(before !== undefined && before.packetsSent > 0);

    // Into a mix on the other thread: the stream moves there, its counts and the report with it.
    const mix = plane.openMix();
    assert.notEqual(mix.thread, first);
    stream.join(mix, false);
    await exchangeAudio(endpoint, 1, new ToneGenerator(880));
    assert.equal(stream.thread, mix.thread);

    const closing = stream.close();
    const stats = await closing;
    assert.ok(stats !== null);
    assert.equal(stats.streamId, stream.id);
    assert.equal(stats.codec, "PCMU");
    assert.ok(
      stats.packetsSent > before.packetsSent,
      `${stats.packetsSent} sent, ${before.packetsSent} before`,
    );
    assert.ok(stats.packetsReceived > before.packetsReceived);
    assert.equal(stats.remoteLossShare, 0);
    assert.equal(stats.remotePacketsLost, 0);
    assert.ok(stats.meanJitterMs !== null && stats.meanJitterMs >= 0 && stats.meanJitterMs < 20);
    assert.ok(stats.framesPlayed > 0 && stats.framesConcealed <= stats.framesPlayed);
    // Once closed, it is gone from its thread; closing again answers the same.
    assert.equal(await stream.close(), stats);
    assert.equal(stream.close(), closing);
    const left = (await plane.stats()).threads.flatMap((thread) => thread.streams);
    assert.ok(!left.some((each) => each.streamId === stream.id));

    const quality = callQuality(stats);
    assert.ok(quality !== null);
    assert.equal(quality.lossShare, 0);
    assert.equal(quality.remoteLossShare, 0);
    assert.ok(quality.mos !== null && quality.mos > 4.3, `MOS ${quality.mos}`);
    await mix.close();
  });

  it("are zeros for a stream closed before any packet, and no quality", async () => {
    const stream = await plane.openStream();
    const stats = await stream.close();
    assert.ok(stats !== null);
    assert.equal(stats.packetsSent, 0);
    assert.equal(stats.packetsReceived, 0);
    assert.equal(stats.packetsLost, 0);
    assert.equal(stats.framesPlayed, 0);
    assert.equal(stats.framesConcealed, 0);
    assert.equal(stats.meanJitterMs, null);
    assert.equal(stats.remoteLossShare, null);
    assert.equal(stats.roundTripMs, null);
    assert.equal(stats.codec, null);
    assert.equal(callQuality(stats), null);
  });

  it("are null once the stream's thread has stopped", async () => {
    const own = new MediaPlane({
      threads: 1,
      bindAddress: "127.0.0.1",
      rtpPorts: { min: base + 100, max: base + 109 },
      mediaTimeoutMs: 0,
    });
    const stream = await own.openStream();
    await own.close();
    assert.equal(await stream.close(), null);
  });
});
