/**
 * An INVITE flood from one source while a conference runs: `npm run bench:flood:sip`.
 *
 * The real service runs in this process (SQLite in a temporary directory, SIP on 127.0.0.1, the
 * default request rate per source, BRIDGELINE_SIP_REQUEST_RATE) with one conference of ROOM_SIZE
 * attendees called through a SIPp trunk that answers and echoes every RTP packet back (-rtp_echo,
 * test/fixtures/sipp/bench-leg.xml): live calls with audio both ways through the mixer. Callers from
 * 127.0.0.1 dial the access number at CALLER_RATE calls/s throughout (bench/flood/caller.xml: the
 * setup time is SIPp's INVITE-to-200, -trace_rtt), first for BENCH_BEFORE_SECONDS (default 20) with
 * nothing else, then for BENCH_FLOOD_SECONDS (default 60) while SIPp on 127.0.0.2 sends FLOOD_RATE
 * INVITEs/s (BENCH_FLOOD_RATE, default 2,000; test/fixtures/sipp/uac-flood.xml, no retransmissions). Then it times how long the
 * flooder's address waits for an OPTIONS to be answered 200 again.
 *
 * Printed per window: what the flooder got (its INVITEs answered 200, refused 503, left unanswered, as
 * SIPp counted them; the service's own served/refused/dropped), the callers' setup success and time
 * (p50/p99/max), and the media threads' tick lateness (p50/p99/max of the worst thread) and skipped
 * ticks, and the CPU of the service's process, of the SIPp peers and of everything else on the
 * machine (other work shares it). The run is invalid (exit status 1) unless every attendee was
 * connected (through the API) right before and right after each window, every live leg received at
 * least 90 % of the window's packets in each window, and the flood really ran (at least 80 % of its
 * INVITEs sent).
 */

import { randomBytes } from "node:crypto";
import { createSocket } from "node:dgram";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { XMLParser } from "fast-xml-parser";
import { loadConfig } from "../../src/config.js";
import { startService } from "../../src/main.js";
import type { MediaPlaneStats } from "../../src/telephony/media/plane/media-plane.js";
import { parseMessage } from "../../src/telephony/sip/message/parser.js";
import { signupXml } from "../../test/helpers/service.js";
import { optionsRequest } from "../../test/helpers/sip-options.js";
import { Sipp } from "../../test/helpers/sipp.js";
import { percentile } from "../percentile.js";
import { childJiffies, machineJiffies } from "../proc.js";

const BEFORE_SECONDS = Number(process.env.BENCH_BEFORE_SECONDS ?? 20);
const FLOOD_SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 60);
const FLOOD_RATE = Number(process.env.BENCH_FLOOD_RATE ?? 2000);
const FLOODER = "127.0.0.2";
const CALLER_RATE = 2;
/** How long each caller stays on (at the PIN prompt) before hanging up. */
const CALLER_HOLD_MS = 1000;
const ROOM_SIZE = 10;
const ACCESS_NUMBER = "+16045550199";
const RTP_PORTS = { min: 20000, max: 29999 };
/** Each live leg must receive this share of a window's 50 packets a second. */
const MIN_RECEIVED_SHARE = 0.9;
/** The flood must send this share of the INVITEs it was asked to. */
const MIN_FLOOD_SHARE = 0.8;

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", parseTagValue: false });

class Api {
  authorization = "";
  constructor(private readonly baseUrl: string) {}

  async request(method: string, urlPath: string, body?: string): Promise<Response> {
    return fetch(`${this.baseUrl}${urlPath}`, {
      method,
      headers: {
        accept: "application/xml",
        "content-type": "application/xml",
        authorization: this.authorization,
      },
      body,
    });
  }

  async create(urlPath: string, body: string): Promise<string> {
    const response = await this.request("POST", urlPath, body);
    if (response.status !== 201)
      throw new Error(`POST ${urlPath}: ${response.status} ${await response.text()}`);
    return new URL(response.headers.get("location") ?? "", this.baseUrl).pathname;
  }

  /** Attendees `connected`, as GET .../attendees shows them. */
  async connected(conferencePath: string): Promise<number> {
    const response = await this.request("GET", `${conferencePath}/attendees`);
    const parsed = xml.parse(await response.text()) as { attendees?: { attendee?: unknown } };
    const attendees = ([] as { state?: unknown }[]).concat(
      (parsed.attendees?.attendee ?? []) as { state?: unknown }[],
    );
    return attendees.filter((attendee) => attendee.state === "connected").length;
  }
}

