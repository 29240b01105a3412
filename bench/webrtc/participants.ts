/**
 * Browser participants against phone participants (issue 28's Performance):
 * `npm run bench:browsers` (`node --import tsx bench/webrtc/participants.ts`).
 *
 * Two rooms, one after the other, each in a service of its own in a child process of its own (so
 * that the CPU measured is the service's alone, its media threads included, and not Chromium's, SIPp's
 * or this driver's). Both rooms hold a "room tone" phone: a SIPp leg answering in Opus that plays a
 * 700 Hz tone at half scale (loud, so that the mixer, which mixes the loudest three, keeps it in every
 * participant's mix), dialled direct when the conference starts. Then:
 *
 * - the phone room: BENCH_BROWSERS more SIPp legs (Opus, test/fixtures/sipp/bench-room-leg.xml, as
 *   bench/media/room.ts uses), each playing a 1 kHz tone, dialled with it;
 * - the browser room: BENCH_BROWSERS (default 5: ten pages of Chromium alone kept both cores of the
 *   2-vCPU machine busy, load average 40-50) pages of one headless Chromium (a context each), whose fake
 *   microphone plays a 1 kHz tone at half scale, joining one after another through the real join
 *   page at /join by the member PIN.
 *
 * Join time, per page: from the click on "Join" (the page's clock) to audio both ways: the page
 * hears the room's 700 Hz (a Web Audio analyser on the page's #remote-audio stream, its bin at or
 * above test/helpers/webrtc-browser.ts's PAGE_HEARD_DB) and the room hears the browser (the service's
 * talk detector tells the events stream the browser's attendee is talking: its decoded audio above
 * -40 dBFS for 60 ms). Also shown: the page's POST /join/calls sent (microphone, offer, ICE
 * gathering), its answer, and the page's "in the room" (ICE and DTLS connected). Goal: under 2 s on loopback; the worst join is judged and the verdict printed.
 *
 * CPU: the service's CPU (all threads, process.cpuUsage() in its process) over BENCH_SECONDS (default
 * 20), each time after BENCH_WARM_UP_SECONDS (default 2): first with the room tone phone alone (the
 * baseline: the service idling, its media threads ticking, one leg), then with every measured leg in.
 * Shown as a share of one core, as CPU milliseconds per participant-second (every leg of the room,
 * the room tone phone included), and as what each measured leg added to the baseline (CPU ms per
 * leg-second); and the browsers' figures over the phones'.
 *
 * The run is invalid (exit 1) unless what it measures happened: every join answered and heard both
 * ways within JOIN_TIMEOUT_MS; every attendee `connected` (the API) right before the window and right
 * after it; the media threads holding the same streams, one per leg, each receiving at least 90 % of
 * the window's 20 ms frames; every 1 kHz leg talking (the events stream) at both ends of the window
 * and never stopping; every page hearing the room's tone at both ends of the window; every SIPp leg
 * following its script (exit 0 once the service hung up). Missing the 2 s goal does not make a run
 * invalid: the verdict says it.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { XMLParser } from "fast-xml-parser";
import type { Page } from "playwright-core";
import { loadConfig } from "../../src/config.js";
import {
  OPUS_FRAME_SAMPLES,
  OPUS_MAX_PACKET_BYTES,
  OPUS_SAMPLE_RATE,
  OpusEncoder,
} from "../../src/telephony/media/codec/opus.js";
import { rtpPacketLength, writeRtpPacket } from "../../src/telephony/media/rtp/rtp-packet.js";
import { type PcapPacket, ToneGenerator, writeRtpPcap } from "../../test/helpers/audio.js";
import { rtpPortRange, SCENARIO_DIR, Sipp } from "../../test/helpers/sipp.js";
import { launchToneBrowser, PAGE_HEARD_DB, type ToneBrowser } from "../../test/helpers/webrtc-browser.js";
import { LEG_FORMATS, writeLegPcap } from "../media/leg-audio.js";
import { machineJiffies, procStat } from "../proc.js";
import { TalkWatch } from "../talk-watch.js";

const BROWSERS = Number(process.env.BENCH_BROWSERS ?? 5);
/** The rooms measured, in order: the phones' (for the comparison) and the browsers'. */
const ROOMS = (process.env.BENCH_ROOMS ?? "phones,browsers").split(",").map((room) => room.trim());
const MAX_BROWSERS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARM_UP_MS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 2) * 1000;
const JOIN_GOAL_MS = 2000;
/** A join not heard both ways this long after its click failed. */
const JOIN_TIMEOUT_MS = 15_000;
const ANSWER_TIMEOUT_MS = 30_000;
const ROOM_TONE_HZ = 700;
/** The browsers' microphone tone, and the phone legs' in the phone room. */
const LEG_TONE_HZ = 1000;
/** The room tone phone's level: the browsers' file's (test/helpers/webrtc-browser.ts). */
const ROOM_TONE_AMPLITUDE = 0.5;
const MIN_RECEIVED_SHARE = 0.9;
/** How long each SIPp leg plays: past the longest a run can take to its window's end. */
const PLAY_SECONDS = Math.ceil(
  (2 * ANSWER_TIMEOUT_MS + BROWSERS * JOIN_TIMEOUT_MS + 2 * WARM_UP_MS) / 1000 + 2 * SECONDS + 60,
);
const CHILD_ENV = "BENCH_BROWSERS_SERVICE_ROUTES";

