/**
 * End-to-end conference media: `node --import tsx bench/media/room.ts`. One row per participant count
 * (BENCH_PARTICIPANTS, default "100,200,300,500"), codec (BENCH_CODECS, default "PCMA"; any of PCMU,
 * PCMA, G722, opus) and talkers per room of 10 (BENCH_TALKERS, default "2"; 1 to 10, "all" is 10),
 * side by side in one run. For each row the real service runs in a child process of its own (so CPU
 * and resident memory are its alone, its media threads included) and holds that many calls in
 * conferences of 10 that dial direct (no press-1 greeting: SIPp presses nothing), placed through the
 * dial plan to SIPp trunks (test/fixtures/sipp/bench-room-leg.xml) that answer with the row's codec
 * and play RTP in it for the whole call (`play_pcap_audio`, leg-audio.ts): in each room the first
 * `talkers` legs each play a tone of their own, every other leg plays digital silence, whatever the
 * service sends them (no echo). Once the API shows every attendee connected, the events stream shows
 * every talker talking and a warm-up has passed, it measures for BENCH_SECONDS (default 20), then
 * closes the service, which hangs every call up.
 *
 * BENCH_MEDIA_THREADS sets the service's `sip.mediaThreads` (default: the service's own default, one
 * per core; 0 runs the media on the main thread). BENCH_MIX_TALKERS sets its BRIDGELINE_MIX_TALKERS
 * (default 3: the loudest three of a room are mixed, everyone else hears one shared mix); 10 mixes
 * every leg of a room of 10 with its own mix and its own encode, as every room was before the
 * shared mix. BENCH_API_LOAD=1 runs the API benchmark's GET
 * conference load (autocannon, 100 connections, flat out, in a process of its own:
 * bench/api/load-generator.ts) through the whole window, and reports its rate and p99 beside the
 * media figures.
 *
 * Each row: CPU of the service process (and per participant), of the SIPp trunks, of the API load
 * generator and of everything else on the machine (each in percent of one core), resident memory, the
 * media threads' tick lateness over the window (the worst thread's), skipped ticks, frames the mixes
 * owed but did not send, RTP received, lost, late and concealed on our side, all read through the
 * public `telephony.media.stats()`; the kernel's UDP receive drops at our sockets and elsewhere, and
 * how many attendees the API showed connected at the window's start and end. The run is invalid
 * (exit status 1) unless every leg was in its room for the whole window: every attendee `connected`
 * and every conference `started` (through the API) right before the window and right after it; the
 * media threads holding the same streams, one per participant and each in a mix, at both ends of the
 * window (a call that left and came back is a new stream), each receiving audio (at least half of the
 * window's 20 ms frames arrived), none dropping a packet as a payload type the negotiation did not
 * list, each sending the row's codec, and each in a room mixing at 16 kHz for G.722 and Opus, 8 kHz
 * for G.711 (the media stats name both); every talker talking and every listener silent through the window, as the service's talk
 * detector tells the events stream; every SIPp trunk seeing every call follow its script (an offer
 * without the row's codec fails the call there); and, with the API load, the API answering only 2xx,
 * no request failing and the load covering the window.
 *
 * One user owns every room, so the per-user limits on placed calls (toll fraud,
 * BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER, default 250, and BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER,
 * default 1000) are set by the bench to the participant count: at the defaults, a run past 250
 * would have its 251st call refused (403 Not Called). The bench says so when it starts.
 *
 * BENCH_WARM_UP_SECONDS (default 2) is the wait between every talker heard and the window: the
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
import { audioRateOf } from "../../src/telephony/media/codec/audio-codec.js";
import type { MediaPlaneStats } from "../../src/telephony/media/plane/media-plane.js";
import type { StreamStats } from "../../src/telephony/media/plane/protocol.js";
import { SCENARIO_DIR, Sipp } from "../../test/helpers/sipp.js";
import { type LoadOutcome, runInLoadGenerator, startLoadGenerator } from "../api/load-generator.js";
import { childJiffies, machineJiffies, processJiffies } from "../proc.js";
import { TalkWatch } from "../talk-watch.js";
import { LEG_CODECS, LEG_FORMATS, type LegCodec, TALKER_TONES_HZ, writeLegPcap } from "./leg-audio.js";

const PARTICIPANTS = (process.env.BENCH_PARTICIPANTS ?? "100,200,300,500").split(",").map(Number);
const CODECS = (process.env.BENCH_CODECS ?? "PCMA").split(",");
const ROOM_SIZE = 10;
/** Talkers per room of 10, each value a row: a count, or "all" (every leg of the room). */
const TALKER_COUNTS = (process.env.BENCH_TALKERS ?? "2")
  .split(",")
  .map((value) => (value === "all" ? ROOM_SIZE : Number(value)));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** The service's media threads: BENCH_MEDIA_THREADS, read the way the service reads its own setting. */
