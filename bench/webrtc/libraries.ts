/**
 * WebRTC libraries for browser legs (issue 28): werift and node-datachannel, each against the real
 * browser (Debian's headless Chromium, fake microphone playing a 1 kHz tone file). The page offers
 * (as the join page will), the Node side answers: it receives the browser's Opus RTP over
 * DTLS-SRTP and decodes it with the media path's own OpusDecoder, and sends Opus RTP of a 700 Hz
 * tone (the media path's OpusEncoder) that the page measures with a Web Audio analyser. Figures:
 * time from the page's "connect" to first audio each way, CPU of this process (all its threads:
 * node-datachannel's native ones too) per call at 1 and at BENCH_PEERS concurrent calls over
 * BENCH_SECONDS after BENCH_WARM_UP_SECONDS of audio both ways, memory; and what the browser saw of
 * the transport (ICE-lite or not, SRTP and DTLS ciphers, the addresses of the selected pair). Exits
 * 1 when any call did not hear its tone both ways, from the start and still at the end.
 *
 * Loopback only: the Node side's only candidate is 127.0.0.1, and the browser has no ICE servers.
 *
 *   node --import tsx bench/webrtc/libraries.ts
 *   BENCH_LIBRARIES=werift BENCH_PEERS=10 BENCH_SECONDS=20 BENCH_WARM_UP_SECONDS=5
 */
import nodeDataChannel from "node-datachannel";
import type { Page } from "playwright-core";
import {
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtpHeader,
  RtpPacket,
  MediaStreamTrack as WeriftTrack,
} from "werift";
import {
  OPUS_FRAME_SAMPLES,
  OPUS_MAX_FRAME_SAMPLES,
  OPUS_MAX_PACKET_BYTES,
  OPUS_SAMPLE_RATE,
  OpusDecoder,
  OpusEncoder,
} from "../../src/telephony/media/codec/opus.js";
import { goertzelLevelDb, ToneGenerator } from "../../test/helpers/audio.js";
import { launchToneBrowser } from "../../test/helpers/webrtc-browser.js";

const LIBRARIES = (process.env.BENCH_LIBRARIES ?? "werift,node-datachannel").split(",");
const PEER_COUNTS = [1, Number(process.env.BENCH_PEERS ?? 10)].filter((n, i, all) => all.indexOf(n) === i);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 5);
const BROWSER_TONE_HZ = 1000;
const NODE_TONE_HZ = 700;
/** A 20 ms frame whose tone reads above this (Goertzel, dBFS) counts as heard. */
const HEARD_DB = -30;
/** The page's analyser reads the Node side's tone above this (dB of its FFT bin; the tone reads about -20). */
const PAGE_HEARD_DB = -50;
/** Chromium's payload type for opus/48000/2 in its offers. */
const OPUS_PAYLOAD_TYPE = 111;
const FIRST_AUDIO_TIMEOUT_MS = 10_000;

/** The Node side of one call: answers the browser's offer, hands out Opus payloads, sends them. */
interface NodePeer {
  answer(offer: string): Promise<string>;
  onOpus(listener: (payload: Uint8Array) => void): void;
  sendOpus(packet: Buffer): void;
  close(): void;
}

