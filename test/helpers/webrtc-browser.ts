/**
 * Headless Chromium as a browser participant: its fake microphone plays a tone file, and a page
 * measures a tone in the audio it receives with a Web Audio analyser (the loudest reading of the
 * last half second, so that one late packet on a loaded machine does not read as silence).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { ToneGenerator, writeWav } from "./audio.js";
import { CHROMIUM } from "./browser.js";

/** The page reads a tone at or above this (dB of its analyser bin; a tone at half scale reads about -20). */
export const PAGE_HEARD_DB = -50;

export interface ToneBrowser {
  readonly browser: Browser;
  close(): Promise<void>;
}

/** Chromium whose microphone plays `toneHz` (48 kHz, half scale), loopback addresses in its candidates. */
export async function launchToneBrowser(toneHz: number): Promise<ToneBrowser> {
  const folder = mkdtempSync(join(tmpdir(), "webrtc-browser-"));
  const toneFile = join(folder, `tone-${toneHz}.wav`);
  writeWav(toneFile, new ToneGenerator(toneHz, 0.5, 48_000).fill(new Int16Array(48_000 * 10)), 48_000);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--use-fake-ui-for-media-stream",
      "--use-fake-device-for-media-stream",
      `--use-file-for-fake-audio-capture=${toneFile}`,
      "--autoplay-policy=no-user-gesture-required",
      // Host candidates as plain addresses, not mDNS names: nothing sent to the multicast group.
      "--disable-features=WebRtcHideLocalIpsWithMdns",
    ],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

/**
 * Starts measuring `toneHz` in the audio an `<audio>` element (by selector) or the page's
 * `window.remoteStream` plays; read it with `pageToneLevel`.
 */
export async function measurePageTone(page: Page, toneHz: number, selector?: string): Promise<void> {
  await page.evaluate(
    async ({ toneHz, selector }) => {
      const page = window as unknown as { toneLevels?: number[]; remoteStream?: MediaStream };
      // No named functions in here: the test runner's compiler would wrap them in a helper the page lacks.
      let stream: MediaStream | null = null;
      while (stream === null) {
        const element =
          selector === undefined ? null : (document.querySelector(selector) as HTMLAudioElement | null);
        const found = (element?.srcObject as MediaStream | null) ?? page.remoteStream ?? null;
        if (found !== null && found.getAudioTracks().length > 0) stream = found;
        else await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const context = new AudioContext({ sampleRate: 48_000 });
      const analyser = context.createAnalyser();
      analyser.fftSize = 4096;
      analyser.smoothingTimeConstant = 0;
      context.createMediaStreamSource(stream).connect(analyser);
      const spectrum = new Float32Array(analyser.frequencyBinCount);
      const bin = Math.round((toneHz * analyser.fftSize) / context.sampleRate);
      const recent: number[] = [];
      page.toneLevels = recent;
      setInterval(() => {
        analyser.getFloatFrequencyData(spectrum);
        recent.push(
          Math.max(spectrum[bin - 1] as number, spectrum[bin] as number, spectrum[bin + 1] as number),
        );
        if (recent.length > 50) recent.shift();
      }, 10);
    },
    { toneHz, selector },
  );
}

/** The loudest reading of the measured tone over the last half second (dB); -200 before any. */
export async function pageToneLevel(page: Page): Promise<number> {
  return page.evaluate(() => {
    const levels = (window as unknown as { toneLevels?: number[] }).toneLevels ?? [];
    return levels.length === 0 ? -200 : Math.max(...levels);
  });
}

/**
 * In the page: a peer connection with the fake microphone, offered with its candidates gathered;
 * `answerOffer` (exposed by the test) answers it. Sets `window.remoteStream` and `window.pc`.
 */
export async function connectPage(
  page: Page,
  answerOffer: (offer: string) => Promise<string>,
): Promise<void> {
  await page.exposeFunction("answerOffer", answerOffer);
  await page.evaluate(async () => {
    const page = window as unknown as {
      answerOffer(offer: string): Promise<string>;
      remoteStream?: MediaStream;
      pc?: RTCPeerConnection;
    };
    const microphone = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
    });
    const pc = new RTCPeerConnection();
    page.pc = pc;
    pc.addTrack(microphone.getAudioTracks()[0] as MediaStreamTrack, microphone);
    pc.ontrack = (event) => {
      const stream = new MediaStream([event.track]);
      // Chromium plays a remote track into Web Audio only while a media element also has it.
      const element = new Audio();
      element.muted = true;
      element.srcObject = stream;
      void element.play();
      page.remoteStream = stream;
    };
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise<void>((resolve) => {
      if (pc.iceGatheringState === "complete") resolve();
      pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && resolve();
    });
    const answer = await page.answerOffer(pc.localDescription?.sdp ?? "");
    await pc.setRemoteDescription({ type: "answer", sdp: answer });
  });
}

/** A page on a secure origin (getUserMedia needs one): http://127.0.0.1 is, about:blank is not. */
export async function blankSecurePage(browser: Browser): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.route("http://127.0.0.1:1/", (route) =>
    route.fulfill({ contentType: "text/html", body: "<title>test</title>" }),
  );
  await page.goto("http://127.0.0.1:1/");
  return page;
}