const MEDIA_THREADS = loadConfig({ BRIDGELINE_MEDIA_THREADS: process.env.BENCH_MEDIA_THREADS }).sip
  .mediaThreads;
/** The service's talkers mixed at once: BENCH_MIX_TALKERS, read as the service reads its setting. */
const MIX_TALKERS = loadConfig({ BRIDGELINE_MIX_TALKERS: process.env.BENCH_MIX_TALKERS }).sip.mixTalkers;
const API_LOAD = process.env.BENCH_API_LOAD === "1";
/**
 * Legs per SIPp process. SIPp 3.6.1 plays each call's pcap in a thread of its own, through a raw
 * socket of its own bound to the process's media address, and Linux hands every raw UDP socket a copy
 * of each UDP datagram to its address (dropped unread once its buffer is full: about 10 ns each). So
 * each process has a loopback address of its own (only the RTP we send its legs is copied, to its own
 * sockets) and 50 legs at most: 500 participants cost the kernel about 1.25 million copies a second
 * (50 × 50 packets/s × 50 sockets × 10 processes), about 1 % of a core, mostly in our sending threads.
 */
const LEGS_PER_SIPP = 50;
/** Attendee numbers are +1 604 555 PPLL, PP the SIPp process, LL its leg: at most 100 processes. */
const MAX_TRUNKS = 100;
const MAX_PARTICIPANTS = 1000;
/** Conferences set pending per second: 10 calls each, paced so call setup stays far below its limit. */
const CONFERENCES_PER_SECOND = 20;
const WARM_UP_MS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 2) * 1000;
const ANSWER_TIMEOUT_MS = 60_000;
/** How long every connected talker has, after the last call connected, to be heard talking. */
const TALK_TIMEOUT_MS = 15_000;
const TALK_POLL_MS = 100;
/** Attendee states of a call still to be placed or answered: the wait for every call goes on while any is. */
const SETTLING_STATES = new Set(["new", "calling"]);
/** Conference states before its room starts: the wait goes on for their attendees too. */
const NOT_YET_STARTED = new Set(["new", "pending"]);
/**
 * Each leg's stream must receive at least this share of the window's 20 ms frames from its peer (a
 * leg whose pcap ran out half a second before the window's end would still have 97 % at 20 s).
 */
const MIN_RECEIVED_SHARE = 0.9;
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
/**
 * How long each leg's pcap plays, past the longest a run can take to reach its window's end (placing
 * every call, the waits for answers and talkers, the warm-up, the window) and the checks after it.
 */
const PLAY_SECONDS = Math.ceil(
  Math.max(...PARTICIPANTS) / ROOM_SIZE / CONFERENCES_PER_SECOND +
    (ANSWER_TIMEOUT_MS + TALK_TIMEOUT_MS + WARM_UP_MS + API_LOAD_LEAD_MS) / 1000 +
    SECONDS +
    60,
);
/** The child's row (JSON), set by the parent. */
const CHILD_ENV = "BENCH_ROOM_ROW";
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

/** What a row measures: so many participants, in rooms of 10 with so many talkers each, in one codec. */
interface RowSpec {
  participants: number;
  codec: LegCodec;
  /** Talkers per room of 10 (fewer in a last, smaller room). */
  talkers: number;
}

/** One SIPp process: the legs of one place in the rooms (a talker's, or the listeners'), 50 at most. */
interface TrunkPlan {
  /** The talker's place in each room (its tone), or null: listeners. */
  talker: number | null;
  legs: number;
}

/** One participant's leg: its room, whether it talks, and the number its SIPp process answers. */
interface LegPlan {
  room: number;
  talker: number | null;
  number: string;
}

