/**
 * End-to-end conference media: `node --import tsx bench/media/room.ts`. For each participant count
 * (BENCH_PARTICIPANTS, default "100,200,300,500") the real service runs in a child process of its own
 * (so CPU and resident memory are its alone, its media threads included) and holds that many calls in
 * conferences of 10 that dial direct (no press-1 greeting: SIPp presses nothing), placed through the
 * dial plan to SIPp trunks that answer and echo every RTP packet back (-rtp_echo,
 * test/fixtures/sipp/bench-leg.xml), a continuous stream both ways through G.711, the jitter buffer and
 * the mixer. Once the API shows every attendee connected and a warm-up has passed, it measures for
 * BENCH_SECONDS (default 20), then closes the service, which hangs every call up.
 *
 * BENCH_MEDIA_THREADS sets the service's `sip.mediaThreads` (default: the service's own default, one
 * per core; 0 runs the media on the main thread). BENCH_API_LOAD=1 runs the API benchmark's GET
 * conference load (autocannon, 100 connections, flat out, in a process of its own:
 * bench/api/load-generator.ts) through the whole window, and reports its rate and p99 beside the
 * media figures.
 *
 * Each row: CPU of the service process, of the SIPp trunks, of the API load generator and of
 * everything else on the machine (each in percent of one core), resident memory, the media threads'
 * tick lateness over the window (the worst thread's), skipped ticks, frames the mixes owed but did not
 * send, RTP received, lost, late and concealed on our side, all read through the public
 * `telephony.media.stats()`; the kernel's UDP receive drops at our sockets and machine-wide, and how
 * many attendees the API showed connected at the window's start and end. The run is invalid (exit
 * status 1) unless every leg was in its room for the whole window: every attendee `connected` and
 * every conference `started` (through the API) right before the window and right after it; the media
 * threads holding the same streams, one per participant and each in a mix, at both ends of the window
 * (a call that left and came back is a new stream) and each hearing its echo (at least half of what
 * it was sent came back); every SIPp trunk seeing every call follow its script; and, with the API
 * load, the API answering only 2xx, no request failing and the load covering the window.
 *
 * One user owns every room, so the per-user limits on placed calls (toll fraud,
 * BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER, default 250, and BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER,
 * default 1000) are set by the bench to the participant count: at the defaults, a run past 250
 * would have its 251st call refused (403 Not Called). The bench says so when it starts.
 *
 * BENCH_WARM_UP_SECONDS (default 2) is the wait between every call connected and the window: the
 * suite's smoke run (test/bench/benches.test.ts) shortens it.
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
import { loadConfig } from "../../src/config.js";
import type { MediaPlaneStats } from "../../src/telephony/media/plane/media-plane.js";
import type { StreamStats } from "../../src/telephony/media/plane/protocol.js";
import { Sipp } from "../../test/helpers/sipp.js";
import { type LoadOutcome, runInLoadGenerator, startLoadGenerator } from "../api/load-generator.js";
import { childJiffies, machineJiffies, processJiffies, udpDropsAt, udpReceiveBufferErrors } from "../proc.js";

const PARTICIPANTS = (process.env.BENCH_PARTICIPANTS ?? "100,200,300,500").split(",").map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** The service's media threads: BENCH_MEDIA_THREADS, read the way the service reads its own setting. */
const MEDIA_THREADS = loadConfig({ BRIDGELINE_MEDIA_THREADS: process.env.BENCH_MEDIA_THREADS }).sip
  .mediaThreads;