type RoomKind = "phones" | "browsers";

/** The child's answer to a snapshot: its CPU so far and what its media threads hold. */
interface Snapshot {
  cpuMicros: number;
  wallMs: number;
  /** Streams in a mix, over every media thread. */
  legs: number;
  streams: { streamId: number; packetsReceived: number; codec: string | null }[];
}

type ParentMessage = { type: "snapshot" } | { type: "close" };
type ChildMessage = { type: "ready"; httpPort: number } | ({ type: "snapshot" } & Snapshot);

// ---- Child: the service, nothing else ----

async function serviceChild(routes: { prefix: string; trunk: string }[]): Promise<void> {
  const { startService } = await import("../../src/main.js");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-browsers-"));
  // Warnings and errors only; the last few go to standard error when the service closes.
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split("\n").filter(Boolean));
      logs.splice(0, Math.max(0, logs.length - 20));
      done();
    },
  });
  const service = await startService(
    {
      ...loadConfig({}),
      dataDir,
      host: "127.0.0.1",
      httpsPort: 0,
      httpPort: 0,
      logLevel: "warn",
      failedLoginLimit: 1_000_000,
      signupLimit: 1_000_000,
      sip: {
        ...loadConfig({}).sip,
        bindAddress: "127.0.0.1",
        port: 0,
        callerId: "+16045550000",
        routes,
        rtpPorts: rtpPortRange(),
      },
    },
    logStream,
  );
  const send = (message: ChildMessage) => process.send?.(message);
  process.on("message", (message: ParentMessage) => {
    if (message.type === "snapshot") {
      // Read first: the CPU of the stats request itself falls outside the span it ends.
      const cpu = process.cpuUsage();
      const wallMs = performance.now();
      void service.telephony.media.stats().then((stats) =>
        send({
          type: "snapshot",
          cpuMicros: cpu.user + cpu.system,
          wallMs,
          legs: stats.threads.reduce((sum, thread) => sum + thread.legs, 0),
          streams: stats.threads.flatMap((thread) =>
            thread.streams.map(({ streamId, packetsReceived, codec }) => ({
              streamId,
              packetsReceived,
              codec,
            })),
          ),
        }),
      );
    } else {
      void service.close().then(() => {
        fs.rmSync(dataDir, { recursive: true, force: true });
        if (logs.length > 0) process.stderr.write(`  service's last warnings:\n  ${logs.join("\n  ")}\n`);
        process.exit(0);
      });
    }
  });
  if (service.httpPort === null) throw new Error("the service has no plain-HTTP listener");
  send({ type: "ready", httpPort: service.httpPort });
}

// ---- Parent ----

/** The service's child process, asked for snapshots one at a time. */
class ServiceChild {
  private constructor(
    readonly process: ChildProcess,
    readonly httpPort: number,
  ) {}

  static async start(routes: { prefix: string; trunk: string }[]): Promise<ServiceChild> {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, [CHILD_ENV]: JSON.stringify(routes) },
    });
    const [message] = (await Promise.race([once(child, "message"), once(child, "exit")])) as [unknown];
    if (typeof message !== "object" || message === null || (message as ChildMessage).type !== "ready") {
      child.kill("SIGKILL");
      throw new Error(`the service process did not start (${String(message)})`);
    }
    return new ServiceChild(child, (message as { httpPort: number }).httpPort);
  }

  async snapshot(): Promise<Snapshot> {
    const answer = once(this.process, "message");
    this.process.send({ type: "snapshot" } satisfies ParentMessage);
    const [message] = (await answer) as [ChildMessage];
    if (message.type !== "snapshot") throw new Error(`the service process answered ${message.type}`);
    return message;
  }

  /** Closes the service (every call hung up) and waits for its process to exit. */
  async close(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = once(this.process, "exit");
    this.process.send({ type: "close" } satisfies ParentMessage);
    const timer = setTimeout(() => this.process.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
  }
}

/** The service's plain-HTTP API, as the conference owner. */
class Api {
  authorization = "";
  constructor(readonly baseUrl: string) {}

  async request(
    method: string,
    urlPath: string,
    body: string | undefined,
    expected: number,
  ): Promise<Response> {
    const response = await fetch(`${this.baseUrl}${urlPath}`, {
      method,
      headers: {
        accept: "application/xml",
        "content-type": "application/xml",
        authorization: this.authorization,
      },
      body,
    });
    if (response.status !== expected)
      throw new Error(`${method} ${urlPath} answered ${response.status}: ${await response.text()}`);
    return response;
  }

  async get(urlPath: string): Promise<unknown> {
    return xmlParser.parse(await (await this.request("GET", urlPath, undefined, 200)).text());
  }

  async create(urlPath: string, body: string): Promise<string> {
    const response = await this.request("POST", urlPath, body, 201);
    await response.arrayBuffer();
    return new URL(response.headers.get("location") ?? "", this.baseUrl).pathname;
  }
}