function weriftPeer(): NodePeer {
  const pc = new RTCPeerConnection({
    iceLite: true,
    iceUseIpv6: false,
    iceInterfaceAddresses: { udp4: "127.0.0.1" },
    iceAdditionalHostAddresses: ["127.0.0.1"],
    codecs: {
      audio: [
        new RTCRtpCodecParameters({
          mimeType: "audio/opus",
          clockRate: OPUS_SAMPLE_RATE,
          channels: 2,
          payloadType: OPUS_PAYLOAD_TYPE,
        }),
      ],
    },
  });
  const sending = new WeriftTrack({ kind: "audio" });
  let listener: (payload: Uint8Array) => void = () => {};
  pc.onTransceiverAdded.subscribe((transceiver) => {
    transceiver.setDirection("sendrecv");
    void transceiver.sender.replaceTrack(sending);
    transceiver.onTrack.subscribe((track) => {
      track.onReceiveRtp.subscribe((rtp) => listener(rtp.payload));
    });
  });
  let sequence = 0;
  let timestamp = 0;
  return {
    async answer(offer) {
      await pc.setRemoteDescription({ type: "offer", sdp: offer });
      await pc.setLocalDescription(await pc.createAnswer());
      return pc.localDescription?.sdp ?? "";
    },
    onOpus(next) {
      listener = next;
    },
    sendOpus(packet) {
      sequence = (sequence + 1) & 0xffff;
      timestamp = (timestamp + OPUS_FRAME_SAMPLES) >>> 0;
      const header = new RtpHeader({ payloadType: OPUS_PAYLOAD_TYPE, sequenceNumber: sequence, timestamp });
      sending.writeRtp(new RtpPacket(header, packet));
    },
    close: () => void pc.close(),
  };
}

function dataChannelPeer(): NodePeer {
  const pc = new nodeDataChannel.PeerConnection("bench", { iceServers: [], bindAddress: "127.0.0.1" });
  const ssrc = (Math.random() * 0xffffffff) >>> 0;
  // A local track with the browser's mid before the offer is applied: libdatachannel answers with it.
  const audio = new nodeDataChannel.Audio("0", "SendRecv");
  audio.addOpusCodec(OPUS_PAYLOAD_TYPE);
  audio.addSSRC(ssrc, "bridgeline");
  const track = pc.addTrack(audio);
  const header = Buffer.alloc(12);
  let sequence = 0;
  let timestamp = 0;
  return {
    answer(offer) {
      return new Promise((resolve) => {
        pc.onGatheringStateChange((state) => {
          if (state === "complete") resolve(pc.localDescription()?.sdp ?? "");
        });
        pc.setRemoteDescription(offer, "offer");
      });
    },
    onOpus(listener) {
      track.onMessage((message) => {
        // RTCP shares the track (RFC 5761): payload types 72-76 with the marker bit are 200-204.
        const payloadType = (message[1] as number) & 0x7f;
        if (payloadType !== OPUS_PAYLOAD_TYPE) return;
        const extension = ((message[0] as number) & 0x10) !== 0;
        let offset = 12 + 4 * ((message[0] as number) & 0x0f);
        if (extension) offset += 4 + 4 * message.readUInt16BE(offset + 2);
        listener(message.subarray(offset));
      });
    },
    sendOpus(packet) {
      if (!track.isOpen()) return;
      sequence = (sequence + 1) & 0xffff;
      timestamp = (timestamp + OPUS_FRAME_SAMPLES) >>> 0;
      header[0] = 0x80;
      header[1] = OPUS_PAYLOAD_TYPE;
      header.writeUInt16BE(sequence, 2);
      header.writeUInt32BE(timestamp, 4);
      header.writeUInt32BE(ssrc, 8);
      track.sendMessageBinary(Buffer.concat([header, packet]));
    },
    close: () => pc.close(),
  };
}

const PEERS: Record<string, () => NodePeer> = { werift: weriftPeer, "node-datachannel": dataChannelPeer };

/**
 * In the page: a call to the Node side with the fake microphone, and a 700 Hz detector on what it
 * receives. Resolves at once; the page's `calls[id]` fills in as the call goes.
 */