const API_LOAD = process.env.BENCH_API_LOAD === "1";
const ROOM_SIZE = 10;
/** Legs per SIPp process: one process echoes all its calls' RTP on one port, in one thread. */
const LEGS_PER_SIPP = 100;
/** Attendee numbers are +1 604 555 PXXX, P the SIPp process: at most 10 processes. */
const MAX_PARTICIPANTS = 10 * LEGS_PER_SIPP;
/** Conferences set pending per second: 10 calls each, paced so call setup stays far below its limit. */
const CONFERENCES_PER_SECOND = 20;
const WARM_UP_MS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 2) * 1000;
const ANSWER_TIMEOUT_MS = 60_000;
/** Attendee states of a call still to be placed or answered: the wait for every call goes on while any is. */
const SETTLING_STATES = new Set(["new", "calling"]);
/** Conference states before its room starts: the wait goes on for their attendees too. */
const NOT_YET_STARTED = new Set(["new", "pending"]);
/** Each leg must hear at least this share of what it was sent in the window back (SIPp echoes it). */
const MIN_ECHOED_SHARE = 0.5;
/** How often the API is asked whether every attendee is connected yet. */
const ANSWER_POLL_MS = 1000;
const TARGET_P99_MS = 5;
/** The media threads keep lateness for their last 3000 ticks (60 s) since the last reset. */
const LATENESS_SPAN_SECONDS = 60;
/**
 * The API load's measured run starts after its own 2 s warm-up (during ours) and this margin, and runs
 * this much longer than the window, to cover the API checks around it; its timestamps must cover it.
 */
const API_LOAD_LEAD_MS = 1500;
const API_LOAD_EXTRA_SECONDS = 5;
const CHILD_ENV = "BENCH_ROOM_PARTICIPANTS";
const DEFAULT_CONFERENCES = loadConfig({}).conferences;

/**
 * The per-user limits on placed calls the bench sets: one user owns every room, and places exactly
 * one call per participant, all in progress at once.
 */
function callLimitsFor(participants: number) {
  return { maxCallsInProgressPerUser: participants, maxCallsPerHourPerUser: participants };
}
/** The service's RTP ports; the SIPp helper takes its ports from 30000 up. */
const RTP_PORTS = { min: 20000, max: 29999 };

/** The API load over the window, as the load generator measured it. */
interface ApiLoad extends LoadOutcome {
  /** The load generator's CPU over the media window, in percent of one core. */
  cpuPercent: number;
  /** Whether its measured run covered the media window. */
  coveredWindow: boolean;
}

/** What the child measured over the window, sent to the parent. */
interface Measurement extends MediaFigures {
  participants: number;
  /** `sip.mediaThreads` as configured (0: media on the main thread). */
  mediaThreads: number;
  /** Attendees the API showed connected when the wait for them ended. */
  answered: number;
  /** Attendees the API showed `connected`, in conferences it showed `started`, right before the window. */
  connectedAtStart: number;
  /** The same right after the window. */
  connectedAtEnd: number;
  /** Why not every leg was connected at the window's start or end (the first few). */
  notConnected: string[];
  /** Why not every leg was in a mix, the same stream and hearing its echo, over the window (the first few). */
  legProblems: string[];
  /** What the figures cover, when it is not the whole window. */
  mediaNotes: string[];
  cpuPercent: number;
  /** The SIPp trunks' CPU, in percent of one core. */
  sippCpuPercent: number;
  /** Every other process on the machine (other work), in percent of one core. */
  othersCpuPercent: number;
  rssMb: number;
  /** Datagrams the kernel dropped at the service's own SIP and RTP sockets. */
  udpDropsOurs: number;
  /** The same, machine-wide (SIPp's sockets and anyone else's included). */
  udpReceiveBufferDrops: number;
  apiLoad: ApiLoad | null;
  warnings: string[];
}

interface Row extends Measurement {
  sippProcesses: number;
  /** SIPp exit codes that were not 0 (a call left the script), or a note when it had to be killed. */
  sippFailures: string[];
}

// ---- Child: the service under load ----

/** A small client for the service's plain-HTTP API, as the conference owner. */
class Api {
  authorization = "";
  constructor(private readonly baseUrl: string) {}

  async send(method: string, urlPath: string, body: string, expected: number): Promise<Response> {
    const response = await fetch(`${this.baseUrl}${urlPath}`, {
      method,
      headers: {
        accept: "application/xml",
        "content-type": "application/xml",
        authorization: this.authorization,
      },
      body,
    });
    if (response.status !== expected) {
      throw new Error(`${method} ${urlPath} answered ${response.status}: ${await response.text()}`);
    }
    return response;
  }