/**
 * Where each participant's call goes: participant i sits at place i % 10 of room i / 10 and talks if
 * its place is below `talkers`. The legs of each talker's place (every room's first talker, every
 * room's second...) and the listeners are split into SIPp processes of LEGS_PER_SIPP at most, each
 * playing one pcap: process PP's leg LL answers +1 604 555 PPLL.
 */
function planLegs(participants: number, talkers: number): { trunks: TrunkPlan[]; legs: LegPlan[] } {
  const places: (number | null)[] = [...Array.from({ length: talkers }, (_, place) => place), null];
  const trunks: TrunkPlan[] = [];
  const legs: LegPlan[] = [];
  for (const talker of places) {
    const members = Array.from({ length: participants }, (_, participant) => participant).filter(
      (participant) => (participant % ROOM_SIZE < talkers ? participant % ROOM_SIZE : null) === talker,
    );
    for (let first = 0; first < members.length; first += LEGS_PER_SIPP) {
      const chunk = members.slice(first, first + LEGS_PER_SIPP);
      chunk.forEach((participant, line) => {
        legs[participant] = {
          room: Math.floor(participant / ROOM_SIZE),
          talker,
          number: `+1 604 555 ${String(trunks.length).padStart(2, "0")}${String(line).padStart(2, "0")}`,
        };
      });
      trunks.push({ talker, legs: chunk.length });
    }
  }
  return { trunks, legs };
}

/** The dial-plan prefix of SIPp process `trunk`'s numbers. */
function trunkPrefix(trunk: number): string {
  return `+1604555${String(trunk).padStart(2, "0")}`;
}

/** The loopback address SIPp process `trunk` sends and receives its RTP on: one each (LEGS_PER_SIPP). */
function trunkMediaAddress(trunk: number): string {
  return `127.0.0.${trunk + 2}`;
}

/** What the child measured over the window, sent to the parent. */
interface Measurement extends MediaFigures, RowSpec {
  /** `sip.mediaThreads` as configured (0: media on the main thread). */
  mediaThreads: number;
  /** Attendees the API showed connected when the wait for them ended. */
  answered: number;
  /** Attendees the API showed `connected`, in conferences it showed `started`, right before the window. */
  connectedAtStart: number;
  /** The same right after the window. */
  connectedAtEnd: number;
  /** Talkers (all rooms) and those the events stream showed talking through the whole window. */
  talkersInAll: number;
  talkersHeard: number;
  /** Why not every leg was connected at the window's start or end (the first few). */
  notConnected: string[];
  /**
   * Why not every leg was in a mix, the same stream, receiving audio in a negotiated format, and
   * talking or silent as its part says, over the window (the first few).
   */
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
  /**
   * The same at every other UDP socket of the machine (SIPp's SIP sockets, anyone else's), but for the
   * SIPp trunks' RTP sockets, which nothing reads: the legs play their pcaps whatever they are sent.
   */
  udpDropsElsewhere: number;
  apiLoad: ApiLoad | null;
  warnings: string[];
}

interface Row extends Measurement {
  sippProcesses: number;
  /** SIPp exit codes that were not 0 (a call left the script), or a note when it had to be killed. */
  sippFailures: string[];
}