interface Window {
  seconds: number;
  /** Media threads: lateness of the worst thread (ms), skipped ticks, and the live legs' packets. */
  lateP50: number;
  lateP99: number;
  lateMax: number;
  skipped: number;
  ticks: number;
  /** The fewest packets any live leg received over the window. */
  fewestReceived: number;
  connectedBefore: number;
  connectedAfter: number;
  callers: CallerFigures;
  flood: FloodFigures | null;
  service: { served: number; refused: number; dropped: number };
  /** CPU over the window, percent of one core: this process (the service and its media threads), the SIPp peers, everything else. */
  serviceCpuPercent: number;
  sippCpuPercent: number;
  othersCpuPercent: number;
}

interface CallerFigures {
  attempted: number;
  setUp: number;
  p50: number;
  p99: number;
  max: number;
  exitCode: number | null;
}

interface FloodFigures {
  invitesSent: number;
  answered200: number;
  refused503: number;
  /** Responses the scenario did not expect (a 404, a 403). */
  other: number;
  unanswered: number;
}

/** The setup times SIPp wrote with -trace_rtt (one line per call: date;response time ms;rtd). */
function setupTimes(sipp: Sipp): number[] {
  const file = fs.readdirSync(sipp.directory).find((name) => name.endsWith("_rtt.csv"));
  if (file === undefined) return [];
  return fs
    .readFileSync(path.join(sipp.directory, file), "utf8")
    .split("\n")
    .slice(1)
    .map((line) => Number(line.split(";")[1]))
    .filter((value) => Number.isFinite(value))
    .sort((a, b) => a - b);
}

/** The flooder's message counts from SIPp's -trace_counts file (its last line, written at exit). */
function floodCounts(sipp: Sipp): FloodFigures {
  const file = fs.readdirSync(sipp.directory).find((name) => name.endsWith("_counts.csv"));
  const lines =
    file === undefined ? [] : fs.readFileSync(path.join(sipp.directory, file), "utf8").trim().split("\n");
  const header = (lines[0] ?? "").split(";");
  const last = (lines.at(-1) ?? "").split(";");
  /** The first column whose name matches, or the sum of all that do. */
  const first = (pattern: RegExp) => Number(last[header.findIndex((name) => pattern.test(name))] ?? 0);
  const sum = (pattern: RegExp) =>
    header.reduce((total, name, index) => (pattern.test(name) ? total + Number(last[index] ?? 0) : total), 0);
  const invitesSent = first(/_INVITE_Sent$/);
  const refused503 = first(/_503_Recv$/);
  // The first 200 the scenario waits for answers the INVITE; the second, the BYE.
  const answered200 = first(/_200_Recv$/);
  const other = sum(/_Unexp$/);
  return {
    invitesSent,
    answered200,
    refused503,
    other,
    unanswered: invitesSent - refused503 - answered200 - other,
  };
}

/** Lateness of the worst thread since the reset, skipped ticks, and each stream's packets received. */
function mediaWindow(before: MediaPlaneStats, after: MediaPlaneStats, legs: ReadonlySet<number>) {
  let lateP50 = 0;
  let lateP99 = -1;
  let lateMax = 0;
  let skipped = 0;
  let ticks = 0;
  const received = new Map<number, number>();
  for (const [index, end] of after.threads.entries()) {
    const start = before.threads[index];
    if (start === undefined) continue;
    skipped += end.skippedTicks - start.skippedTicks;
    ticks += end.ticks - start.ticks;
    if (end.lateness.p99 > lateP99) ({ p50: lateP50, p99: lateP99, max: lateMax } = end.lateness);
    const earlier = new Map(start.streams.map((stream) => [stream.streamId, stream.packetsReceived]));
    for (const stream of end.streams)
      if (legs.has(stream.streamId))
        received.set(stream.streamId, stream.packetsReceived - (earlier.get(stream.streamId) ?? 0));
  }
  const fewestReceived = Math.min(...[...legs].map((leg) => received.get(leg) ?? 0));
  return { lateP50, lateP99, lateMax, skipped, ticks, fewestReceived };
}