  async get(urlPath: string): Promise<string> {
    const response = await fetch(`${this.baseUrl}${urlPath}`, {
      headers: { accept: "application/xml", authorization: this.authorization },
    });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`GET ${urlPath} answered ${response.status}: ${body}`);
    return body;
  }

  async create(urlPath: string, body: string): Promise<string> {
    const response = await this.send("POST", urlPath, body, 201);
    await response.arrayBuffer();
    return new URL(response.headers.get("location") ?? "", this.baseUrl).pathname;
  }
}

const xmlParser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", parseTagValue: false });

/** An element's text, whether the parser gave it as a string or as an element with attributes. */
function textOf(element: unknown): string | undefined {
  if (typeof element === "string") return element;
  if (typeof element !== "object" || element === null) return undefined;
  const node = element as Record<string, unknown>;
  return node["@_nil"] === "true" ? undefined : String(node["#text"] ?? "");
}

interface RoomCheck {
  /** Attendees `connected` in a conference that is `started`. */
  connected: number;
  /** Attendees whose call is still to be placed or answered (`new`, `calling`, or in a room not started yet). */
  settling: number;
  /** Every attendee not connected, and every conference not started. */
  problems: string[];
}

/**
 * Whether every leg is in its room, as the public API shows it: each conference `started` and each of
 * its attendees `connected` (GET the conference, GET its attendees).
 */
async function checkRooms(api: Api, conferencePaths: readonly string[]): Promise<RoomCheck> {
  const rooms = await Promise.all(
    conferencePaths.map(async (conferencePath) => {
      const [conference, attendees] = await Promise.all([
        api.get(conferencePath),
        api.get(`${conferencePath}/attendees`),
      ]);
      const conferenceState = textOf(
        (xmlParser.parse(conference) as { conference?: { state?: unknown } }).conference?.state,
      );
      const list = (xmlParser.parse(attendees) as { attendees?: { attendee?: unknown } }).attendees?.attendee;
      const items = ([] as unknown[]).concat(list ?? []) as {
        state?: unknown;
        "phone-number-subscriber-number"?: unknown;
      }[];
      const problems: string[] = [];
      if (conferenceState !== "started")
        problems.push(`${conferencePath} is ${conferenceState}, not started`);
      let connected = 0;
      let settling = 0;
      for (const attendee of items) {
        const state = textOf(attendee.state);
        if (state === "connected") connected++;
        else
          problems.push(
            `${conferencePath}: attendee ${textOf(attendee["phone-number-subscriber-number"])} is ${state}`,
          );
        if (
          (state !== undefined && SETTLING_STATES.has(state)) ||
          (conferenceState !== undefined && NOT_YET_STARTED.has(conferenceState))
        )
          settling++;
      }
      return { connected: conferenceState === "started" ? connected : 0, settling, problems };
    }),
  );
  return {
    connected: rooms.reduce((sum, room) => sum + room.connected, 0),
    settling: rooms.reduce((sum, room) => sum + room.settling, 0),
    problems: rooms.flatMap((room) => room.problems),
  };
}

function attendeeNumber(participant: number): string {
  const trunk = Math.floor(participant / LEGS_PER_SIPP);
  const line = participant % LEGS_PER_SIPP;
  return `+1 604 555 ${trunk}${String(line).padStart(3, "0")}`;
}

/** What the media threads did between two readings of `telephony.media.stats()`. */
interface MediaFigures {
  /** Ticks run over the window, summed over threads. */
  ticks: number;
  skipped: number;
  lateP50: number;
  lateP99: number;
  lateMax: number;
  framesNotSent: number;
  packetsSent: number;
  packetsReceived: number;
  packetsLost: number;
  packetsLate: number;
  framesConcealed: number;
}

type Counter = "packetsSent" | "packetsReceived" | "packetsLost" | "packetsLate" | "framesConcealed";
const COUNTERS: Counter[] = [
  "packetsSent",
  "packetsReceived",
  "packetsLost",
  "packetsLate",
  "framesConcealed",
];

/**
 * Differences of the media threads' counters from `before` (read with `resetLateness`) to `after`;
 * lateness is the worst thread's (highest p99) since the reset. A thread's frames not sent are its
 * legs × its due ticks (run or skipped) less the packets its streams sent: every stream here is in a
 * mix (direct dial, no greeting), which `legProblemsOf` checks.
 */
