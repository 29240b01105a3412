/**
 * End-to-end conference media: `node --import tsx bench/media/room.ts`. For each participant count
 * (BENCH_PARTICIPANTS, default "100,200,300,500") the real service runs in a child process of its own
 * (so CPU and resident memory are its alone) and holds that many calls in conferences of 10, placed
 * through the dial plan to SIPp trunks that answer and echo every RTP packet back (-rtp_echo,
 * test/fixtures/sipp/bench-leg.xml), a continuous stream both ways through G.711, the jitter buffer
 * and the mixer. Once every call is answered and has run for a warm-up, it measures for
 * BENCH_SECONDS (default 20), then closes the service, which hangs every call up.
 *
 * Each row: CPU of the service process, of the SIPp trunks and of everything else on the machine
 * (each in percent of one core), resident memory, the conference clock's tick lateness over the
 * window, skipped ticks, frames the mixer owed but did not send, RTP received and lost on our side,
 * and the kernel's UDP receive drops at our sockets and machine-wide. The run is invalid (exit
 * status 1) when a call failed or dropped, or a SIPp trunk saw a call leave its script.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config.js";
import { startService } from "../../src/main.js";
import type { Call } from "../../src/telephony/call.js";
import { ConferenceRoom } from "../../src/telephony/conference/conference-room.js";
import { LATENESS_WINDOW } from "../../src/telephony/media/media-clock.js";
import type { PlaceCallOptions } from "../../src/telephony/telephony.js";
import { signupXml } from "../../test/helpers/service.js";
import { Sipp } from "../../test/helpers/sipp.js";

const PARTICIPANTS = (process.env.BENCH_PARTICIPANTS ?? "100,200,300,500").split(",").map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const ROOM_SIZE = 10;
/** Legs per SIPp process: one process echoes all its calls' RTP on one port, in one thread. */
const LEGS_PER_SIPP = 100;
/** Attendee numbers are +1 604 555 PXXX, P the SIPp process: at most 10 processes. */
const MAX_PARTICIPANTS = 10 * LEGS_PER_SIPP;
/** Conferences set pending per second: 10 calls each, paced so call setup stays far below its limit. */
const CONFERENCES_PER_SECOND = 20;
const WARM_UP_MS = 2000;
const ANSWER_TIMEOUT_MS = 60_000;
const TICK_MS = 20;
const TARGET_P99_MS = 5;
const CHILD_ENV = "BENCH_ROOM_PARTICIPANTS";
/** The service's RTP ports; the SIPp helper takes its ports from 30000 up. */
const RTP_PORTS = { min: 20000, max: 29999 };

/** What the child measured over the window, sent to the parent. */
interface Measurement {
  participants: number;
  answered: number;
  /** Calls that failed or ended before the window closed. */
  dropped: string[];
  ticks: number;
  cpuPercent: number;
  /** The SIPp trunks' CPU, in percent of one core. */
  sippCpuPercent: number;
  /** Every other process on the machine (other work), in percent of one core. */
  othersCpuPercent: number;
  rssMb: number;
  lateP50: number;
  lateP99: number;
  lateMax: number;
  skipped: number;
  framesNotSent: number;
  packetsSent: number;
  packetsReceived: number;
  packetsLost: number;
  /** Datagrams the kernel dropped at the service's own SIP and RTP sockets. */
  udpDropsOurs: number;
  /** The same, machine-wide (SIPp's sockets and anyone else's included). */
  udpReceiveBufferDrops: number;
  warnings: string[];
}

interface Row extends Measurement {
  sippProcesses: number;
  /** SIPp exit codes that were not 0 (a call left the script), or a note when it had to be killed. */
  sippFailures: string[];
}

function percentile(sorted: Float64Array, fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

/** Busy and total jiffies of all CPUs, from the first line of /proc/stat. */
function machineJiffies(): { busy: number; total: number } {
  const fields = (fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1);
  // guest and guest_nice (the ninth and tenth) are already counted in user and nice.
  const values = fields.slice(0, 8).map(Number);
  const total = values.reduce((sum, value) => sum + value, 0);
  // idle and iowait are the fourth and fifth fields.
  return { busy: total - (values[3] ?? 0) - (values[4] ?? 0), total };
}

/** CPU jiffies (user + system) of the SIPp processes started by `parent`, from /proc/<pid>/stat. */
function sippJiffies(parent: number): number {
  let jiffies = 0;
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // The command name is in parentheses; the fields after it start with state, ppid.
    if (!stat.includes("(sipp)")) continue;
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[1]) === parent) jiffies += Number(fields[11]) + Number(fields[12]);
  }
  return jiffies;
}

/** Datagrams the kernel dropped for a full socket receive buffer, machine-wide (/proc/net/snmp). */
function udpReceiveBufferErrors(): number {
  const lines = fs
    .readFileSync("/proc/net/snmp", "utf8")
    .split("\n")
    .filter((line) => line.startsWith("Udp:"));
  const names = (lines[0] ?? "").split(/\s+/);
  const values = (lines[1] ?? "").split(/\s+/);
  return Number(values[names.indexOf("RcvbufErrors")] ?? Number.NaN);
}