const PAGE_CONNECT = async (id: number, heardDb: number): Promise<void> => {
  type Call = { connectAt: number; firstHeardAt: number | null; levelDb: number };
  const page = window as unknown as {
    calls: Record<number, Call>;
    connections: Record<number, InstanceType<typeof window.RTCPeerConnection>>;
    microphone?: Promise<MediaStream>;
    audioContext?: AudioContext;
    signal(id: number, offer: string): Promise<string>;
  };
  page.calls ??= {};
  page.connections ??= {};
  const call: Call = { connectAt: Date.now(), firstHeardAt: null, levelDb: -200 };
  page.calls[id] = call;
  page.microphone ??= navigator.mediaDevices.getUserMedia({
    audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
  });
  const microphone = await page.microphone;
  page.audioContext ??= new AudioContext({ sampleRate: 48_000 });
  const context = page.audioContext;
  // The browser's own, not werift's of the same name imported above.
  const pc = new window.RTCPeerConnection();
  page.connections[id] = pc;
  pc.addTrack(microphone.getAudioTracks()[0] as MediaStreamTrack, microphone);
  pc.ontrack = (event) => {
    const stream = new MediaStream([event.track]);
    // Chromium plays a remote track into Web Audio only while a media element also has it.
    const element = new Audio();
    element.muted = true;
    element.srcObject = stream;
    void element.play();
    const analyser = context.createAnalyser();
    analyser.fftSize = 4096;
    analyser.smoothingTimeConstant = 0;
    context.createMediaStreamSource(stream).connect(analyser);
    const spectrum = new Float32Array(analyser.frequencyBinCount);
    const bin = Math.round((700 * analyser.fftSize) / context.sampleRate);
    // The level is the loudest reading of the last half second: a reading between two late
    // packets on a loaded machine is not the tone gone.
    const recent: number[] = [];
    setInterval(() => {
      analyser.getFloatFrequencyData(spectrum);
      const level = Math.max(
        spectrum[bin - 1] as number,
        spectrum[bin] as number,
        spectrum[bin + 1] as number,
      );
      recent.push(level);
      if (recent.length > 50) recent.shift();
      call.levelDb = Math.max(...recent);
      if (call.firstHeardAt === null && level > heardDb) call.firstHeardAt = Date.now();
    }, 10);
  };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise<void>((resolve) => {
    if (pc.iceGatheringState === "complete") resolve();
    pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && resolve();
  });
  const answer = await page.signal(id, pc.localDescription?.sdp ?? "");
  await pc.setRemoteDescription({ type: "answer", sdp: answer });
};

interface CallResult {
  connectAt: number;
  /** When the Node side first decoded a frame with the browser's tone in it. */
  nodeHeardAt: number | null;
  /** When the page first measured the Node side's tone. */
  pageHeardAt: number | null;
  /** The browser's tone in the last frame the Node side decoded, dBFS. */
  nodeLevelDb: number;
  pageLevelDb: number;
}

interface Round {
  library: string;
  /** What the browser saw of the first call's transport. */
  transport: string;
  peers: number;
  calls: CallResult[];
  cpuMsPerCallSecond: number;
  rssMiB: number;
  heapMiB: number;
}