const xmlParser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", parseTagValue: false });

function textOf(element: unknown): string | undefined {
  if (typeof element === "string") return element;
  if (typeof element !== "object" || element === null) return undefined;
  const node = element as Record<string, unknown>;
  return node["@_nil"] === "true" ? undefined : String(node["#text"] ?? "");
}

/** Each attendee's state by id, and the conference's. */
async function roomStates(
  api: Api,
  conferencePath: string,
): Promise<{ conference: string; attendees: Map<number, string> }> {
  const conference = (await api.get(conferencePath)) as { conference?: { state?: unknown } };
  const list = ((await api.get(`${conferencePath}/attendees`)) as { attendees?: { attendee?: unknown } })
    .attendees?.attendee;
  const attendees = new Map<number, string>();
  for (const item of ([] as unknown[]).concat(list ?? []) as { id?: unknown; state?: unknown }[])
    attendees.set(Number(textOf(item.id)), textOf(item.state) ?? "");
  return { conference: textOf(conference.conference?.state) ?? "", attendees };
}

/** One page's join, its moments in ms after the click (null: not reached). */
interface Join {
  attendeeId: number | null;
  /** The page's POST /join/calls sent: microphone, offer and ICE gathering done. */
  offerMs: number | null;
  answerMs: number | null;
  inRoomMs: number | null;
  pageHearsMs: number | null;
  roomHearsMs: number | null;
  /** Both ways: the later of the two hearings. */
  bothMs: number | null;
  problem: string | null;
}

/** What the page records (Date.now() each): the click, "in the room", and its hearing of the room's tone. */
interface PageMarks {
  clickedAt: number | null;
  inRoomAt: number | null;
  heardAt: number | null;
  /** Readings of the tone's bin over the last half second, dB. */
  levels: number[];
}

/**
 * Installs the page's marks before the click: the click on #join, #status turning "in-room", and an
 * analyser on #remote-audio's stream (once there is one) reading `toneHz` every 10 ms.
 */
async function installMarks(page: Page, toneHz: number, heardDb: number): Promise<void> {
  await page.evaluate(
    ({ toneHz, heardDb }) => {
      // No named functions in here: tsx's compiler would wrap them in a helper the page lacks.
      const marks = { clickedAt: null, inRoomAt: null, heardAt: null, levels: [] } as {
        clickedAt: number | null;
        inRoomAt: number | null;
        heardAt: number | null;
        levels: number[];
      };
      (window as unknown as { benchMarks: typeof marks }).benchMarks = marks;
      document.addEventListener(
        "click",
        (event) => {
          if ((event.target as Element | null)?.closest("#join") && marks.clickedAt === null)
            marks.clickedAt = Date.now();
        },
        { capture: true },
      );
      const status = document.querySelector("#status") as Element;
      new MutationObserver(() => {
        if (marks.inRoomAt === null && status.getAttribute("data-state") === "in-room")
          marks.inRoomAt = Date.now();
      }).observe(status, { attributes: true, attributeFilter: ["data-state"] });
      const audio = document.querySelector("#remote-audio") as HTMLAudioElement;
      const waiting = setInterval(() => {
        const stream = audio.srcObject as MediaStream | null;
        if (stream === null || stream.getAudioTracks().length === 0) return;
        clearInterval(waiting);
        const context = new AudioContext({ sampleRate: 48_000 });
        const analyser = context.createAnalyser();
        // 43 ms: a short window, so that the first reading of the tone comes soon after it does.
        analyser.fftSize = 2048;
        analyser.smoothingTimeConstant = 0;
        context.createMediaStreamSource(stream).connect(analyser);
        const spectrum = new Float32Array(analyser.frequencyBinCount);
        const bin = Math.round((toneHz * analyser.fftSize) / context.sampleRate);
        setInterval(() => {
          analyser.getFloatFrequencyData(spectrum);
          const level = Math.max(
            spectrum[bin - 1] as number,
            spectrum[bin] as number,
            spectrum[bin + 1] as number,
          );
          if (marks.heardAt === null && level >= heardDb) marks.heardAt = Date.now();
          marks.levels.push(level);
          if (marks.levels.length > 50) marks.levels.shift();
        }, 10);
      }, 5);
    },
    { toneHz, heardDb },
  );
}

async function pageMarks(page: Page): Promise<PageMarks> {
  return page.evaluate(() => (window as unknown as { benchMarks: PageMarks }).benchMarks);
}

/** The loudest reading of the room's tone in the page over the last half second, dB. */
async function pageLevel(page: Page): Promise<number> {
  const { levels } = await pageMarks(page);
  return levels.length === 0 ? -200 : Math.max(...levels);
}