function mediaFigures(before: MediaPlaneStats, after: MediaPlaneStats): MediaFigures {
  const figures: MediaFigures = {
    ticks: 0,
    skipped: 0,
    lateP50: 0,
    lateP99: -1,
    lateMax: 0,
    framesNotSent: 0,
    packetsSent: 0,
    packetsReceived: 0,
    packetsLost: 0,
    packetsLate: 0,
    framesConcealed: 0,
  };
  for (const [index, end] of after.threads.entries()) {
    const start = before.threads[index];
    if (start === undefined || end.ticks < start.ticks) continue;
    const ticks = end.ticks - start.ticks;
    const skipped = end.skippedTicks - start.skippedTicks;
    figures.ticks += ticks;
    figures.skipped += skipped;
    if (end.lateness.p99 > figures.lateP99) {
      figures.lateP50 = end.lateness.p50;
      figures.lateP99 = end.lateness.p99;
      figures.lateMax = end.lateness.max;
    }
    const startStreams = new Map<number, StreamStats>(
      start.streams.map((stream) => [stream.streamId, stream]),
    );
    let sent = 0;
    for (const stream of end.streams) {
      const earlier = startStreams.get(stream.streamId);
      for (const counter of COUNTERS) {
        const delta = stream[counter] - (earlier?.[counter] ?? 0);
        figures[counter] += delta;
        if (counter === "packetsSent") sent += delta;
      }
    }
    figures.framesNotSent += end.legs * (ticks + skipped) - sent;
  }
  return figures;
}

/**
 * Why not every leg was in its room for the whole window, as the media threads show it: each thread
 * the same at both ends, `participants` streams at both ends and each in a mix, the same streams (a
 * call that left and came back has a new one), and each stream hearing its echo back.
 */
function legProblemsOf(before: MediaPlaneStats, after: MediaPlaneStats, participants: number): string[] {
  const problems: string[] = [];
  for (const [index, end] of after.threads.entries()) {
    const start = before.threads[index];
    if (start === undefined || end.ticks < start.ticks)
      problems.push(`media thread ${index} was replaced during the window`);
  }
  for (const [moment, stats] of [
    ["start", before],
    ["end", after],
  ] as const) {
    const legs = stats.threads.reduce((sum, thread) => sum + thread.legs, 0);
    const streams = stats.threads.reduce((sum, thread) => sum + thread.streams.length, 0);
    if (legs !== participants || streams !== participants)
      problems.push(
        `window ${moment}: ${streams} media streams, ${legs} of them in a mix, for ${participants} participants`,
      );
  }
  const startStreams = new Map(
    before.threads.flatMap((thread) => thread.streams.map((stream) => [stream.streamId, stream] as const)),
  );
  const endStreams = after.threads.flatMap((thread) => thread.streams);
  const gone = new Set(startStreams.keys());
  let unheard = 0;
  for (const stream of endStreams) {
    const start = startStreams.get(stream.streamId);
    if (start === undefined) continue;
    gone.delete(stream.streamId);
    const sent = stream.packetsSent - start.packetsSent;
    const received = stream.packetsReceived - start.packetsReceived;
    if (received < MIN_ECHOED_SHARE * sent) unheard++;
  }
  const arrived = endStreams.length - (startStreams.size - gone.size);
  if (gone.size > 0 || arrived > 0)
    problems.push(`${gone.size} media streams ended during the window and ${arrived} began`);
  if (unheard > 0)
    problems.push(
      `${unheard} legs heard less than ${MIN_ECHOED_SHARE * 100} % of what they were sent back (their peer stopped echoing)`,
    );
  return problems;
}