/** Datagrams dropped at the sockets bound to 127.0.0.1 on the ports `ours` accepts, from /proc/net/udp. */
function udpDropsAt(ours: (port: number) => boolean): number {
  let drops = 0;
  for (const line of fs.readFileSync("/proc/net/udp", "utf8").split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const [address, port] = (fields[1] ?? "").split(":");
    if (address === "0100007F" && ours(Number.parseInt(port ?? "", 16))) drops += Number(fields[12] ?? 0);
  }
  return drops;
}

// ---- Child: the service under load ----

interface RtpTotals {
  sent: number;
  received: number;
  lost: number;
}

function rtpTotals(calls: readonly Call[]): RtpTotals {
  const totals = { sent: 0, received: 0, lost: 0 };
  for (const call of calls) {
    const stats = call.stats();
    if (stats === null) continue;
    totals.sent += stats.packetsSent;
    totals.received += stats.packetsReceived;
    totals.lost += stats.packetsLost;
  }
  return totals;
}

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

  async create(urlPath: string, body: string): Promise<string> {
    const response = await this.send("POST", urlPath, body, 201);
    await response.arrayBuffer();
    return new URL(response.headers.get("location") ?? "", this.baseUrl).pathname;
  }
}

function attendeeNumber(participant: number): string {
  const trunk = Math.floor(participant / LEGS_PER_SIPP);
  const line = participant % LEGS_PER_SIPP;
  return `+1 604 555 ${trunk}${String(line).padStart(3, "0")}`;
}