/** One page joins by PIN through the join page; resolves once heard both ways, or with its problem. */
async function joinOnePage(page: Page, pin: string, talk: TalkWatch): Promise<Join> {
  const join: Join = {
    attendeeId: null,
    offerMs: null,
    answerMs: null,
    inRoomMs: null,
    pageHearsMs: null,
    roomHearsMs: null,
    bothMs: null,
    problem: null,
  };
  await page.goto("/join");
  await installMarks(page, ROOM_TONE_HZ, PAGE_HEARD_DB);
  await page.locator("#pin").fill(pin);
  const answered = page.waitForResponse(
    (response) => response.url().endsWith("/join/calls") && response.request().method() === "POST",
    { timeout: JOIN_TIMEOUT_MS },
  );
  let offeredAt: number | null = null;
  page.on("request", (request) => {
    if (offeredAt === null && request.method() === "POST" && request.url().endsWith("/join/calls"))
      offeredAt = Date.now();
  });
  await page.locator("#join").click();
  const deadline = Date.now() + JOIN_TIMEOUT_MS;
  try {
    const response = await answered;
    const answeredAt = Date.now();
    const body = (await response.json()) as { attendeeId?: number; message?: string };
    if (response.status() !== 201 || body.attendeeId === undefined) {
      join.problem = `the join was answered ${response.status()}: ${body.message ?? ""}`;
      return join;
    }
    const attendeeId = body.attendeeId;
    join.attendeeId = attendeeId;
    let marks = await pageMarks(page);
    const clickedAt = marks.clickedAt ?? Number.NaN;
    join.offerMs = offeredAt === null ? null : offeredAt - clickedAt;
    join.answerMs = answeredAt - clickedAt;
    while (
      Date.now() < deadline &&
      (marks.heardAt === null || marks.inRoomAt === null || !talk.firstTalking.has(attendeeId))
    ) {
      await sleep(20);
      marks = await pageMarks(page);
    }
    const roomHeardAt = talk.firstTalking.get(attendeeId);
    join.inRoomMs = marks.inRoomAt === null ? null : marks.inRoomAt - clickedAt;
    join.pageHearsMs = marks.heardAt === null ? null : marks.heardAt - clickedAt;
    join.roomHearsMs = roomHeardAt === undefined ? null : roomHeardAt - clickedAt;
    if (join.pageHearsMs !== null && join.roomHearsMs !== null)
      join.bothMs = Math.max(join.pageHearsMs, join.roomHearsMs);
    else
      join.problem = `not heard both ways within ${JOIN_TIMEOUT_MS / 1000} s of the click: ${[
        ...(marks.inRoomAt === null ? ["the page never showed in the room"] : []),
        ...(marks.heardAt === null ? [`the page did not hear the room's ${ROOM_TONE_HZ} Hz`] : []),
        ...(roomHeardAt === undefined ? ["the room did not hear the browser talking"] : []),
      ].join("; ")}`;
  } catch (error) {
    join.problem = `the join failed: ${error instanceof Error ? error.message : String(error)}`;
  }
  return join;
}

/** A SIPp trunk answering in Opus, every call playing `pcap`, on a loopback address of its own. */
async function startTrunk(scenario: string, pcap: string, calls: number, address: string): Promise<Sipp> {
  return Sipp.start({
    scenario,
    pcap,
    calls,
    timeoutSeconds: PLAY_SECONDS + 60,
    // After the helper's own -mi: the last one given is the one SIPp takes (see bench/media/room.ts).
    args: ["-mi", address],
    traceMessages: false,
  });
}

/** The Opus leg scenario, from the room benchmark's template. */
function writeOpusScenario(file: string): void {
  const { payloadType, rtpmap, fmtp, clockRate } = LEG_FORMATS.opus;
  const caseBlind = rtpmap.replace(/[a-z]/gi, (letter) => `[${letter.toUpperCase()}${letter.toLowerCase()}]`);
  fs.writeFileSync(
    file,
    fs
      .readFileSync(path.join(SCENARIO_DIR, "bench-room-leg.xml"), "utf8")
      .replaceAll("CODEC_PAYLOAD_TYPE", String(payloadType))
      .replaceAll("CODEC_OFFER_REGEXP", caseBlind)
      .replaceAll(
        "CODEC_ATTRIBUTES",
        [`a=rtpmap:${payloadType} ${rtpmap}`, `a=fmtp:${payloadType} ${fmtp}`].join("\n      "),
      )
      .replaceAll("CLOCK_RATE", String(clockRate)),
  );
}

/** The room tone phone's RTP: ROOM_TONE_HZ in Opus at ROOM_TONE_AMPLITUDE (leg-audio.ts's talkers are quieter). */
function writeRoomTonePcap(file: string, seconds: number): void {
  const encoder = new OpusEncoder();
  const tone = new ToneGenerator(ROOM_TONE_HZ, ROOM_TONE_AMPLITUDE, OPUS_SAMPLE_RATE);
  const pcm = new Int16Array(OPUS_FRAME_SAMPLES);
  const payload = new Uint8Array(OPUS_MAX_PACKET_BYTES);
  const packets: PcapPacket[] = [];
  try {
    for (let frame = 0; frame < seconds * 50; frame++) {
      const length = encoder.encode(tone.fill(pcm), payload);
      const header = {
        marker: frame === 0,
        payloadType: LEG_FORMATS.opus.payloadType,
        sequenceNumber: frame & 0xffff,
        timestamp: frame * 960,
        ssrc: 0x1e9007,
        csrcs: [],
      };
      const datagram = Buffer.alloc(rtpPacketLength(header, length));
      writeRtpPacket(header, payload.subarray(0, length), datagram);
      packets.push({ offsetMs: frame * 20, datagram });
    }
  } finally {
    encoder.dispose();
  }
  writeRtpPcap(file, packets);
}

interface Files {
  scenario: string;
  roomTone: string;
  legTone: string;
}

/** What one room measured. */
interface RoomResult {
  kind: RoomKind;
  /** Legs in the room: the room tone phone and the measured ones. */
  participants: number;
  joins: Join[];
  cpuPercent: number;
  /** CPU ms of the service per participant-second. */
  cpuMsPerParticipantSecond: number;
  /** The service's CPU with the room tone phone alone, percent of one core. */
  baselineCpuPercent: number;
  /** What each measured leg added to the baseline: CPU ms per leg-second. */
  cpuMsPerAddedLegSecond: number;
  /** Chromium's processes (all of them), percent of one core; null in the phone room. */
  chromiumCpuPercent: number | null;
  /** Everything else on the machine (SIPp, this driver, other work), percent of one core. */
  othersCpuPercent: number;
  connectedAtStart: number;
  connectedAtEnd: number;
  talkingThroughout: number;
  /** Pages hearing the room's tone at the window's start and end (browser room). */
  hearingAtStart: number;
  hearingAtEnd: number;
  problems: string[];
}

/** CPU jiffies of `root` and every process under it. */
function treeJiffies(root: number): number {
  const children = new Map<number, number[]>();
  const own = new Map<number, number>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat === null) continue;
    const parent = Number(stat.fields[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    own.set(Number(entry), Number(stat.fields[11]) + Number(stat.fields[12]));
  }
  let jiffies = 0;
  const queue = [root];
  for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
    jiffies += own.get(pid) ?? 0;
    queue.push(...(children.get(pid) ?? []));
  }
  return jiffies;
}

/** The pid of the Chromium playwright started (this process's child named chromium or chrome). */
function chromiumPid(): number | null {
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat !== null && Number(stat.fields[1]) === process.pid && /^chrom/.test(stat.command))
      return Number(entry);
  }
  return null;
}

async function runRoom(kind: RoomKind, files: Files, chromium: ToneBrowser | null): Promise<RoomResult> {
  const measured = BROWSERS;
  const participants = measured + 1;
  const problems: string[] = [];
  const trunks: Sipp[] = [];
  let service: ServiceChild | undefined;
  let talk: TalkWatch | undefined;
  const contexts: { close(): Promise<void> }[] = [];
  try {
    trunks.push(await startTrunk(files.scenario, files.roomTone, 1, "127.0.0.2"));
    if (kind === "phones")
      trunks.push(await startTrunk(files.scenario, files.legTone, measured, "127.0.0.3"));
    // The room tone phone is +1 604 555 9999 (the first trunk), the phone legs +1 604 555 10LL.
    const routes = trunks.map((trunk, index) => ({
      prefix: index === 0 ? "+16045559999" : "+16045551",
      trunk: `sip:127.0.0.1:${trunk.sipPort}`,
    }));
    service = await ServiceChild.start(routes);
    const api = new Api(`http://127.0.0.1:${service.httpPort}`);
    const email = "bench-browsers@example.com";
    const password = "bench password";
    const { signupXml } = await import("../../test/helpers/service.js");
    const ownerPath = await api.create("/users", signupXml(email, password));
    api.authorization = `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}`;
    talk = await TalkWatch.open(api.baseUrl, ownerPath, api.authorization);
    const startsAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const conferencePath = await api.create(
      `${ownerPath}/conferences`,
      `<conference><name>Bench ${kind}</name><scheduled-to-start-at>${startsAt}</scheduled-to-start-at>
        <no-moderator type="boolean">true</no-moderator><direct-dial type="boolean">true</direct-dial>
        <announce-attendees type="boolean">false</announce-attendees></conference>`,
    );
    const attendeePath = async (number: string) => {
      const created = await api.create(
        `${conferencePath}/attendees`,
        `<attendee><phone-number>${number}</phone-number></attendee>`,
      );
      return Number(created.slice(created.lastIndexOf("/") + 1));
    };
    const roomToneId = await attendeePath("+1 604 555 9999");
    /** The attendees sending the 1 kHz: the phone legs, or the browsers once joined. */
    const legIds: number[] = [];
    await (
      await api.request("PUT", conferencePath, "<conference><state>pending</state></conference>", 200)
    ).arrayBuffer();
    await untilConnected(api, conferencePath, 1);
    // The page hears the room's tone once the phone's pcap is in the mix: wait for it to be talking.
    const toneDeadline = Date.now() + 10_000;
    while (!talk.talking.has(roomToneId) && Date.now() < toneDeadline) await sleep(50);
    if (!talk.talking.has(roomToneId)) throw new Error("the room tone phone was not heard talking");
    await sleep(WARM_UP_MS);
    // The service with the room tone phone alone: what the measured legs add is the rest.
    const baselineBefore = await service.snapshot();
    await sleep(SECONDS * 1000);
    const baselineAfter = await service.snapshot();
    const baselineCpuPercent = cpuPercentBetween(baselineBefore, baselineAfter);

    if (kind === "phones") {
      // Added to the started conference, each is dialled at once.
      for (let leg = 0; leg < measured; leg++)
        legIds.push(await attendeePath(`+1 604 555 10${String(leg).padStart(2, "0")}`));
      await untilConnected(api, conferencePath, participants);
    }

    const joins: Join[] = [];
    const pages: Page[] = [];
    if (kind === "browsers") {
      if (chromium === null) throw new Error("no browser");
      const conference = (await api.get(conferencePath)) as { conference?: Record<string, unknown> };
      const pin = textOf(conference.conference?.["member-pin"]);
      if (pin === undefined) throw new Error("the conference has no member PIN");
      for (let index = 0; index < measured; index++) {
        const context = await chromium.browser.newContext({ baseURL: api.baseUrl });
        contexts.push(context);
        const page = await context.newPage();
        page.setDefaultTimeout(JOIN_TIMEOUT_MS);
        pages.push(page);
        const join = await joinOnePage(page, pin, talk);
        joins.push(join);
        process.stderr.write(
          `  browser ${index + 1}: ${join.bothMs === null ? `FAILED: ${join.problem}` : `heard both ways ${join.bothMs} ms after the click`}\n`,
        );
        if (join.problem !== null) problems.push(`browser ${index + 1}: ${join.problem}`);
        if (join.attendeeId !== null) legIds.push(join.attendeeId);
      }
    }

    // Every 1 kHz leg heard by the room before the warm-up: no use waiting for one that failed to join.
    const talkDeadline = Date.now() + 15_000;
    while (legIds.some((id) => !talk?.talking.has(id)) && Date.now() < talkDeadline) await sleep(50);
    await sleep(WARM_UP_MS);

    const browserPid = kind === "browsers" ? chromiumPid() : null;
    const atStart = await roomStates(api, conferencePath);
    const levelsAtStart = await Promise.all(pages.map(pageLevel));
    const talkingAtStart = new Set(talk.talking);
    talk.mark();
    const machineBefore = machineJiffies();
    const chromiumBefore = browserPid === null ? 0 : treeJiffies(browserPid);
    const before = await service.snapshot();
    await sleep(SECONDS * 1000);
    const after = await service.snapshot();
    const chromiumJiffies = browserPid === null ? 0 : treeJiffies(browserPid) - chromiumBefore;
    const machine = machineJiffies();
    const talkingAtEnd = new Set(talk.talking);
    const levelsAtEnd = await Promise.all(pages.map(pageLevel));
    const atEnd = await roomStates(api, conferencePath);

    const wallMs = after.wallMs - before.wallMs;
    const cpuPercent = cpuPercentBetween(before, after);
    const coreJiffies = (machine.total - machineBefore.total) / os.cpus().length;
    const machinePercent = ((machine.busy - machineBefore.busy) / coreJiffies) * 100;
    const chromiumCpuPercent = browserPid === null ? null : (chromiumJiffies / coreJiffies) * 100;

    const expectedIds = [roomToneId, ...legIds];
    for (const [moment, check] of [
      ["start", atStart],
      ["end", atEnd],
    ] as const) {
      if (check.conference !== "started")
        problems.push(`window ${moment}: the conference is ${check.conference}`);
      const notConnected = [...check.attendees].filter(([, state]) => state !== "connected");
      if (notConnected.length > 0 || check.attendees.size !== participants)
        problems.push(
          `window ${moment}: ${check.attendees.size - notConnected.length} of ${participants} attendees connected (${notConnected
            .slice(0, 5)
            .map(([id, state]) => `${id} ${state}`)
            .join(", ")})`,
        );
    }
    const countConnected = (check: typeof atStart) =>
      check.conference === "started"
        ? expectedIds.filter((id) => check.attendees.get(id) === "connected").length
        : 0;
    const talkingThroughout = legIds.filter(
      (id) => talkingAtStart.has(id) && talkingAtEnd.has(id) && !talk?.changed.has(id),
    ).length;
    if (talkingThroughout < measured)
      problems.push(
        `${measured - talkingThroughout} of ${measured} ${LEG_TONE_HZ} Hz legs not heard talking through the whole window`,
      );
    const hearing = (levels: number[]) => levels.filter((level) => level >= PAGE_HEARD_DB).length;
    for (const [moment, levels] of [
      ["start", levelsAtStart],
      ["end", levelsAtEnd],
    ] as const) {
      if (hearing(levels) < pages.length)
        problems.push(
          `window ${moment}: ${pages.length - hearing(levels)} of ${pages.length} pages not hearing the room's ${ROOM_TONE_HZ} Hz (levels ${levels
            .map((level) => level.toFixed(0))
            .join(", ")} dB)`,
        );
    }
    problems.push(...streamProblems(before, after, participants, wallMs));
    if (talk.ended !== null) problems.push(`the events stream failed: ${talk.ended}`);

    return {
      kind,
      participants,
      joins,
      cpuPercent,
      cpuMsPerParticipantSecond: (cpuPercent * 10) / participants,
      baselineCpuPercent,
      cpuMsPerAddedLegSecond: ((cpuPercent - baselineCpuPercent) * 10) / measured,
      chromiumCpuPercent,
      othersCpuPercent: Math.max(0, machinePercent - cpuPercent - (chromiumCpuPercent ?? 0)),
      connectedAtStart: countConnected(atStart),
      connectedAtEnd: countConnected(atEnd),
      talkingThroughout,
      hearingAtStart: hearing(levelsAtStart),
      hearingAtEnd: hearing(levelsAtEnd),
      problems,
    };
  } finally {
    talk?.close();
    for (const context of contexts) await context.close().catch(() => undefined);
    await service?.close();
    // The service hung every call up as it closed: each trunk finishes its calls and exits 0.
    for (const [index, trunk] of trunks.entries()) {
      const outcome = await trunk.result(15_000).catch(() => null);
      if (outcome?.code !== 0)
        problems.push(
          `SIPp trunk ${index} ${outcome === null ? "still running 15 s after the service closed" : `exited ${outcome.code ?? outcome.signal}: ${trunk.errors().slice(0, 800)}`}`,
        );
      await trunk.stop();
    }
  }
}