/** Seconds until an OPTIONS from `address` is answered 200, asking every 200 ms. */
async function secondsUntilServed(address: string, port: number): Promise<number> {
  const started = performance.now();
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, address, resolve));
  let served = false;
  socket.on("message", (bytes) => {
    const parsed = parseMessage(bytes, { stream: false });
    if (parsed.ok && parsed.message.kind === "response" && parsed.message.status === 200) served = true;
  });
  try {
    while (!served) {
      if (performance.now() - started > 120_000) throw new Error(`${address} not served again within 120 s`);
      const callId = randomBytes(8).toString("hex");
      socket.send(optionsRequest({ address, port: socket.address().port }, port, callId), port, "127.0.0.1");
      await sleep(200);
    }
    return (performance.now() - started) / 1000;
  } finally {
    socket.close();
  }
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-flood-"));
  const warnings: string[] = [];
  const log = new Writable({
    write(chunk, _encoding, done) {
      warnings.push(...String(chunk).split("\n").filter(Boolean));
      warnings.splice(0, Math.max(0, warnings.length - 10));
      done();
    },
  });
  const peers: Sipp[] = [];
  const trunk = await Sipp.start({
    scenario: "bench-leg.xml",
    calls: ROOM_SIZE,
    timeoutSeconds: BEFORE_SECONDS + FLOOD_SECONDS + 300,
    args: ["-rtp_echo"],
    traceMessages: false,
  });
  peers.push(trunk);
  const config = loadConfig({});
  const service = await startService(
    {
      ...config,
      dataDir,
      host: "127.0.0.1",
      httpsPort: 0,
      httpPort: 0,
      logLevel: "warn",
      sip: {
        ...config.sip,
        bindAddress: "127.0.0.1",
        port: 0,
        callerId: "+16045550000",
        routes: [{ prefix: "+1604555", trunk: `sip:127.0.0.1:${trunk.sipPort}` }],
        rtpPorts: RTP_PORTS,
        accessNumbers: [ACCESS_NUMBER],
        // The flooder is a source the service takes calls from (else its INVITEs get 403 unasked).
        trusted: ["127.0.0.0/8"],
      },
    },
    log,
  );
  let failed = false;
  try {
    const { telephony } = service;
    const sipPort = service.sipPort;
    const api = new Api(`http://127.0.0.1:${service.httpPort}`);
    const email = "bench-flood@example.com";
    const ownerPath = await api.create("/users", signupXml(email, "bench password"));
    api.authorization = `Basic ${Buffer.from(`${email}:bench password`).toString("base64")}`;
    const startsAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const conference = await api.create(
      `${ownerPath}/conferences`,
      `<conference><name>Flood</name><scheduled-to-start-at>${startsAt}</scheduled-to-start-at>
        <no-moderator type="boolean">true</no-moderator><direct-dial type="boolean">true</direct-dial>
        <announce-attendees type="boolean">false</announce-attendees></conference>`,
    );
    for (let i = 0; i < ROOM_SIZE; i++)
      await api.create(
        `${conference}/attendees`,
        `<attendee><phone-number>+1 604 555 0${String(100 + i)}</phone-number></attendee>`,
      );
    await (await api.request("PUT", conference, "<conference><state>pending</state></conference>")).text();
    const deadline = performance.now() + 60_000;
    while ((await api.connected(conference)) < ROOM_SIZE) {
      if (performance.now() > deadline) throw new Error("the conference's attendees were not all connected");
      await sleep(500);
    }
    await sleep(2000);
    const legs = new Set(
      (await telephony.media.stats()).threads.flatMap((thread) => thread.streams.map((s) => s.streamId)),
    );

    const runWindow = async (seconds: number, flooding: boolean): Promise<Window> => {
      const connectedBefore = await api.connected(conference);
      const callers = await Sipp.start({
        scenario: path.join(import.meta.dirname, "caller.xml"),
        remote: `127.0.0.1:${sipPort}`,
        rate: CALLER_RATE,
        calls: CALLER_RATE * seconds,
        pauseMs: CALLER_HOLD_MS,
        timeoutSeconds: seconds + 60,
        traceMessages: false,
        args: ["-s", ACCESS_NUMBER, "-trace_rtt", "-rtt_freq", "1"],
      });
      peers.push(callers);
      const flood = flooding
        ? await Sipp.start({
            scenario: "uac-flood.xml",
            remote: `127.0.0.1:${sipPort}`,
            localAddress: FLOODER,
            rate: FLOOD_RATE,
            calls: FLOOD_RATE * seconds,
            timeoutSeconds: seconds + 60,
            traceMessages: false,
            args: ["-nr", "-s", ACCESS_NUMBER, "-trace_counts"],
          })
        : undefined;
      if (flood !== undefined) peers.push(flood);
      const serviceBefore = { ...(telephony.sipStats.requestRate ?? { served: 0, refused: 0, dropped: 0 }) };
      const mediaBefore = await telephony.media.stats({ resetLateness: true });
      const machineBefore = machineJiffies();
      const sippBefore = childJiffies(process.pid, "sipp");
      const cpuBefore = process.cpuUsage();
      const wallBefore = performance.now();
      await sleep(seconds * 1000);
      const cpu = process.cpuUsage(cpuBefore);
      const wallMs = performance.now() - wallBefore;
      const sipp = childJiffies(process.pid, "sipp") - sippBefore;
      const mediaAfter = await telephony.media.stats();
      const machine = machineJiffies();
      const serviceAfter = telephony.sipStats.requestRate ?? { served: 0, refused: 0, dropped: 0 };
      const connectedAfter = await api.connected(conference);
      // The flooder's last INVITEs are given up 2 s after they were sent; the callers' last hang up.
      const [callerResult] = await Promise.all([callers.result(120_000), flood?.result(120_000)]);
      const times = setupTimes(callers);
      const coreJiffies = (machine.total - machineBefore.total) / os.cpus().length;
      const serviceCpuPercent = ((cpu.user + cpu.system) / 1000 / wallMs) * 100;
      const sippCpuPercent = (sipp / coreJiffies) * 100;
      const machineCpuPercent = ((machine.busy - machineBefore.busy) / coreJiffies) * 100;
      return {
        seconds,
        ...mediaWindow(mediaBefore, mediaAfter, legs),
        connectedBefore,
        connectedAfter,
        callers: {
          attempted: CALLER_RATE * seconds,
          setUp: times.length,
          p50: percentile(times, 0.5),
          p99: percentile(times, 0.99),
          max: times.at(-1) ?? Number.NaN,
          exitCode: callerResult.code,
        },
        flood: flood === undefined ? null : floodCounts(flood),
        service: {
          served: serviceAfter.served - serviceBefore.served,
          refused: serviceAfter.refused - serviceBefore.refused,
          dropped: serviceAfter.dropped - serviceBefore.dropped,
        },
        serviceCpuPercent,
        sippCpuPercent,
        othersCpuPercent: Math.max(0, machineCpuPercent - serviceCpuPercent - sippCpuPercent),
      };
    };

    const before = await runWindow(BEFORE_SECONDS, false);
    const during = await runWindow(FLOOD_SECONDS, true);
    const recoverySeconds = await secondsUntilServed(FLOODER, sipPort);

    console.log(
      `SIP INVITE flood: ${FLOOD_RATE} INVITEs/s from ${FLOODER} for ${FLOOD_SECONDS} s (no retransmissions), ` +
        `request rate per source ${config.sip.requestRatePerSource}/s (burst ${2 * config.sip.requestRatePerSource}); ` +
        `a conference of ${ROOM_SIZE} live calls (RTP echoed); callers from 127.0.0.1 at ${CALLER_RATE}/s; ` +
        `${os.cpus().length} cores, load average ${os.loadavg()[0]?.toFixed(1)}`,
    );
    console.log("");
    console.log(
      "| window | s | callers set up | setup p50 / p99 / max ms | tick lateness p50 / p99 / max ms | skipped ticks | fewest packets a live leg got | attendees connected (start, end) | CPU % of a core: service, SIPp, others |",
    );
    console.log("| --- | --: | --: | --: | --: | --: | --: | --: | --: |");
    for (const [name, window] of [
      ["before", before],
      ["flood", during],
    ] as const) {
      const c = window.callers;
      console.log(
        `| ${name} | ${window.seconds} | ${c.setUp} / ${c.attempted} | ${c.p50} / ${c.p99} / ${c.max} | ` +
          `${window.lateP50.toFixed(2)} / ${window.lateP99.toFixed(2)} / ${window.lateMax.toFixed(2)} | ${window.skipped} | ` +
          `${window.fewestReceived} of ${window.seconds * 50} | ${window.connectedBefore}, ${window.connectedAfter} | ${window.serviceCpuPercent.toFixed(0)}, ${window.sippCpuPercent.toFixed(0)}, ${window.othersCpuPercent.toFixed(0)} |`,
      );
    }
    const f = during.flood;
    console.log("");
    if (f !== null)
      console.log(
        `flooder (SIPp's counts): ${f.invitesSent} INVITEs sent, ${f.refused503} refused 503, ${f.answered200} answered 200, ${f.other} other answers, ` +
          `${f.unanswered} unanswered (dropped); the service over the window: ${during.service.served} requests served, ` +
          `${during.service.refused} refused 503, ${during.service.dropped} dropped`,
      );
    console.log(
      `the flooder's address was served again ${recoverySeconds.toFixed(1)} s after the flood's last INVITE was given up`,
    );

    const problems: string[] = [];
    for (const [name, window] of [
      ["before", before],
      ["flood", during],
    ] as const) {
      if (window.connectedBefore !== ROOM_SIZE || window.connectedAfter !== ROOM_SIZE)
        problems.push(
          `${name}: attendees connected ${window.connectedBefore}, ${window.connectedAfter} of ${ROOM_SIZE}`,
        );
      if (window.fewestReceived < MIN_RECEIVED_SHARE * window.seconds * 50)
        problems.push(`${name}: a live leg received only ${window.fewestReceived} packets`);
    }
    if (f === null || f.invitesSent < MIN_FLOOD_SHARE * FLOOD_RATE * FLOOD_SECONDS)
      problems.push(`the flood sent ${f?.invitesSent} INVITEs, not ${FLOOD_RATE * FLOOD_SECONDS}`);
    if (problems.length > 0) {
      failed = true;
      console.log(`\nINVALID RUN:\n${problems.join("\n")}\nlast log lines:\n${warnings.join("\n")}`);
    }
  } finally {
    await service.close();
    for (const peer of peers) await peer.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

await main();