async function measure(
  participants: number,
  routes: { prefix: string; trunk: string }[],
): Promise<Measurement> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-room-"));
  const warnings: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      warnings.push(...String(chunk).split("\n").filter(Boolean));
      warnings.splice(0, Math.max(0, warnings.length - 20));
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
        rtpPorts: RTP_PORTS,
      },
    },
    logStream,
  );
  try {
    const { telephony, conferences } = service;
    const clock = conferences.clock;

    // Telephony does not expose its calls: keep those the rooms place, for their RTP statistics.
    const calls: Call[] = [];
    const dropped: string[] = [];
    let answered = 0;
    let allAnswered: () => void = () => {};
    const everyoneAnswered = new Promise<void>((resolve) => {
      allAnswered = resolve;
    });
    const placeCall = telephony.placeCall.bind(telephony);
    telephony.placeCall = (number: string, options?: PlaceCallOptions) => {
      const call = placeCall(number, options);
      calls.push(call);
      call.on("answered", () => {
        answered++;
        if (answered === participants) allAnswered();
      });
      call.on("failed", (failure) => dropped.push(`${number} failed: ${failure.status} ${failure.reason}`));
      call.on("ended", (end) => dropped.push(`${number} ended by ${end.by}: ${end.reason}`));
      return call;
    };

    // The clock keeps lateness for its last LATENESS_WINDOW ticks, call setup included, and cannot be reset:
    // the window's own lateness is taken the way the clock takes it (time of the tick's first room
    // against its due time, start + n × 20 ms), and checked against the clock's figures at the end.
    let clockOrigin = 0;
    const startClock = clock.start.bind(clock);
    clock.start = () => {
      if (!clock.running) clockOrigin = performance.now();
      startClock();
    };
    const lateness = new Float64Array(Math.ceil(((SECONDS * 1000 + ANSWER_TIMEOUT_MS) * 2) / TICK_MS));
    let recorded = 0;
    let lastTick = -1;
    const roomTick = ConferenceRoom.prototype.tick;
    ConferenceRoom.prototype.tick = function (this: ConferenceRoom) {
      // Within one run of the clock, ticks + skipped is the number of the tick running now.
      const tick = clock.ticks + clock.skipped;
      if (tick !== lastTick && recorded < lateness.length) {
        lastTick = tick;
        lateness[recorded++] = performance.now() - (clockOrigin + tick * TICK_MS);
      }
      roomTick.call(this);
    };

    const api = new Api(`http://127.0.0.1:${service.httpPort}`);
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
    await Promise.race([
      everyoneAnswered,
      new Promise((resolve) => setTimeout(resolve, ANSWER_TIMEOUT_MS).unref()),
    ]);
    await sleep(WARM_UP_MS);

    const windowStart = recorded;
    const ticksBefore = clock.ticks;
    const skippedBefore = clock.skipped;
    const rtpBefore = rtpTotals(calls);
    const isOurs = (port: number) =>
      port === service.sipPort || (port >= RTP_PORTS.min && port <= RTP_PORTS.max);
    const ourDropsBefore = udpDropsAt(isOurs);
    const udpDropsBefore = udpReceiveBufferErrors();
    const machineBefore = machineJiffies();
    const sippBefore = sippJiffies(process.ppid);
    const cpuBefore = process.cpuUsage();
    const wallBefore = performance.now();
    await sleep(SECONDS * 1000);
    const cpu = process.cpuUsage(cpuBefore);
    const wallMs = performance.now() - wallBefore;
    const machine = machineJiffies();
    const sipp = sippJiffies(process.ppid) - sippBefore;
    const udpDrops = udpReceiveBufferErrors() - udpDropsBefore;
    const ourDrops = udpDropsAt(isOurs) - ourDropsBefore;
    const rtp = rtpTotals(calls);
    const ticks = clock.ticks - ticksBefore;
    const skipped = clock.skipped - skippedBefore;
    const windowEnd = recorded;
    const rssMb = process.memoryUsage().rss / 2 ** 20;
    const activeCalls = telephony.activeCalls;

    if (recorded === lateness.length) throw new Error("more ticks than the lateness record holds");
    // The reconstruction must agree with the clock over the clock's own span (its last ticks).
    const clockFigures = clock.latenessPercentiles();
    const clockSpan = lateness.slice(Math.max(0, recorded - LATENESS_WINDOW), recorded).sort();
    if (Math.abs(percentile(clockSpan, 0.99) - clockFigures.p99) > 0.5) {
      throw new Error(
        `tick lateness as measured (p99 ${percentile(clockSpan, 0.99).toFixed(2)} ms) disagrees with the clock's (${clockFigures.p99.toFixed(2)} ms)`,
      );
    }
    const window = lateness.slice(windowStart, windowEnd).sort();
    const sent = rtp.sent - rtpBefore.sent;
    // Jiffies of one core over the window: all CPUs' jiffies shared out.
    const coreJiffies = (machine.total - machineBefore.total) / os.cpus().length;
    const cpuPercent = ((cpu.user + cpu.system) / 1000 / wallMs) * 100;
    const sippCpuPercent = (sipp / coreJiffies) * 100;
    const machineCpuPercent = ((machine.busy - machineBefore.busy) / coreJiffies) * 100;
    return {
      participants,
      answered,
      dropped: dropped.slice(0, 10),
      ticks,
      cpuPercent,
      sippCpuPercent,
      othersCpuPercent: Math.max(0, machineCpuPercent - cpuPercent - sippCpuPercent),
      rssMb,
      lateP50: percentile(window, 0.5),
      lateP99: percentile(window, 0.99),
      lateMax: window[window.length - 1] ?? Number.NaN,
      skipped,
      // Every answered call is owed one frame per due tick, run or skipped.
      framesNotSent: activeCalls * (ticks + skipped) - sent,
      packetsSent: sent,
      packetsReceived: rtp.received - rtpBefore.received,
      packetsLost: rtp.lost - rtpBefore.lost,
      udpDropsOurs: ourDrops,
      udpReceiveBufferDrops: udpDrops,
      warnings,
    };
  } finally {
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

function holds(row: Row): boolean {
  return (
    row.answered === row.participants &&
    row.dropped.length === 0 &&
    row.lateP99 < TARGET_P99_MS &&
    row.skipped === 0 &&
    row.framesNotSent === 0 &&
    row.udpDropsOurs === 0
  );
}

function table(rows: Row[]): string {
  const header = [
    "participants",
    "SIPp",
    "answered",
    "ticks",
    "CPU %",
    "SIPp CPU %",
    "others CPU %",
    "RSS MB",
    "late p50 ms",
    "late p99 ms",
    "late max ms",
    "skipped",
    "frames not sent",
    "RTP received",
    "RTP lost",
    "UDP drops ours",
    "UDP drops machine",
    "target",
  ];
  const cells = rows.map((row) => [
    String(row.participants),
    String(row.sippProcesses),
    String(row.answered),
    String(row.ticks),
    row.cpuPercent.toFixed(1),
    row.sippCpuPercent.toFixed(0),
    row.othersCpuPercent.toFixed(0),
    row.rssMb.toFixed(0),
    row.lateP50.toFixed(2),
    row.lateP99.toFixed(2),
    row.lateMax.toFixed(2),
    String(row.skipped),
    String(row.framesNotSent),
    String(row.packetsReceived),
    String(row.packetsLost),
    String(row.udpDropsOurs),
    String(row.udpReceiveBufferDrops),
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
    const problems = [
      ...(row.answered === participants ? [] : [`only ${row.answered} of ${participants} calls answered`]),
      ...row.dropped,
      ...row.sippFailures,
    ];
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
    `target (p99 tick lateness < ${TARGET_P99_MS} ms, no tick skipped, every frame sent, no datagram dropped at our sockets): ${
      largest === undefined ? "held at no count" : `held up to ${largest} participants`
    }\n`,
  );
  if (!valid) {
    process.stderr.write(
      "\n*** INVALID RUN: some calls failed or dropped, or a trunk saw a call leave its script ***\n",
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