/** The service's CPU between two snapshots, percent of one core. */
function cpuPercentBetween(before: Snapshot, after: Snapshot): number {
  return ((after.cpuMicros - before.cpuMicros) / 1000 / (after.wallMs - before.wallMs)) * 100;
}

/** Waits until `count` attendees are connected, or throws after ANSWER_TIMEOUT_MS. */
async function untilConnected(api: Api, conferencePath: string, count: number): Promise<void> {
  const deadline = Date.now() + ANSWER_TIMEOUT_MS;
  for (;;) {
    const { attendees } = await roomStates(api, conferencePath);
    const connected = [...attendees.values()].filter((state) => state === "connected").length;
    if (connected >= count) return;
    if (Date.now() > deadline)
      throw new Error(`only ${connected} of ${count} phones connected within ${ANSWER_TIMEOUT_MS / 1000} s`);
    await sleep(250);
  }
}

/**
 * Why the media threads did not hold every leg through the window: `participants` streams at both
 * ends, all in a mix, the same ones, each receiving at least MIN_RECEIVED_SHARE of the window's frames.
 */
function streamProblems(before: Snapshot, after: Snapshot, participants: number, wallMs: number): string[] {
  const problems: string[] = [];
  for (const [moment, snapshot] of [
    ["start", before],
    ["end", after],
  ] as const) {
    if (snapshot.streams.length !== participants || snapshot.legs !== participants)
      problems.push(
        `window ${moment}: ${snapshot.streams.length} media streams, ${snapshot.legs} in a mix, for ${participants} legs`,
      );
  }
  const started = new Map(before.streams.map((stream) => [stream.streamId, stream]));
  const frames = wallMs / 20;
  const unheard = after.streams.filter((stream) => {
    const start = started.get(stream.streamId);
    return (
      start === undefined || stream.packetsReceived - start.packetsReceived < MIN_RECEIVED_SHARE * frames
    );
  });
  if (unheard.length > 0)
    problems.push(
      `${unheard.length} media streams began during the window or received less than ${MIN_RECEIVED_SHARE * 100} % of its 20 ms frames`,
    );
  const notOpus = after.streams.filter((stream) => stream.codec !== "opus");
  if (notOpus.length > 0) problems.push(`${notOpus.length} media streams not sending Opus`);
  return problems;
}