/** A SIPp trunk's RTP sockets, as the child is told them: it counts the drops there apart. */
interface TrunkMedia {
  address: string;
  port: number;
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

/** A UDP socket of the machine as /proc/net/udp shows it: where it is bound, and its drops so far. */
interface UdpSocket {
  address: string;
  port: number;
  drops: number;
}

/** Every UDP (IPv4) socket of the machine, by inode. */
function udpSockets(): Map<string, UdpSocket> {
  const sockets = new Map<string, UdpSocket>();
  for (const line of fs.readFileSync("/proc/net/udp", "utf8").split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const [address, port] = (fields[1] ?? "").split(":");
    if (address === undefined || port === undefined || fields[9] === undefined) continue;
    sockets.set(fields[9], {
      // The address's 32 bits in hexadecimal, in host (little-endian) order.
      address: (address.match(/../g) ?? [])
        .reverse()
        .map((octet) => Number.parseInt(octet, 16))
        .join("."),
      port: Number.parseInt(port, 16),
      drops: Number(fields[12] ?? 0),
    });
  }
  return sockets;
}

/**
 * Datagrams the kernel dropped between two readings at the sockets `which` accepts (a full receive
 * buffer, for one): at those open at both, and at those opened between them.
 */
function udpDropsBetween(
  before: ReadonlyMap<string, UdpSocket>,
  after: ReadonlyMap<string, UdpSocket>,
  which: (socket: UdpSocket) => boolean,
): number {
  let drops = 0;
  for (const [inode, socket] of after)
    if (which(socket)) drops += socket.drops - (before.get(inode)?.drops ?? 0);
  return drops;
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
 * call that left and came back has a new one), each receiving audio from its peer (at least
 * MIN_RECEIVED_SHARE of its thread's due ticks over the window) and none dropping a packet as a
 * payload type the negotiation did not list (the leg sends the codec of its answer, nothing else).
 */
function legProblemsOf(
  before: MediaPlaneStats,
  after: MediaPlaneStats,
  participants: number,
  codec: LegCodec,
): string[] {
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
  const gone = new Set(startStreams.keys());
  let arrived = 0;
  let unheard = 0;
  let foreignFormat = 0;
  let otherCodec = 0;
  // A room with a wideband leg mixes at 16 kHz; an all-G.711 room at 8 kHz, as cheap as before.
  const roomRate = audioRateOf(codec);
  let otherRoomRate = 0;
  for (const [index, end] of after.threads.entries()) {
    const thread = before.threads[index];
    const dueTicks =
      thread === undefined ? 0 : end.ticks + end.skippedTicks - thread.ticks - thread.skippedTicks;
    for (const stream of end.streams) {
      const start = startStreams.get(stream.streamId);
      if (start === undefined) {
        arrived++;
        continue;
      }
      gone.delete(stream.streamId);
      if (stream.packetsReceived - start.packetsReceived < MIN_RECEIVED_SHARE * dueTicks) unheard++;
      if (stream.dropped.unknownPayloadType > start.dropped.unknownPayloadType) foreignFormat++;
      if (stream.codec !== codec) otherCodec++;
      if (stream.roomRate !== roomRate) otherRoomRate++;
    }
  }
  if (gone.size > 0 || arrived > 0)
    problems.push(`${gone.size} media streams ended during the window and ${arrived} began`);
  if (unheard > 0)
    problems.push(
      `${unheard} legs received less than ${MIN_RECEIVED_SHARE * 100} % of the window's 20 ms frames from their peer (its pcap ran out, or it stopped sending)`,
    );
  if (foreignFormat > 0)
    problems.push(
      `${foreignFormat} legs dropped RTP of a payload type the negotiation did not list (the service did not take the answer's codec)`,
    );
  if (otherCodec > 0) problems.push(`${otherCodec} legs sent another codec than ${codec}`);
  if (otherRoomRate > 0) problems.push(`${otherRoomRate} legs were in rooms not mixing at ${roomRate} Hz`);
  return problems;
}

/** The attendees of one part, talkers or listeners, by id, with their numbers for the messages. */
type Attendees = Map<number, string>;

/**
 * Why not every talker was heard and every listener silent through the window: each talker talking at
 * its start and at its end and never stopping in between, each listener the reverse.
 */
function talkProblemsOf(
  talkers: Attendees,
  listeners: Attendees,
  atStart: ReadonlySet<number>,
  atEnd: ReadonlySet<number>,
  changed: ReadonlySet<number>,
): string[] {
  const unheard = [...talkers].filter(([id]) => !atStart.has(id) || !atEnd.has(id) || changed.has(id));
  const heard = [...listeners].filter(([id]) => atStart.has(id) || atEnd.has(id) || changed.has(id));
  return [
    ...(unheard.length === 0
      ? []
      : [
          `${unheard.length} of ${talkers.size} talkers not heard talking through the whole window: ${unheard
            .slice(0, 5)
            .map(([, number]) => number)
            .join(", ")}`,
        ]),
    ...(heard.length === 0
      ? []
      : [
          `${heard.length} of ${listeners.size} listeners (sending silence) heard talking in the window: ${heard
            .slice(0, 5)
            .map(([, number]) => number)
            .join(", ")}`,
        ]),
  ];
}

async function measure(
  spec: RowSpec,
  routes: { prefix: string; trunk: string }[],
  trunkMedia: readonly TrunkMedia[],
): Promise<Measurement> {
  const { participants, talkers } = spec;
  const { legs } = planLegs(participants, talkers);
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
        mixTalkers: MIX_TALKERS,
      },
    },
    logStream,
  );
  let talkWatch: TalkWatch | undefined;
  try {
    const { telephony } = service;
    const baseUrl = `http://127.0.0.1:${service.httpPort}`;
    const api = new Api(baseUrl);
    const email = "bench-room@example.com";
    const password = "bench password";
    const ownerPath = await api.create("/users", signupXml(email, password));
    api.authorization = `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}`;
    // Open before the first call: every talking-started and talking-stopped comes live.
    const talk = await TalkWatch.open(baseUrl, ownerPath, api.authorization);
    talkWatch = talk;
    const talkerAttendees: Attendees = new Map();
    const listenerAttendees: Attendees = new Map();
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
      await Promise.all(
        legs
          .filter((leg) => leg.room === room)
          .map(async (leg) => {
            const attendeePath = await api.create(
              `${conferencePath}/attendees`,
              `<attendee><phone-number>${leg.number}</phone-number></attendee>`,
            );
            const attendeeId = Number(attendeePath.slice(attendeePath.lastIndexOf("/") + 1));
            (leg.talker === null ? listenerAttendees : talkerAttendees).set(attendeeId, leg.number);
          }),
      );
      conferencePaths.push(conferencePath);
    }
    // No call is answered (and no pcap starts playing) before this.
    const firstDialled = performance.now();
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
    // Every talker heard (its tone through the codec, the jitter buffer and the talk detector): no use
    // waiting unless every call connected.
    const talkDeadline = performance.now() + TALK_TIMEOUT_MS;
    const allTalking = () => [...talkerAttendees.keys()].every((id) => talk.talking.has(id));
    while (answered === participants && !allTalking() && performance.now() < talkDeadline)
      await sleep(TALK_POLL_MS);

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
    const talkingAtStart = new Set(talk.talking);
    talk.mark();
    const mediaBefore = await telephony.media.stats({ resetLateness: true });
    const isOurs = (socket: UdpSocket) =>
      socket.address === "127.0.0.1" &&
      (socket.port === service.sipPort || (socket.port >= RTP_PORTS.min && socket.port <= RTP_PORTS.max));
    // SIPp binds its RTP port and the one two above it, and reads neither (no echo).
    const isSippMedia = (socket: UdpSocket) =>
      trunkMedia.some(
        ({ address, port }) =>
          socket.address === address && (socket.port === port || socket.port === port + 2),
      );
    const udpBefore = udpSockets();
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
    const playedSeconds = (performance.now() - firstDialled) / 1000;
    const machine = machineJiffies();
    const sipp = childJiffies(process.ppid, "sipp") - sippBefore;
    const load = loadGenerator?.pid === undefined ? 0 : processJiffies(loadGenerator.pid) - loadBefore;
    const udpAfter = udpSockets();
    const ourDrops = udpDropsBetween(udpBefore, udpAfter, isOurs);
    const udpDropsElsewhere = udpDropsBetween(
      udpBefore,
      udpAfter,
      (socket) => !isOurs(socket) && !isSippMedia(socket),
    );
    const mediaAfter = await telephony.media.stats();
    const talkingAtEnd = new Set(talk.talking);
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
    const talkProblems = talkProblemsOf(
      talkerAttendees,
      listenerAttendees,
      talkingAtStart,
      talkingAtEnd,
      talk.changed,
    );
    return {
      ...spec,
      mediaThreads: MEDIA_THREADS,
      answered,
      connectedAtStart: atStart.connected,
      connectedAtEnd: atEnd.connected,
      talkersInAll: talkerAttendees.size,
      talkersHeard: [...talkerAttendees.keys()].filter(
        (id) => talkingAtStart.has(id) && talkingAtEnd.has(id) && !talk.changed.has(id),
      ).length,
      notConnected,
      legProblems: [
        ...legProblemsOf(mediaBefore, mediaAfter, participants, spec.codec),
        ...talkProblems,
        ...(talk.ended === null ? [] : [`the events stream failed: ${talk.ended}`]),
        ...(playedSeconds < PLAY_SECONDS
          ? []
          : [
              `the window ended ${playedSeconds.toFixed(0)} s after the first call was placed, past the ${PLAY_SECONDS} s the legs' pcaps play`,
            ]),
      ],
      mediaNotes,
      ...media,
      cpuPercent,
      sippCpuPercent,
      othersCpuPercent: Math.max(0, machineCpuPercent - cpuPercent - sippCpuPercent - loadCpuPercent),
      rssMb,
      udpDropsOurs: ourDrops,
      udpDropsElsewhere,
      apiLoad,
      warnings,
    };
  } finally {
    talkWatch?.close();
    loadGenerator?.kill();
    await service.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---- Parent: SIPp trunks, one child per row, the table ----

/**
 * The legs' scenarios (one per codec, from test/fixtures/sipp/bench-room-leg.xml) and pcaps (one per
 * codec and tone, and silence), each made the first time a row needs it, in a temporary directory for
 * the run.
 */
class LegFiles {
  readonly #directory = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-room-legs-"));
  readonly #made = new Map<string, string>();

  /** The scenario answering with `codec` alone, under the offer's payload type for it. */
  scenario(codec: LegCodec): string {
    return this.#file(`leg-${codec}.xml`, (file) => {
      const { payloadType, rtpmap, fmtp, clockRate } = LEG_FORMATS[codec];
      // SIPp's regular expressions (POSIX) have no case-blind flag, and SDP names are case-blind.
      const caseBlind = rtpmap.replace(
        /[a-z]/gi,
        (letter) => `[${letter.toUpperCase()}${letter.toLowerCase()}]`,
      );
      const attributes = [
        `a=rtpmap:${payloadType} ${rtpmap}`,
        ...(fmtp === undefined ? [] : [`a=fmtp:${payloadType} ${fmtp}`]),
      ];
      const template = fs.readFileSync(path.join(SCENARIO_DIR, "bench-room-leg.xml"), "utf8");
      fs.writeFileSync(
        file,
        template
          .replaceAll("CODEC_PAYLOAD_TYPE", String(payloadType))
          .replaceAll("CODEC_OFFER_REGEXP", caseBlind)
          .replaceAll("CODEC_ATTRIBUTES", attributes.join("\n      "))
          .replaceAll("CLOCK_RATE", String(clockRate)),
      );
    });
  }

  /** PLAY_SECONDS of the tone of talker place `talker` in `codec`, or of silence when null. */
  pcap(codec: LegCodec, talker: number | null): string {
    const toneHz = talker === null ? null : (TALKER_TONES_HZ[talker] ?? null);
    return this.#file(`${codec}-${toneHz === null ? "silence" : `${toneHz}Hz`}.pcap`, (file) => {
      const began = performance.now();
      writeLegPcap(file, codec, toneHz, PLAY_SECONDS);
      process.stderr.write(
        `  made ${path.basename(file)} (${PLAY_SECONDS} s) in ${((performance.now() - began) / 1000).toFixed(1)} s\n`,
      );
    });
  }

  remove(): void {
    fs.rmSync(this.#directory, { recursive: true, force: true });
  }

  #file(name: string, make: (file: string) => void): string {
    let file = this.#made.get(name);
    if (file === undefined) {
      file = path.join(this.#directory, name);
      make(file);
      this.#made.set(name, file);
    }
    return file;
  }
}

