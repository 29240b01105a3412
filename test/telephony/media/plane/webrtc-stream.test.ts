/**
 * A browser's call on a media thread (issue 28): real Chromium with a fake microphone playing 1 kHz
 * offers, a WebRTC stream answers it on the thread of a mix. The browser's tone is recorded by the
 * stream, the mix's tone is measured in the page, the page's RFC 4733 keys arrive as digits, a
 * closed page closes the stream and gives its port back, and a bad offer is refused by code.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import { MediaError } from "../../../../src/telephony/media/media-error.js";
import { type MediaMix, MediaPlane } from "../../../../src/telephony/media/plane/media-plane.js";
import { SOUND_SAMPLE_RATE } from "../../../../src/telephony/media/plane/protocol.js";
import { goertzelLevelDb, ToneGenerator } from "../../../helpers/audio.js";
import { skipWithoutChromium } from "../../../helpers/browser.js";
import { until } from "../../../helpers/until.js";
import {
  blankSecurePage,
  connectPage,
  launchToneBrowser,
  measurePageTone,
  PAGE_HEARD_DB,
  pageToneLevel,
  type ToneBrowser,
} from "../../../helpers/webrtc-browser.js";

const BROWSER_TONE_HZ = 1000;
const ROOM_TONE_HZ = 700;
const ports = { min: 47_100 + 2 * Math.floor(Math.random() * 400), max: 0 };
ports.max = ports.min + 3;

describe("a browser's WebRTC stream on a media thread", { skip: skipWithoutChromium() }, () => {
  let plane: MediaPlane;
  let chromium: ToneBrowser;
  let mix: MediaMix;

  before(async () => {
    plane = new MediaPlane({ threads: 1, bindAddress: "127.0.0.1", rtpPorts: ports, mediaTimeoutMs: 2_000 });
    chromium = await launchToneBrowser(BROWSER_TONE_HZ);
    mix = plane.openMix();
  });
  after(async () => {
    await chromium?.close();
    await mix?.close();
    await plane?.close();
  });

  it("carries audio both ways and the page's keys, and ends when the page closes", async () => {
    const page = await blankSecurePage(chromium.browser);
    let answered: Awaited<ReturnType<MediaPlane["openWebRtcStream"]>> | undefined;
    await connectPage(page, async (offer) => {
      answered = await plane.openWebRtcStream(offer, ["127.0.0.1"], mix);
      return answered.answer;
    });
    assert.ok(answered);
    const { stream, answer } = answered;
    assert.match(answer, /^a=ice-lite\r$/m, "ICE-lite said at session level");
    assert.equal(stream.thread, mix.thread, "the stream is on its mix's thread");
    assert.match(
      answer,
      new RegExp(`^a=candidate:\\S+ 1 udp \\d+ 127\\.0\\.0\\.1 ${stream.localPort} typ host`, "m"),
    );
    assert.equal((answer.match(/^a=candidate:/gm) ?? []).length, 1, "one host candidate: the address given");

    // Alone first (a voice recording is made outside a mix, as the name prompt does), then in the mix.
    const heard = await stream.recordVoice(1_500);
    const level = goertzelLevelDb(
      heard.subarray(heard.length - SOUND_SAMPLE_RATE / 2),
      BROWSER_TONE_HZ,
      SOUND_SAMPLE_RATE,
    );
    assert.ok(level > -30, `the stream hears the browser's 1 kHz (${level.toFixed(1)} dBFS)`);

    stream.join(mix, false);
    mix.play({
      samples: new ToneGenerator(ROOM_TONE_HZ, 0.5, SOUND_SAMPLE_RATE).fill(
        new Int16Array(SOUND_SAMPLE_RATE * 30),
      ),
    });
    await measurePageTone(page, ROOM_TONE_HZ);
    await until("the page to hear the room's tone", async () =>
      (await pageToneLevel(page)) > PAGE_HEARD_DB ? true : undefined,
    );

    const digits: string[] = [];
    stream.on("digit", (key) => digits.push(key));
    await page.evaluate(() => {
      const pc = (window as unknown as { pc: RTCPeerConnection }).pc;
      pc.getSenders()[0]?.dtmf?.insertDTMF("*6", 100, 70);
    });
    await until("the page's keys", async () => (digits.length >= 2 ? true : undefined), { timeoutMs: 5_000 });
    assert.deepEqual(digits, ["*", "6"]);

    const statsBefore = await plane.stats();
    assert.equal(statsBefore.threads[0]?.streams.length, 1);
    const closed = once(stream, "closed");
    await page.evaluate(() => (window as unknown as { pc: RTCPeerConnection }).pc.close());
    await closed;
    await until("the stream to be gone from its thread", async () =>
      (await plane.stats()).threads[0]?.streams.length === 0 ? true : undefined,
    );
    await page.context().close();
  });

  it("gives its port back after a media timeout closes it, so ports never run out", async () => {
    // Two pairs in the range: more browsers than that, each timed out and closed, need every port back.
    for (let round = 0; round < 4; round++) {
      const page = await blankSecurePage(chromium.browser);
      let answered: Awaited<ReturnType<MediaPlane["openWebRtcStream"]>> | undefined;
      await connectPage(page, async (offer) => {
        answered = await plane.openWebRtcStream(offer, ["127.0.0.1"], mix);
        return answered.answer;
      });
      assert.ok(answered);
      const timedOut = once(answered.stream, "timeout");
      // The page goes silent without a word: its transport stopped, no DTLS close.
      await page.evaluate(() => {
        const pc = (window as unknown as { pc: RTCPeerConnection }).pc;
        for (const sender of pc.getSenders()) void sender.replaceTrack(null);
      });
      if (round === 0) await timedOut;
      answered.stream.close();
      await page.context().close();
    }
    await until("every stream to close", async () =>
      (await plane.stats()).threads[0]?.streams.length === 0 ? true : undefined,
    );
  });

  it("refuses an offer that is not one, by code", async () => {
    await assert.rejects(
      plane.openWebRtcStream("v=0\r\nnot an offer\r\n", ["127.0.0.1"], mix),
      (error: unknown) => error instanceof MediaError && error.code === "MEDIA_ERR_OFFER",
    );
    await assert.rejects(
      plane.openWebRtcStream("hello", ["127.0.0.1"], mix),
      (error: unknown) => error instanceof MediaError && error.code === "MEDIA_ERR_OFFER",
    );
  });
});