function joinTable(joins: Join[]): string {
  const header = [
    "browser",
    "offer sent ms",
    "answer ms",
    "in the room ms",
    "page hears room ms",
    "room hears browser ms",
    "both ways ms",
  ];
  const cell = (value: number | null) => (value === null ? "-" : String(value));
  const rows = joins.map((join, index) => [
    String(index + 1),
    cell(join.offerMs),
    cell(join.answerMs),
    cell(join.inRoomMs),
    cell(join.pageHearsMs),
    cell(join.roomHearsMs),
    cell(join.bothMs),
  ]);
  return table(header, rows);
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padStart(widths[column] ?? 0)).join(" | ")} |`;
  return [
    line(header),
    `|${widths.map((width) => `${"-".repeat(width + 1)}:`).join("|")}|`,
    ...rows.map(line),
  ].join("\n");
}

function loadAverage(): string {
  return os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
}

async function main(): Promise<void> {
  if (!(Number.isInteger(BROWSERS) && BROWSERS >= 1 && BROWSERS <= MAX_BROWSERS))
    throw new Error(`BENCH_BROWSERS must be 1 to ${MAX_BROWSERS}, got ${process.env.BENCH_BROWSERS}`);
  if (ROOMS.length === 0 || ROOMS.some((room) => room !== "phones" && room !== "browsers"))
    throw new Error(`BENCH_ROOMS must list phones and/or browsers, got ${process.env.BENCH_ROOMS}`);
  process.stderr.write(
    `${BROWSERS} phone legs, then ${BROWSERS} browsers, each beside a room tone phone; ${SECONDS} s measured after ${WARM_UP_MS / 1000} s; load average ${loadAverage()}\n`,
  );
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-browsers-"));
  const files: Files = {
    scenario: path.join(directory, "leg-opus.xml"),
    roomTone: path.join(directory, "room-tone.pcap"),
    legTone: path.join(directory, "leg-tone.pcap"),
  };
  writeOpusScenario(files.scenario);
  writeRoomTonePcap(files.roomTone, PLAY_SECONDS);
  // The phone legs' tone: only the phones' room has them.
  if (ROOMS.includes("phones")) writeLegPcap(files.legTone, "opus", LEG_TONE_HZ, PLAY_SECONDS);
  const rooms: RoomResult[] = [];
  let valid = true;
  let chromium: ToneBrowser | null = null;
  try {
    for (const kind of (["phones", "browsers"] as const).filter((room) => ROOMS.includes(room))) {
      process.stderr.write(`${kind} room: setting up...\n`);
      if (kind === "browsers") chromium = await launchToneBrowser(LEG_TONE_HZ);
      const room = await runRoom(kind, files, chromium).catch((error: unknown) => {
        process.stderr.write(`  FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
        return null;
      });
      process.stderr.write(`  done; load average ${loadAverage()}\n`);
      if (room === null) {
        valid = false;
        continue;
      }
      rooms.push(room);
      if (room.problems.length > 0) {
        valid = false;
        process.stderr.write(`  INVALID: ${room.problems.join("\n  ")}\n`);
      }
    }
  } finally {
    await chromium?.close();
    fs.rmSync(directory, { recursive: true, force: true });
  }

  const browserRoom = rooms.find((room) => room.kind === "browsers");
  const phoneRoom = rooms.find((room) => room.kind === "phones");
  if (browserRoom !== undefined) {
    process.stdout.write(
      `join times, ms after the click on Join (${browserRoom.joins.length} browsers, one after another):\n`,
    );
    process.stdout.write(`${joinTable(browserRoom.joins)}\n`);
    const times = browserRoom.joins.map((join) => join.bothMs);
    const heard = times.filter((time): time is number => time !== null);
    const worst = heard.length === times.length && heard.length > 0 ? Math.max(...heard) : null;
    process.stdout.write(
      worst === null
        ? `worst join: not every browser was heard both ways; goal (under ${JOIN_GOAL_MS} ms): MISSED\n`
        : `worst join: ${worst} ms; goal (under ${JOIN_GOAL_MS} ms): ${worst < JOIN_GOAL_MS ? "met" : "MISSED"}\n`,
    );
  }
  process.stdout.write(
    `${table(
      [
        "room",
        "participants",
        "connected start",
        "connected end",
        "1 kHz legs talking",
        "pages hearing start/end",
        "service CPU % alone",
        "service CPU %",
        "CPU ms per participant-s",
        "CPU ms per added leg-s",
        "Chromium CPU %",
        "others CPU %",
      ],
      rooms.map((room) => [
        `${room.kind}: ${BROWSERS} + room tone phone`,
        String(room.participants),
        String(room.connectedAtStart),
        String(room.connectedAtEnd),
        `${room.talkingThroughout}/${BROWSERS}`,
        room.kind === "browsers" ? `${room.hearingAtStart}/${room.hearingAtEnd}` : "-",
        room.baselineCpuPercent.toFixed(1),
        room.cpuPercent.toFixed(1),
        room.cpuMsPerParticipantSecond.toFixed(2),
        room.cpuMsPerAddedLegSecond.toFixed(2),
        room.chromiumCpuPercent?.toFixed(0) ?? "-",
        room.othersCpuPercent.toFixed(0),
      ]),
    )}\n`,
  );
  if (browserRoom !== undefined && phoneRoom !== undefined) {
    const ratio = (browser: number, phone: number) => `${(browser / phone).toFixed(1)}x`;
    process.stdout.write(
      `CPU per participant (every leg of the room): browser room ${browserRoom.cpuMsPerParticipantSecond.toFixed(2)} ms/s, phone room ${phoneRoom.cpuMsPerParticipantSecond.toFixed(2)} ms/s: ${ratio(browserRoom.cpuMsPerParticipantSecond, phoneRoom.cpuMsPerParticipantSecond)}\n`,
    );
    process.stdout.write(
      `CPU per added leg (over the room tone phone alone): browser ${browserRoom.cpuMsPerAddedLegSecond.toFixed(2)} ms/s, phone ${phoneRoom.cpuMsPerAddedLegSecond.toFixed(2)} ms/s: ${ratio(browserRoom.cpuMsPerAddedLegSecond, phoneRoom.cpuMsPerAddedLegSecond)}\n`,
    );
  }
  if (valid) {
    process.stdout.write(
      "valid: every leg connected and in its room for the whole window, receiving audio, every 1 kHz leg heard talking, every page hearing the room's tone at the window's start and end\n",
    );
  } else {
    process.stderr.write(
      "\n*** INVALID RUN: not every leg joined, stayed, heard and was heard (see INVALID and FAILED above) ***\n",
    );
    process.exitCode = 1;
  }
}

const childRoutes = process.env[CHILD_ENV];
if (childRoutes === undefined) await main();
else await serviceChild(JSON.parse(childRoutes) as { prefix: string; trunk: string }[]);