/** How a SIPp process's part reads in messages. */
function partName(plan: TrunkPlan): string {
  return plan.talker === null ? "listeners" : `talker ${plan.talker + 1}, ${TALKER_TONES_HZ[plan.talker]} Hz`;
}

async function runOne(spec: RowSpec, files: LegFiles): Promise<Row> {
  const { participants, codec, talkers } = spec;
  const plans = planLegs(participants, talkers).trunks;
  const trunks: Sipp[] = [];
  let child: ChildProcess | undefined;
  try {
    for (const [index, plan] of plans.entries()) {
      trunks.push(
        await Sipp.start({
          scenario: files.scenario(codec),
          pcap: files.pcap(codec, plan.talker),
          calls: plan.legs,
          timeoutSeconds: PLAY_SECONDS + 60,
          // After the helper's own -mi: the last one given is the one SIPp takes.
          args: ["-mi", trunkMediaAddress(index)],
          traceMessages: false,
        }),
      );
    }
    const routes = trunks.map((trunk, index) => ({
      prefix: trunkPrefix(index),
      trunk: `sip:127.0.0.1:${trunk.sipPort}`,
    }));
    const trunkMedia: TrunkMedia[] = trunks.map((trunk, index) => ({
      address: trunkMediaAddress(index),
      port: trunk.mediaPort,
    }));
    child = fork(fileURLToPath(import.meta.url), [], {
      env: {
        ...process.env,
        [CHILD_ENV]: JSON.stringify(spec),
        BENCH_ROUTES: JSON.stringify(routes),
        BENCH_TRUNK_MEDIA: JSON.stringify(trunkMedia),
      },
    });
    const exited = once(child, "exit");
    const [message] = (await Promise.race([once(child, "message"), exited])) as [unknown];
    if (typeof message !== "object" || message === null) {
      throw new Error(
        `the service process for ${participants} participants (${codec}, ${talkers} talkers) exited with ${String(message)}`,
      );
    }
    await exited;
    // The service hung every call up as it closed: each trunk should now finish its calls and exit 0.
    const sippFailures: string[] = [];
    for (const [index, trunk] of trunks.entries()) {
      const name = `trunk ${index} (${partName(plans[index] as TrunkPlan)})`;
      const outcome = await trunk.result(15_000).catch(() => null);
      if (outcome === null) sippFailures.push(`${name} still running 15 s after the service closed`);
      else if (outcome.code !== 0) {
        // The first failing trunk's errors say what went wrong; the others' most often say it again.
        const errors = sippFailures.length === 0 ? `: ${trunk.errors().slice(0, 800)}` : "";
        sippFailures.push(`${name} exited ${outcome.code ?? outcome.signal}${errors}`);
      }
    }
    return { ...(message as Measurement), sippProcesses: trunks.length, sippFailures };
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
    "codec",
    "talkers",
    "media threads",
    "SIPp",
    "answered",
    "connected start",
    "connected end",
    "talkers heard",
    "ticks",
    "CPU %",
    "CPU % per participant",
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
    "UDP drops elsewhere",
    ...(withLoad ? ["API req/s", "API p99 ms", "API non-2xx", "API errors"] : []),
    "target",
  ];
  const cells = rows.map((row) => [
    String(row.participants),
    row.codec,
    String(row.talkers),
    String(row.mediaThreads),
    String(row.sippProcesses),
    String(row.answered),
    String(row.connectedAtStart),
    String(row.connectedAtEnd),
    `${row.talkersHeard}/${row.talkersInAll}`,
    String(row.ticks),
    row.cpuPercent.toFixed(1),
    perParticipant(row).toFixed(3),
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
    String(row.udpDropsElsewhere),
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

/** The service's CPU per participant, in percent of one core. */
function perParticipant(row: Row): number {
  return row.cpuPercent / row.participants;
}

/** BENCH_CODECS, BENCH_TALKERS and BENCH_PARTICIPANTS as rows: each count, each codec, each talker count. */
function rowSpecs(): RowSpec[] {
  for (const participants of PARTICIPANTS) {
    if (!(Number.isInteger(participants) && participants > 0 && participants <= MAX_PARTICIPANTS)) {
      throw new Error(`BENCH_PARTICIPANTS: each count must be 1 to ${MAX_PARTICIPANTS}, got ${participants}`);
    }
  }
  const codecs = CODECS.map((name) => {
    const codec = LEG_CODECS.find((known) => known === name);
    if (codec === undefined)
      throw new Error(`BENCH_CODECS: each must be one of ${LEG_CODECS.join(", ")}, got ${name}`);
    return codec;
  });
  for (const talkers of TALKER_COUNTS) {
    if (!(Number.isInteger(talkers) && talkers >= 1 && talkers <= ROOM_SIZE)) {
      throw new Error(`BENCH_TALKERS: each must be 1 to ${ROOM_SIZE} or "all", got ${talkers}`);
    }
  }
  const specs = PARTICIPANTS.flatMap((participants) =>
    codecs.flatMap((codec) => TALKER_COUNTS.map((talkers) => ({ participants, codec, talkers }))),
  );
  for (const { participants, talkers } of specs) {
    if (planLegs(participants, talkers).trunks.length > MAX_TRUNKS)
      throw new Error(
        `${participants} participants with ${talkers} talkers need more than ${MAX_TRUNKS} SIPp processes`,
      );
  }
  return specs;
}

/**
 * For each codec and talker count, the largest participant count below which every measured count
 * held the target too; and for each count and codec measured with fewer talkers and with all
 * talking, what the fewer talkers cost per participant against everyone talking.
 */
function summary(rows: readonly Row[]): string[] {
  const lines: string[] = [];
  const groups = new Map<string, Row[]>();
  for (const row of rows) {
    const key = `${row.codec}, ${row.talkers} ${row.talkers === 1 ? "talker" : "talkers"} a room`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  for (const [key, group] of groups) {
    const ascending = [...group].sort((a, b) => a.participants - b.participants);
    const firstMiss = ascending.findIndex((row) => !holds(row));
    const largest = ascending[(firstMiss === -1 ? ascending.length : firstMiss) - 1]?.participants;
    lines.push(
      `target (p99 tick lateness < ${TARGET_P99_MS} ms, no tick skipped, every frame sent, no datagram dropped at our sockets${API_LOAD ? ", the API load answered 2xx throughout" : ""}), ${key}: ${
        largest === undefined ? "held at no count" : `held up to ${largest} participants`
      }`,
    );
  }
  for (const all of rows.filter((row) => row.talkers === ROOM_SIZE)) {
    for (const fewer of rows.filter(
      (row) => row.participants === all.participants && row.codec === all.codec && row.talkers < ROOM_SIZE,
    )) {
      const saving = (1 - perParticipant(fewer) / perParticipant(all)) * 100;
      lines.push(
        `CPU per participant, ${all.participants} participants, ${all.codec}: ${fewer.talkers} talkers a room ${perParticipant(fewer).toFixed(3)} %, all talking ${perParticipant(all).toFixed(3)} %: ${Math.abs(saving).toFixed(0)} % ${saving >= 0 ? "less" : "more"}`,
      );
    }
  }
  return lines;
}

async function main(): Promise<void> {
  const specs = rowSpecs();
  process.stdout.write(
    `per-user call limits set by the bench to the participant count (calls in progress at once and calls an hour; the service's defaults are ${DEFAULT_CONFERENCES.maxCallsInProgressPerUser} and ${DEFAULT_CONFERENCES.maxCallsPerHourPerUser}): one user owns every room\n`,
  );
  process.stderr.write(
    `media threads: ${MEDIA_THREADS}${MEDIA_THREADS === 0 ? " (media on the main thread)" : ""}; talkers mixed at once in a room: ${MIX_TALKERS}; API load: ${API_LOAD ? "GET conference, flat out" : "none"}; legs play ${PLAY_SECONDS} s of RTP; load average ${os
      .loadavg()
      .map((value) => value.toFixed(2))
      .join(" ")}\n`,
  );
  const files = new LegFiles();
  const rows: Row[] = [];
  let valid = true;
  try {
    for (const spec of specs) {
      process.stderr.write(
        `${spec.participants} participants, ${spec.codec}, ${spec.talkers} talkers a room: setting up, then ${SECONDS} s measured...\n`,
      );
      const row = await runOne(spec, files).catch((error: unknown) => {
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
  } finally {
    files.remove();
  }
  process.stdout.write(`${table(rows)}\n`);
  for (const line of summary(rows)) process.stdout.write(`${line}\n`);
  if (valid) {
    process.stdout.write(
      "valid: every leg connected and in its room for the whole window, receiving audio, every talker heard and every listener silent (the API, the media threads, the events stream and SIPp agree)\n",
    );
  } else {
    process.stderr.write(
      "\n*** INVALID RUN: not every leg was connected in its room for the whole window, receiving audio, heard or silent as it should be, a trunk saw a call leave its script, or the API load failed (see INVALID above) ***\n",
    );
    process.exitCode = 1;
  }
}

async function child(spec: RowSpec): Promise<void> {
  const routes = JSON.parse(process.env.BENCH_ROUTES ?? "[]") as { prefix: string; trunk: string }[];
  const trunkMedia = JSON.parse(process.env.BENCH_TRUNK_MEDIA ?? "[]") as TrunkMedia[];
  const measurement = await measure(spec, routes, trunkMedia);
  // Handles left open (HTTP keep-alive, for one) must not keep the parent waiting.
  process.send?.(measurement, () => process.exit(0));
}

const childRow = process.env[CHILD_ENV];
if (childRow === undefined) await main();
else await child(JSON.parse(childRow) as RowSpec);