async function measure(
  participants: number,
  routes: { prefix: string; trunk: string }[],
): Promise<Measurement> {
  // Loaded here, in the service's process alone: the parent (SIPp, the table) has no use for them.
  const [{ startService }, { signupXml }] = await Promise.all([
    import("../../src/main.js"),
    import("../../test/helpers/service.js"),
  ]);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-room-"));
  const warnings: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      warnings.push(...String(chunk).split("\n").filter(Boolean));
      warnings.splice(0, Math.max(0, warnings.length - 20));
      done();
    },
  });
  // Started first, so that its own start-up (loading the TypeScript) is over before anything is measured.
  const loadGenerator = API_LOAD ? startLoadGenerator() : undefined;
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
      conferences: { ...DEFAULT_CONFERENCES, ...callLimitsFor(participants) },
      sip: {
        ...loadConfig({}).sip,
        bindAddress: "127.0.0.1",
        port: 0,
        callerId: "+16045550000",
        routes,
        rtpPorts: RTP_PORTS,
        mediaThreads: MEDIA_THREADS,
      },
    },
    logStream,
  );
  try {
    const { telephony } = service;
    const baseUrl = `http://127.0.0.1:${service.httpPort}`;
    const api = new Api(baseUrl);
    const email = "bench-room@example.com";
    const password = "bench password";
    const ownerPath = await api.create("/users", signupXml(email, password));
    api.authorization = `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}`;
    const startsAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const conferencePaths: string[] = [];
    const roomCount = Math.ceil(participants / ROOM_SIZE);
    for (let room = 0; room < roomCount; room++) {
      const conferencePath = await api.create(
        `${ownerPath}/conferences`,
        `<conference><name>Bench ${room}</name><scheduled-to-start-at>${startsAt}</scheduled-to-start-at>
          <no-moderator type="boolean">true</no-moderator>
          <direct-dial type="boolean">true</direct-dial>
          <announce-attendees type="boolean">false</announce-attendees></conference>`,
      );
      const first = room * ROOM_SIZE;
      await Promise.all(
        Array.from({ length: Math.min(ROOM_SIZE, participants - first) }, (_, i) =>
          api.create(
            `${conferencePath}/attendees`,
            `<attendee><phone-number>${attendeeNumber(first + i)}</phone-number></attendee>`,
          ),
        ),
      );
      conferencePaths.push(conferencePath);
    }
    for (const conferencePath of conferencePaths) {
      const response = await api.send(
        "PUT",
        conferencePath,
        "<conference><state>pending</state></conference>",
        200,
      );
      await response.arrayBuffer();
      await sleep(1000 / CONFERENCES_PER_SECOND);
    }
    // Every call answered and in its room, as the API shows it; no use waiting once every attendee's
    // call has settled (connected, or failed, refused, unanswered: the run is invalid then).
    const answerDeadline = performance.now() + ANSWER_TIMEOUT_MS;
    let rooms = await checkRooms(api, conferencePaths);
    while (rooms.connected < participants && rooms.settling > 0 && performance.now() < answerDeadline) {
      await sleep(ANSWER_POLL_MS);
      rooms = await checkRooms(api, conferencePaths);
    }
    const answered = rooms.connected;

    // The API load: its own 2 s warm-up runs during ours, its measured run covers the window.
    let apiLoadOutcome: Promise<LoadOutcome> | undefined;
    if (loadGenerator !== undefined) {
      apiLoadOutcome = runInLoadGenerator(loadGenerator, {
        url: `${baseUrl}${conferencePaths[0]}`,
        method: "GET",
        headers: { accept: "application/xml", authorization: api.authorization },
        durationSeconds: SECONDS + API_LOAD_EXTRA_SECONDS,
      });
      // Caught here, reported below: a failed load must not leave the rejection unhandled meanwhile.
      apiLoadOutcome.catch(() => undefined);
    }
    await sleep(WARM_UP_MS + (loadGenerator === undefined ? 0 : API_LOAD_LEAD_MS));

    // Every leg must be in its room for the whole window: checked through the API right before it
    // starts and right after it ends (outside the measured span).
    const atStart = await checkRooms(api, conferencePaths);
    const mediaBefore = await telephony.media.stats({ resetLateness: true });
    const isOurs = (port: number) =>
      port === service.sipPort || (port >= RTP_PORTS.min && port <= RTP_PORTS.max);
    const ourDropsBefore = udpDropsAt(isOurs);
    const udpDropsBefore = udpReceiveBufferErrors();
    const machineBefore = machineJiffies();
    const sippBefore = childJiffies(process.ppid, "sipp");
    const loadBefore = loadGenerator?.pid === undefined ? 0 : processJiffies(loadGenerator.pid);
    const cpuBefore = process.cpuUsage();
    const windowFrom = Date.now();
    const wallBefore = performance.now();
    await sleep(SECONDS * 1000);
    // process.cpuUsage() counts every thread of the process, the media threads included.
    const cpu = process.cpuUsage(cpuBefore);
    const wallMs = performance.now() - wallBefore;
    const windowTo = Date.now();
    const machine = machineJiffies();
    const sipp = childJiffies(process.ppid, "sipp") - sippBefore;
    const load = loadGenerator?.pid === undefined ? 0 : processJiffies(loadGenerator.pid) - loadBefore;
    const udpDrops = udpReceiveBufferErrors() - udpDropsBefore;
    const ourDrops = udpDropsAt(isOurs) - ourDropsBefore;
    const mediaAfter = await telephony.media.stats();
    const rssMb = process.memoryUsage().rss / 2 ** 20;
    const atEnd = await checkRooms(api, conferencePaths);
    const notConnected = [
      ...(atStart.connected === participants
        ? []
        : [
            `window start: ${atStart.connected} of ${participants} connected`,
            ...atStart.problems.slice(0, 5),
          ]),
      ...(atEnd.connected === participants
        ? []
        : [`window end: ${atEnd.connected} of ${participants} connected`, ...atEnd.problems.slice(0, 5)]),
    ];

    // Jiffies of one core over the window: all CPUs' jiffies shared out.
    const coreJiffies = (machine.total - machineBefore.total) / os.cpus().length;
    const cpuPercent = ((cpu.user + cpu.system) / 1000 / wallMs) * 100;
    const sippCpuPercent = (sipp / coreJiffies) * 100;
    const loadCpuPercent = (load / coreJiffies) * 100;
    const machineCpuPercent = ((machine.busy - machineBefore.busy) / coreJiffies) * 100;
    let apiLoad: ApiLoad | null = null;
    if (apiLoadOutcome !== undefined) {
      const outcome = await apiLoadOutcome;
      apiLoad = {
        ...outcome,
        cpuPercent: loadCpuPercent,
        coveredWindow: outcome.measuredFrom <= windowFrom && outcome.measuredTo >= windowTo,
      };
    }
    const media = mediaFigures(mediaBefore, mediaAfter);
    const mediaNotes =
      SECONDS > LATENESS_SPAN_SECONDS
        ? [`lateness covers the window's last ${LATENESS_SPAN_SECONDS} s only`]
        : [];
    return {
      participants,
      mediaThreads: MEDIA_THREADS,
      answered,
      connectedAtStart: atStart.connected,
      connectedAtEnd: atEnd.connected,
      notConnected,
      legProblems: legProblemsOf(mediaBefore, mediaAfter, participants),
      mediaNotes,
      ...media,
      cpuPercent,
      sippCpuPercent,
      othersCpuPercent: Math.max(0, machineCpuPercent - cpuPercent - sippCpuPercent - loadCpuPercent),
      rssMb,
      udpDropsOurs: ourDrops,
      udpReceiveBufferDrops: udpDrops,
      apiLoad,
      warnings,
    };
  } finally {
    loadGenerator?.kill();
    await service.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---- Parent: SIPp trunks, one child per participant count, the table ----

async function runOne(participants: number): Promise<Row> {
  const trunks: Sipp[] = [];
  const sippProcesses = Math.ceil(participants / LEGS_PER_SIPP);
  let child: ChildProcess | undefined;
  try {
    for (let index = 0; index < sippProcesses; index++) {
      trunks.push(
        await Sipp.start({
          scenario: "bench-leg.xml",
          calls: Math.min(LEGS_PER_SIPP, participants - index * LEGS_PER_SIPP),
          timeoutSeconds: SECONDS + 180,
          args: ["-rtp_echo"],
          traceMessages: false,
        }),
      );
    }
    const routes = trunks.map((trunk, index) => ({
      prefix: `+1604555${index}`,
      trunk: `sip:127.0.0.1:${trunk.sipPort}`,
    }));
    child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, [CHILD_ENV]: String(participants), BENCH_ROUTES: JSON.stringify(routes) },
    });
    const exited = once(child, "exit");
    const [message] = (await Promise.race([once(child, "message"), exited])) as [unknown];
    if (typeof message !== "object" || message === null) {
      throw new Error(`the service process for ${participants} participants exited with ${String(message)}`);
    }
    await exited;
    // The service hung every call up as it closed: each trunk should now finish its calls and exit 0.
    const sippFailures: string[] = [];
    for (const [index, trunk] of trunks.entries()) {
      const outcome = await trunk.result(15_000).catch(() => null);
      if (outcome === null) sippFailures.push(`trunk ${index} still running 15 s after the service closed`);
      else if (outcome.code !== 0) {
        sippFailures.push(
          `trunk ${index} exited ${outcome.code ?? outcome.signal}: ${trunk.errors().slice(0, 500)}`,
        );
      }
    }
    return { ...(message as Measurement), sippProcesses, sippFailures };
  } finally {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    for (const trunk of trunks) await trunk.stop();
  }
}