async function round(page: Page, library: string, peerCount: number, firstId: number): Promise<Round> {
  const makePeer = PEERS[library];
  if (makePeer === undefined) throw new Error(`unknown library ${library}`);
  let running = true;
  const peers: NodePeer[] = [];
  const nodeHeard: { at: number | null; levelDb: number }[] = [];
  const pcm = new Int16Array(OPUS_MAX_FRAME_SAMPLES);
  const packet = new Uint8Array(OPUS_MAX_PACKET_BYTES);
  const encoders: OpusEncoder[] = [];
  const decoders: OpusDecoder[] = [];
  for (let i = 0; i < peerCount; i++) {
    const peer = makePeer();
    const decoder = new OpusDecoder({ sampleRate: OPUS_SAMPLE_RATE });
    const heard = { at: null as number | null, levelDb: -200 };
    peer.onOpus((payload) => {
      // node-datachannel may still deliver packets queued on its threads after close().
      if (!running) return;
      const samples = decoder.decode(payload, pcm);
      heard.levelDb = goertzelLevelDb(pcm.subarray(0, samples), BROWSER_TONE_HZ, OPUS_SAMPLE_RATE);
      if (heard.at === null && heard.levelDb > HEARD_DB) heard.at = Date.now();
    });
    peers.push(peer);
    nodeHeard.push(heard);
    decoders.push(decoder);
    encoders.push(new OpusEncoder({ sampleRate: OPUS_SAMPLE_RATE }));
  }
  // Each call encodes and sends its own 700 Hz tone every 20 ms, as a leg's send path would.
  const tone = new ToneGenerator(NODE_TONE_HZ, 0.5, OPUS_SAMPLE_RATE);
  const frame = new Int16Array(OPUS_FRAME_SAMPLES);
  const ticker = setInterval(() => {
    if (!running) return;
    for (let i = 0; i < peerCount; i++) {
      tone.fill(frame);
      const length = (encoders[i] as OpusEncoder).encode(frame, packet);
      (peers[i] as NodePeer).sendOpus(Buffer.from(packet.subarray(0, length)));
    }
  }, 20);

  let answered = "";
  await page.exposeFunction(`signal${firstId}`, async (id: number, offer: string) => {
    const answer = loopbackOnly(await (peers[id - firstId] as NodePeer).answer(offer));
    answered ||= answer;
    return iceLiteAtSessionLevel(answer);
  });
  await page.evaluate((name) => {
    const page = window as unknown as Record<string, unknown>;
    page.signal = page[name];
  }, `signal${firstId}`);
  await Promise.all(
    Array.from({ length: peerCount }, (_, i) =>
      page.evaluate(`(${PAGE_CONNECT.toString()})(${firstId + i}, ${PAGE_HEARD_DB})`),
    ),
  );
  const pageCalls = async () =>
    (await page.evaluate("window.calls")) as Record<
      number,
      { connectAt: number; firstHeardAt: number | null; levelDb: number }
    >;
  const deadline = Date.now() + FIRST_AUDIO_TIMEOUT_MS;
  for (;;) {
    const calls = await pageCalls();
    const allHeard = nodeHeard.every(
      (heard, i) => heard.at !== null && calls[firstId + i]?.firstHeardAt != null,
    );
    if (allHeard || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const transport = `library's answer: a=ice-lite ${iceLiteLevel(answered)}; ${await page.evaluate(TRANSPORT_STATS, firstId)}`;
  // The first seconds of a round carry JIT compilation and the handshakes' own work.
  await new Promise((resolve) => setTimeout(resolve, WARM_UP_SECONDS * 1000));
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  const cpu = process.cpuUsage(cpuBefore);
  const wallSeconds = (performance.now() - wallBefore) / 1000;
  const memory = process.memoryUsage();
  const calls = await pageCalls();
  running = false;
  clearInterval(ticker);
  for (const peer of peers) peer.close();
  for (const codec of [...encoders, ...decoders]) codec.dispose();
  // The page's peer connections are left to the page's close: a new page per round.
  return {
    library,
    transport,
    peers: peerCount,
    calls: nodeHeard.map((heard, i) => {
      const pageCall = calls[firstId + i];
      return {
        connectAt: pageCall?.connectAt ?? 0,
        nodeHeardAt: heard.at,
        pageHeardAt: pageCall?.firstHeardAt ?? null,
        nodeLevelDb: heard.levelDb,
        pageLevelDb: pageCall?.levelDb ?? -200,
      };
    }),
    cpuMsPerCallSecond: (cpu.user + cpu.system) / 1000 / wallSeconds / peerCount,
    rssMiB: memory.rss / 2 ** 20,
    heapMiB: memory.heapUsed / 2 ** 20,
  };
}

/**
 * The answer with its candidates on 127.0.0.1 alone (werift also gathers the machine's other
 * addresses, whatever `iceInterfaceAddresses` says): the browser's checks go to loopback only.
 */
function loopbackOnly(sdp: string): string {
  return sdp
    .split("\r\n")
    .filter((line) => !line.startsWith("a=candidate:") || line.split(" ")[4] === "127.0.0.1")
    .join("\r\n");
}

/**
 * werift writes a=ice-lite in each media section, where Chromium ignores it; RFC 8839 §5.3 has it
 * at session level only. Moved there, Chromium takes the server for the ICE-lite agent it is.
 */
function iceLiteAtSessionLevel(sdp: string): string {
  if (!sdp.includes("\r\na=ice-lite\r\n")) return sdp;
  const lines = sdp.split("\r\n").filter((line) => line !== "a=ice-lite");
  const firstMedia = lines.findIndex((line) => line.startsWith("m="));
  lines.splice(firstMedia, 0, "a=ice-lite");
  return lines.join("\r\n");
}

/** Where an SDP says a=ice-lite: RFC 8839 §5.3 allows it at session level only. */
function iceLiteLevel(sdp: string): string {
  const firstMedia = sdp.indexOf("\r\nm=");
  const at = sdp.indexOf("\r\na=ice-lite");
  if (at === -1) return "absent";
  return firstMedia !== -1 && at > firstMedia ? "in the media section" : "at session level";
}

/** In the page: what the browser negotiated for one call (its transport and selected pair). */
const TRANSPORT_STATS = async (id: number): Promise<string> => {
  const page = window as unknown as {
    connections: Record<number, InstanceType<typeof window.RTCPeerConnection>>;
  };
  const pc = page.connections[id];
  if (pc === undefined) return "no connection";
  // Chromium's re-serialised view of the answer: a=ice-lite where it took it, at session level.
  const iceLite = /^a=ice-lite/m.test(pc.remoteDescription?.sdp ?? "");
  const stats = [...(await pc.getStats()).values()] as unknown as Record<string, unknown>[];
  const transport = stats.find((stat) => stat.type === "transport");
  const pair = stats.find((stat) => stat.id === transport?.selectedCandidatePairId);
  const local = stats.find((stat) => stat.id === pair?.localCandidateId);
  const remote = stats.find((stat) => stat.id === pair?.remoteCandidateId);
  return (
    `ice-lite as Chromium took it ${iceLite ? "yes" : "no"}, DTLS ${transport?.tlsVersion} ${transport?.dtlsCipher}, SRTP ${transport?.srtpCipher}, ` +
    `pair ${local?.address}:${local?.port} (${local?.candidateType}) → ${remote?.address}:${remote?.port} (${remote?.candidateType})`
  );
};

/** CPU of the Opus work alone (encode and decode one 20 ms frame), in ms per call-second. */
function opusCpuMsPerCallSecond(): number {
  const encoder = new OpusEncoder({ sampleRate: OPUS_SAMPLE_RATE });
  const decoder = new OpusDecoder({ sampleRate: OPUS_SAMPLE_RATE });
  const frame = new ToneGenerator(BROWSER_TONE_HZ, 0.5, OPUS_SAMPLE_RATE).fill(
    new Int16Array(OPUS_FRAME_SAMPLES),
  );
  const packet = new Uint8Array(OPUS_MAX_PACKET_BYTES);
  const pcm = new Int16Array(OPUS_MAX_FRAME_SAMPLES);
  const frames = 500;
  const before = process.cpuUsage();
  for (let i = 0; i < frames; i++) {
    const length = encoder.encode(frame, packet);
    decoder.decode(packet.subarray(0, length), pcm);
    goertzelLevelDb(pcm.subarray(0, OPUS_FRAME_SAMPLES), BROWSER_TONE_HZ, OPUS_SAMPLE_RATE);
  }
  const cpu = process.cpuUsage(before);
  encoder.dispose();
  decoder.dispose();
  return (cpu.user + cpu.system) / 1000 / (frames / 50);
}

function ms(at: number | null, from: number): string {
  return at === null ? "never" : String(at - from);
}

async function main(): Promise<void> {
  const toneBrowser = await launchToneBrowser(BROWSER_TONE_HZ);
  const browser = toneBrowser.browser;
  // What this process spends with the browser up and no call: the floor under each round's figure.
  const idleBefore = process.cpuUsage();
  const idleWall = performance.now();
  await new Promise((resolve) => setTimeout(resolve, Math.min(SECONDS, 5) * 1000));
  const idle = process.cpuUsage(idleBefore);
  const idleMsPerSecond = (idle.user + idle.system) / (performance.now() - idleWall);
  console.log(`idle (browser up, no call): ${idleMsPerSecond.toFixed(1)} ms CPU per second`);
  let failed = false;
  const rounds: Round[] = [];
  let firstId = 0;
  try {
    for (const library of LIBRARIES) {
      for (const peerCount of PEER_COUNTS) {
        const context = await browser.newContext();
        const page = await context.newPage();
        // A secure context for getUserMedia: http://127.0.0.1 is one, about:blank is not.
        await page.route("http://127.0.0.1:1/", (route) =>
          route.fulfill({ contentType: "text/html", body: "<title>bench</title>" }),
        );
        await page.goto("http://127.0.0.1:1/");
        const result = await round(page, library, peerCount, firstId);
        firstId += peerCount;
        await context.close();
        rounds.push(result);
        const joins = result.calls.map((call) => {
          const both =
            call.nodeHeardAt === null || call.pageHeardAt === null
              ? null
              : Math.max(call.nodeHeardAt, call.pageHeardAt);
          return { ...call, both };
        });
        const worst = joins.reduce<number | null>(
          (most, call) =>
            call.both === null || most === null ? null : Math.max(most, call.both - call.connectAt),
          0,
        );
        console.log(
          `${library} ${peerCount} call(s): connect→audio ms browser→node ${joins.map((c) => ms(c.nodeHeardAt, c.connectAt)).join("/")}` +
            `, node→browser ${joins.map((c) => ms(c.pageHeardAt, c.connectAt)).join("/")}` +
            `, both (worst) ${worst ?? "never"}; CPU ${result.cpuMsPerCallSecond.toFixed(1)} ms per call-second` +
            ` (${((result.cpuMsPerCallSecond / 1000) * 100).toFixed(2)} % of a core per call)` +
            `; rss ${result.rssMiB.toFixed(0)} MiB, heap ${result.heapMiB.toFixed(0)} MiB` +
            `; last levels node ${joins.map((c) => c.nodeLevelDb.toFixed(0)).join("/")} dBFS, page ${joins.map((c) => c.pageLevelDb.toFixed(0)).join("/")} dB`,
        );
        console.log(`${library} transport, as the browser saw it: ${result.transport}`);
        // Heard from the start and still at the end of the window, both ways, every call.
        const stillHeard = joins.every(
          (call) => call.nodeLevelDb > HEARD_DB && call.pageLevelDb > PAGE_HEARD_DB,
        );
        if (worst === null || !stillHeard) failed = true;
      }
      const [one, many] = rounds.filter((result) => result.library === library);
      if (one !== undefined && many !== undefined) {
        // The process's fixed cost while calls run (timers, GC) falls on the single call; the
        // difference between the rounds is what one more call costs.
        const marginal =
          (many.cpuMsPerCallSecond * many.peers - one.cpuMsPerCallSecond * one.peers) /
          (many.peers - one.peers);
        console.log(`${library} each further call: ${marginal.toFixed(1)} ms CPU per call-second`);
      }
    }
  } finally {
    await toneBrowser.close();
  }
  console.log(
    `Opus alone (encode + decode + Goertzel of one frame each 20 ms): ${opusCpuMsPerCallSecond().toFixed(1)} ms per call-second`,
  );
  console.log(failed ? "FAILED: a call did not hear its tone both ways" : "heard both ways: every call");
  process.exit(failed ? 1 : 0);
}

await main();