/** Why the run is not valid (empty when it is): what failed, whatever the figures. */
function problemsOf(row: Row): string[] {
  const load = row.apiLoad;
  return [
    ...(row.answered === row.participants
      ? []
      : [
          `only ${row.answered} of ${row.participants} attendees connected when the wait for them ended (every call settled, or ${ANSWER_TIMEOUT_MS / 1000} s)`,
        ]),
    ...row.notConnected,
    ...row.legProblems,
    ...row.sippFailures,
    ...(load === null || (load.non2xx === 0 && load.errors === 0)
      ? []
      : [
          `the API answered ${load.non2xx} non-2xx and had ${load.errors} errors under load (status codes ${JSON.stringify(load.statusCodes)})`,
        ]),
    ...(load === null || load.coveredWindow ? [] : ["the API load did not cover the whole window"]),
  ];
}

function holds(row: Row): boolean {
  return (
    problemsOf(row).length === 0 &&
    row.lateP99 < TARGET_P99_MS &&
    row.skipped === 0 &&
    row.framesNotSent === 0 &&
    row.udpDropsOurs === 0
  );
}

function table(rows: Row[]): string {
  const withLoad = rows.some((row) => row.apiLoad !== null);
  const header = [
    "participants",
    "media threads",
    "SIPp",
    "answered",
    "connected start",
    "connected end",
    "ticks",
    "CPU %",
    "SIPp CPU %",
    ...(withLoad ? ["load gen CPU %"] : []),
    "others CPU %",
    "RSS MB",
    "late p50 ms",
    "late p99 ms",
    "late max ms",
    "skipped",
    "frames not sent",
    "RTP received",
    "RTP lost",
    "RTP late",
    "concealed",
    "UDP drops ours",
    "UDP drops machine",
    ...(withLoad ? ["API req/s", "API p99 ms", "API non-2xx", "API errors"] : []),
    "target",
  ];
  const cells = rows.map((row) => [
    String(row.participants),
    String(row.mediaThreads),
    String(row.sippProcesses),
    String(row.answered),
    String(row.connectedAtStart),
    String(row.connectedAtEnd),
    String(row.ticks),
    row.cpuPercent.toFixed(1),
    row.sippCpuPercent.toFixed(0),
    ...(withLoad ? [row.apiLoad?.cpuPercent.toFixed(0) ?? "-"] : []),
    row.othersCpuPercent.toFixed(0),
    row.rssMb.toFixed(0),
    row.lateP50.toFixed(2),
    row.lateP99.toFixed(2),
    row.lateMax.toFixed(2),
    String(row.skipped),
    String(row.framesNotSent),
    String(row.packetsReceived),
    String(row.packetsLost),
    String(row.packetsLate),
    String(row.framesConcealed),
    String(row.udpDropsOurs),
    String(row.udpReceiveBufferDrops),
    ...(withLoad
      ? [
          row.apiLoad?.requestsPerSecond.toFixed(0) ?? "-",
          row.apiLoad?.p99Ms.toFixed(1) ?? "-",
          String(row.apiLoad?.non2xx ?? "-"),
          String(row.apiLoad?.errors ?? "-"),
        ]
      : []),
    holds(row) ? "holds" : "misses",
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...cells.map((row) => row[column]?.length ?? 0)),
  );
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padStart(widths[column] ?? 0)).join(" | ")} |`;
  const rule = `|${widths.map((width) => `${"-".repeat(width + 1)}:`).join("|")}|`;
  return [line(header), rule, ...cells.map(line)].join("\n");
}

async function main(): Promise<void> {
  for (const participants of PARTICIPANTS) {
    if (!(participants > 0 && participants <= MAX_PARTICIPANTS)) {
      throw new Error(`BENCH_PARTICIPANTS: each count must be 1 to ${MAX_PARTICIPANTS}, got ${participants}`);
    }
  }
  process.stdout.write(
    `per-user call limits set by the bench to the participant count (calls in progress at once and calls an hour; the service's defaults are ${DEFAULT_CONFERENCES.maxCallsInProgressPerUser} and ${DEFAULT_CONFERENCES.maxCallsPerHourPerUser}): one user owns every room\n`,
  );
  process.stderr.write(
    `media threads: ${MEDIA_THREADS}${MEDIA_THREADS === 0 ? " (media on the main thread)" : ""}; API load: ${API_LOAD ? "GET conference, flat out" : "none"}; load average ${os
      .loadavg()
      .map((value) => value.toFixed(2))
      .join(" ")}\n`,
  );
  const rows: Row[] = [];
  let valid = true;
  for (const participants of PARTICIPANTS) {
    process.stderr.write(`${participants} participants: setting up, then ${SECONDS} s measured...\n`);
    const row = await runOne(participants).catch((error: unknown) => {
      process.stderr.write(`  FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
      return null;
    });
    if (row === null) {
      valid = false;
      continue;
    }
    rows.push(row);
    process.stderr.write(
      `  done; load average ${os
        .loadavg()
        .map((value) => value.toFixed(2))
        .join(" ")}\n`,
    );
    if (row.mediaNotes.length > 0) process.stderr.write(`  note: ${row.mediaNotes.join("\n  note: ")}\n`);
    const problems = problemsOf(row);
    if (problems.length > 0) {
      valid = false;
      process.stderr.write(
        `  INVALID: ${problems.join("\n  ")}\n  last warnings:\n  ${row.warnings.join("\n  ")}\n`,
      );
    }
  }
  process.stdout.write(`${table(rows)}\n`);
  // The largest count below which every measured count held the target too.
  const ascending = [...rows].sort((a, b) => a.participants - b.participants);
  const firstMiss = ascending.findIndex((row) => !holds(row));
  const largest = ascending[(firstMiss === -1 ? ascending.length : firstMiss) - 1]?.participants;
  process.stdout.write(
    `target (p99 tick lateness < ${TARGET_P99_MS} ms, no tick skipped, every frame sent, no datagram dropped at our sockets${API_LOAD ? ", the API load answered 2xx throughout" : ""}): ${
      largest === undefined ? "held at no count" : `held up to ${largest} participants`
    }\n`,
  );
  if (valid) {
    process.stdout.write(
      "valid: every leg connected and in its room for the whole window (the API, the media threads and SIPp agree)\n",
    );
  } else {
    process.stderr.write(
      "\n*** INVALID RUN: not every leg was connected in its room for the whole window, a trunk saw a call leave its script, or the API load failed (see INVALID above) ***\n",
    );
    process.exitCode = 1;
  }
}

async function child(participants: number): Promise<void> {
  const routes = JSON.parse(process.env.BENCH_ROUTES ?? "[]") as { prefix: string; trunk: string }[];
  const measurement = await measure(participants, routes);
  // Handles left open (HTTP keep-alive, for one) must not keep the parent waiting.
  process.send?.(measurement, () => process.exit(0));
}

const childParticipants = process.env[CHILD_ENV];
if (childParticipants === undefined) await main();
else await child(Number(childParticipants));
