/**
 * SIP scanners at the access number while callers dial in: `npm run bench:flood:scanner`.
 *
 * The real service runs in this process (SQLite in a temporary directory, SIP on 127.0.0.1, no trunk
 * and no trusted list, so that every address is a stranger's, with the default limits: the request
 * rate per source, BRIDGELINE_SIP_REQUEST_RATE, and the PIN-prompt places, BRIDGELINE_PIN_PROMPT_*)
 * with one started PIN-only conference. A caller from CALLER (its own address) dials the access number
 * every DIAL_INTERVAL_MS, each time from a number of its own (its own attendee), types the member PIN
 * (RFC 4733 events) and stays on a few seconds: one SIPp per dial-in
 * (test/fixtures/sipp/uac-dial-in.xml), its answer time SIPp's INVITE-to-200 (-trace_rtt), its time
 * to the room from starting SIPp to the service's "attendee connected" (about 3.5 s of it is the
 * caller typing and the joining prompt).
 *
 * First BENCH_BEFORE_SECONDS (default 10) with the caller alone; then BENCH_FLOOD_SECONDS (default
 * 180, printed in windows of BENCH_WINDOW_SECONDS, default 30) while a SIPp scanner on each of
 * BENCH_SCANNER_SOURCES addresses (default 31: 127.0.0.10 to 127.0.0.40) sends SCANNER_CALL_RATE
 * rounds a second of OPTIONS, REGISTER and an INVITE to the access number that it never ACKs
 * (test/fixtures/sipp/uac-scanner.xml, no retransmissions): 45 requests a second from each, under the
 * 50 a second a source may send. Then BENCH_AFTER_SECONDS (default 40, past the 64*T1 = 32 s a 2xx
 * waits for its ACK) with the caller alone again, its first dial-in started as the last scanner stops.
 * BENCH_LOG_FILE names a file that gets the service's log too, to look into a failed run. An after
 * window shorter than 64*T1 (the suite's smoke run, test/bench/benches.test.ts) ends while the
 * scanners' last unACKed INVITEs still hold their places: the bench then says that it did not check
 * the places given back, rather than wait 32 s.
 *
 * Printed per window: the dial-ins started in it (in the room / made, answer and room times
 * p50/p99/max), the PIN-prompt places held and answered and the SIP server transactions kept (the
 * most seen, sampled every 200 ms), the service's event-loop delay, and the CPU of the service's
 * process, of the SIPp peers and of everything else on the machine; then what the scanners sent and
 * got (by request and status, SIPp's counts). The run is invalid (exit status 1) if any dial-in failed
 * (refused, not answered, hung up on, or never in the room), an attendee was still connected after
 * its caller hung up, a window had no dial-in, the after window's first dial-in started more than
 * 1 s after the flood, the scanners sent under 80 % of their requests or did not fill their sources'
 * shares of the prompt, or the places were not all given back at the end.
 */

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { XMLParser } from "fast-xml-parser";
import { loadConfig } from "../../src/config.js";
import { startService } from "../../src/main.js";
import { murmur, sippCaller } from "../../test/helpers/dial-in-caller.js";
import { Sipp } from "../../test/helpers/sipp.js";
import { percentile } from "../percentile.js";
import { machineJiffies, ownChildrenJiffies } from "../proc.js";
import { Api } from "./api-common.js";

const BEFORE_SECONDS = Number(process.env.BENCH_BEFORE_SECONDS ?? 10);
const FLOOD_SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 180);
const WINDOW_SECONDS = Number(process.env.BENCH_WINDOW_SECONDS ?? 30);
const AFTER_SECONDS = Number(process.env.BENCH_AFTER_SECONDS ?? 40);
const SCANNER_SOURCES = Number(process.env.BENCH_SCANNER_SOURCES ?? 31);
/** How long a 2xx waits for its ACK (64*T1): the places the scanners' INVITEs took are held this long. */
const UNACKED_HOLD_SECONDS = 32;
/** Where the service's log goes as well, to look into a failed run; default nowhere. */
const LOG_FILE = process.env.BENCH_LOG_FILE || undefined;
/** Each scanner's rounds a second: three requests each (OPTIONS, REGISTER, INVITE). */
const SCANNER_CALL_RATE = 15;
const CALLER = "127.0.0.5";
const DIAL_INTERVAL_MS = 3000;
/** The caller's number on its `index`th dial-in: each its own attendee (at most 250 a conference). */
const callerNumber = (index: number) => `+1604555${String(2000 + index)}`;
const ACCESS_NUMBER = "+16045550199";
const RTP_PORTS = { min: 20000, max: 29999 };
/** The scanners must send this share of the requests they were asked to. */
const MIN_FLOOD_SHARE = 0.8;
/** The latest the after window's first dial-in may start after the last scanner stopped. */
const AFTER_FLOOD_MS = 1000;

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", parseTagValue: false });

/** The conference's attendees: id, number (national) and state. */
async function attendeesOf(
  api: Api,
  conferencePath: string,
): Promise<{ id: number; number: string; state: string }[]> {
  const parsed = xml.parse((await api.send("GET", `${conferencePath}/attendees`)).text) as {
    attendees?: { attendee?: unknown };
  };
  type Row = { id?: { "#text"?: string }; "phone-number-subscriber-number"?: string; state?: string };
  return ([] as Row[]).concat((parsed.attendees?.attendee ?? []) as Row[]).map((row) => ({
    id: Number(row.id?.["#text"]),
    number: String(row["phone-number-subscriber-number"] ?? ""),
    state: String(row.state ?? ""),
  }));
}

async function conferenceState(api: Api, conferencePath: string): Promise<string> {
  const parsed = xml.parse((await api.send("GET", conferencePath)).text) as {
    conference?: { state?: string };
  };
  return String(parsed.conference?.state ?? "");
}

/** One dial-in: when it started (epoch ms), from which number, and its SIPp. */
interface DialIn {
  window: string;
  number: string;
  startedAt: number;
  sipp: Sipp;
}

interface DialInOutcome {
  window: string;
  ok: boolean;
  why: string;
  answerMs: number;
  roomMs: number;
}

/** What the scanners sent and got, by request: sent, answers by status, given up unanswered. */
type ScanCounts = Record<"OPTIONS" | "REGISTER" | "INVITE", { sent: number; answers: Map<string, number> }>;

interface Window {
  name: string;
  seconds: number;
  dialIns: DialInOutcome[];
  scan: ScanCounts | null;
  placesHeldMax: number;
  placesAnsweredMax: number;
  /** The SIP server transactions the service kept (the most seen), and the requests it refused 503 for want of one. */
  transactionsMax: number;
  /** The service's event loop (this process's): how late it ran, p99 and max, ms. */
  loopDelayP99: number;
  loopDelayMax: number;
  serviceCpuPercent: number;
  sippCpuPercent: number;
  othersCpuPercent: number;
}

/** The answer time SIPp wrote with -trace_rtt (a line per call: date;response time ms;rtd). */
function answerTime(sipp: Sipp): number {
  const file = fs.readdirSync(sipp.directory).find((name) => name.endsWith("_rtt.csv"));
  if (file === undefined) return Number.NaN;
  const line = fs.readFileSync(path.join(sipp.directory, file), "utf8").split("\n")[1] ?? "";
  return Number(line.split(";")[1]);
}

/** A failed dial-in in a line: when, whether it got into the room, and what SIPp objected to first. */
function failure(dialIn: DialIn, code: number | null | undefined, connected: boolean): string {
  const errors = dialIn.sipp.errors();
  const aborted = /(?:Aborting|Call failed)[^\n]*/.exec(errors)?.[0] ?? "";
  const retryAfter = /^Retry-After:.*$/m.exec(errors)?.[0] ?? "";
  return (
    `dial-in from ${dialIn.number} at ${new Date(dialIn.startedAt).toISOString()} (${dialIn.window}): ` +
    `SIPp exited ${code}, ${connected ? "was in the room" : "never in the room"}; ${aborted} ${retryAfter}`
  );
}

function emptyCounts(): ScanCounts {
  return {
    OPTIONS: { sent: 0, answers: new Map() },
    REGISTER: { sent: 0, answers: new Map() },
    INVITE: { sent: 0, answers: new Map() },
  };
}

/**
 * A scanner's counts so far from its -trace_counts file (cumulative, a line a second with -fd 1):
 * each column after a request's `_Sent` is one of its answers (`_<status>_Recv`) or its giving up
 * (`_Timeout`), in scenario order.
 */
function scannerCounts(sipp: Sipp, into: ScanCounts): void {
  const file = fs.readdirSync(sipp.directory).find((name) => name.endsWith("_counts.csv"));
  if (file === undefined) return;
  const lines = fs.readFileSync(path.join(sipp.directory, file), "utf8").trim().split("\n");
  const header = (lines[0] ?? "").split(";");
  const last = (lines.at(-1) ?? "").split(";");
  if (lines.length < 2) return;
  let request: keyof ScanCounts | undefined;
  for (const [index, name] of header.entries()) {
    const value = Number(last[index] ?? 0);
    const sent = /^\d+_(OPTIONS|REGISTER|INVITE|ACK)_Sent$/.exec(name);
    if (sent !== null) {
      request = sent[1] === "ACK" ? undefined : (sent[1] as keyof ScanCounts);
      if (request !== undefined) into[request].sent += value;
      continue;
    }
    if (request === undefined) continue;
    const answer = /^\d+_(\d{3})_Recv$/.exec(name)?.[1] ?? (/_Timeout$/.test(name) ? "none" : undefined);
    if (answer === undefined || answer === "100" || answer === "180") continue;
    const answers = into[request].answers;
    answers.set(answer, (answers.get(answer) ?? 0) + value);
  }
}

function diffCounts(after: ScanCounts, before: ScanCounts): ScanCounts {
  const out = emptyCounts();
  for (const request of ["OPTIONS", "REGISTER", "INVITE"] as const) {
    out[request].sent = after[request].sent - before[request].sent;
    for (const [status, count] of after[request].answers)
      out[request].answers.set(status, count - (before[request].answers.get(status) ?? 0));
  }
  return out;
}

function describeCounts(counts: ScanCounts): string {
  return (["OPTIONS", "REGISTER", "INVITE"] as const)
    .map((request) => {
      const { sent, answers } = counts[request];
      const statuses = [...answers]
        .filter(([, count]) => count > 0)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([status, count]) => `${count} ${status === "none" ? "unanswered" : status}`);
      return `${request} ${sent}: ${statuses.join(", ") || "-"}`;
    })
    .join("; ");
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-scanner-"));
  const warnings: string[] = [];
  /** When each attendee was connected (epoch ms, the log line's time), by attendee id. */
  const connectedAt = new Map<number, number[]>();
  const log = new Writable({
    write(chunk, _encoding, done) {
      if (LOG_FILE !== undefined) fs.appendFileSync(LOG_FILE, String(chunk));
      for (const line of String(chunk).split("\n")) {
        if (line.includes('"attendee connected"')) {
          const entry = JSON.parse(line) as { time: number; attendeeId: number };
          connectedAt.set(entry.attendeeId, [...(connectedAt.get(entry.attendeeId) ?? []), entry.time]);
        } else if (/"level":(40|50|60)/.test(line) && !line.includes("dial-in: call refused")) {
          warnings.push(line);
          warnings.splice(0, Math.max(0, warnings.length - 10));
        }
      }
      done();
    },
  });
  const config = loadConfig({});
  const service = await startService(
    {
      ...config,
      dataDir,
      host: "127.0.0.1",
      httpsPort: 0,
      httpPort: 0,
      logLevel: "info",
      sip: {
        ...config.sip,
        bindAddress: "127.0.0.1",
        port: 0,
        rtpPorts: RTP_PORTS,
        accessNumbers: [ACCESS_NUMBER],
      },
    },
    log,
  );
  const peers: Sipp[] = [];
  const pcapDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-scanner-pcap-"));
  let failed = false;
  try {
    const sipPort = service.sipPort;
    const runtime = service.conferences;
    const api = new Api(`http://127.0.0.1:${service.httpPort}`);
    const ownerPath = await api.signUp("bench-scanner@example.com", "bench password");
    const startsAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const conference = await api.create(
      `${ownerPath}/conferences`,
      `<conference><name>Scanned</name><scheduled-to-start-at>${startsAt}</scheduled-to-start-at>
        <no-moderator type="boolean">true</no-moderator></conference>`,
    );
    const memberPin = String(
      (xml.parse((await api.send("GET", conference)).text) as { conference?: { "member-pin"?: string } })
        .conference?.["member-pin"],
    );
    await api.send("PUT", conference, "<conference><state>pending</state></conference>");
    const deadline = performance.now() + 30_000;
    while ((await conferenceState(api, conference)) !== "started") {
      if (performance.now() > deadline) throw new Error("the conference did not start");
      await sleep(200);
    }

    // The caller: a hum, the PIN as RFC 4733 events, then on for a few seconds in the room.
    const dialIns: DialIn[] = [];
    let window = "before";
    let dialled = 0;
    const dial = async (): Promise<number> => {
      const number = callerNumber(dialled++);
      const dialWindow = window;
      const startedAt = Date.now();
      const sipp = await sippCaller({
        sipPort,
        accessNumber: ACCESS_NUMBER,
        from: number,
        dir: pcapDir,
        segments: [{ audio: murmur(0.3) }, { events: `${memberPin}#` }, { audio: murmur(5) }],
        localAddress: CALLER,
        args: ["-trace_rtt", "-rtt_freq", "1"],
      });
      peers.push(sipp);
      dialIns.push({ window: dialWindow, number, startedAt, sipp });
      return startedAt;
    };
    let dialing = true;
    const dialer = (async () => {
      while (dialing) {
        const next = performance.now() + DIAL_INTERVAL_MS;
        await dial();
        while (dialing && performance.now() < next) await sleep(50);
      }
    })();

    let places = { held: 0, answered: 0 };
    let transactions = 0;
    const sampler = setInterval(() => {
      const now = runtime.atPinPrompt;
      places = { held: Math.max(places.held, now.held), answered: Math.max(places.answered, now.answered) };
      transactions = Math.max(transactions, service.telephony.sipStats.serverTransactions);
    }, 200);

    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    let scanners: Sipp[] = [];
    const scanned = () => {
      const counts = emptyCounts();
      for (const scanner of scanners) scannerCounts(scanner, counts);
      return counts;
    };
    const windows: Window[] = [];
    /** Runs `seconds` of what is going on, measured as window `name`. */
    const measure = async (name: string, seconds: number, until?: () => boolean) => {
      window = name;
      places = { ...runtime.atPinPrompt };
      transactions = service.telephony.sipStats.serverTransactions;
      const scanBefore = scanned();
      loopDelay.reset();
      const machineBefore = machineJiffies();
      const sippBefore = ownChildrenJiffies("sipp");
      const cpuBefore = process.cpuUsage();
      const wallBefore = performance.now();
      const end = wallBefore + seconds * 1000;
      while (performance.now() < end && !(until?.() ?? false)) await sleep(100);
      const cpu = process.cpuUsage(cpuBefore);
      const wallMs = performance.now() - wallBefore;
      const sipp = ownChildrenJiffies("sipp") - sippBefore;
      const machine = machineJiffies();
      const coreJiffies = (machine.total - machineBefore.total) / os.cpus().length;
      const serviceCpuPercent = ((cpu.user + cpu.system) / 1000 / wallMs) * 100;
      const sippCpuPercent = (sipp / coreJiffies) * 100;
      const machineCpuPercent = ((machine.busy - machineBefore.busy) / coreJiffies) * 100;
      windows.push({
        name,
        seconds: Math.round(wallMs / 100) / 10,
        dialIns: [],
        scan: scanners.length === 0 ? null : diffCounts(scanned(), scanBefore),
        placesHeldMax: places.held,
        placesAnsweredMax: places.answered,
        transactionsMax: transactions,
        loopDelayP99: loopDelay.percentile(99) / 1e6,
        loopDelayMax: loopDelay.max / 1e6,
        serviceCpuPercent,
        sippCpuPercent,
        othersCpuPercent: Math.max(0, machineCpuPercent - serviceCpuPercent - sippCpuPercent),
      });
    };

    await measure("before", BEFORE_SECONDS);
    const sources = Array.from({ length: SCANNER_SOURCES }, (_, i) => `127.0.0.${10 + i}`);
    scanners = await Promise.all(
      sources.map((address) =>
        Sipp.start({
          scenario: "uac-scanner.xml",
          remote: `127.0.0.1:${sipPort}`,
          localAddress: address,
          rate: SCANNER_CALL_RATE,
          calls: SCANNER_CALL_RATE * FLOOD_SECONDS,
          timeoutSeconds: FLOOD_SECONDS + 60,
          traceMessages: false,
          args: ["-nr", "-s", ACCESS_NUMBER, "-trace_counts", "-fd", "1"],
        }),
      ),
    );
    peers.push(...scanners);
    for (let done = 0, index = 1; done < FLOOD_SECONDS; done += WINDOW_SECONDS, index++) {
      const seconds = Math.min(WINDOW_SECONDS, FLOOD_SECONDS - done);
      // The last window ends when the last scanner does (its calls sent, its last answers in).
      await measure(
        `flood ${index}`,
        done + seconds < FLOOD_SECONDS ? seconds : seconds + 10,
        done + seconds < FLOOD_SECONDS ? undefined : () => scanners.every((scanner) => !scanner.running),
      );
    }
    const floodEnded = Date.now();
    const stillRunning = scanners.filter((scanner) => scanner.running).length;
    await Promise.all(scanners.map((scanner) => scanner.result(30_000)));
    const scanTotal = scanned();
    // The first dial-in of the after window starts now, as the flood ends.
    window = "after";
    const afterFirstDialMs = (await dial()) - floodEnded;
    await measure("after", AFTER_SECONDS);
    dialing = false;
    await dialer;
    clearInterval(sampler);

    // Each dial-in: SIPp's call passed (answered, not hung up on), and its attendee was connected.
    const results = await Promise.all(dialIns.map((dialIn) => dialIn.sipp.result(90_000)));
    const attendees = await attendeesOf(api, conference);
    const attendeeOf = new Map(attendees.map((row) => [`+1${row.number}`, row.id]));
    // Every caller has hung up: none may still be shown in the room.
    const stillConnected = attendees.filter((row) => row.state === "connected");
    const outcomes: DialInOutcome[] = dialIns.map((dialIn, index) => {
      const code = results[index]?.code;
      const attendeeId = attendeeOf.get(dialIn.number);
      const connected = (attendeeId === undefined ? [] : (connectedAt.get(attendeeId) ?? [])).find(
        (time) => time >= dialIn.startedAt && time < dialIn.startedAt + 20_000,
      );
      const answerMs = answerTime(dialIn.sipp);
      const ok = code === 0 && connected !== undefined;
      return {
        window: dialIn.window,
        ok,
        why: ok ? "" : failure(dialIn, code, connected !== undefined),
        answerMs,
        roomMs: connected === undefined ? Number.NaN : connected - dialIn.startedAt,
      };
    });
    for (const entry of windows) entry.dialIns = outcomes.filter((outcome) => outcome.window === entry.name);
    // The legit callers have all hung up: no place may still be held.
    const placesLeft = runtime.atPinPrompt;

    console.log(
      `SIP scanners: ${SCANNER_SOURCES} sources (127.0.0.10 on) for ${FLOOD_SECONDS} s, each ${SCANNER_CALL_RATE} rounds/s of ` +
        `OPTIONS, REGISTER and an INVITE never ACKed (${3 * SCANNER_CALL_RATE} requests/s; the request rate per source ` +
        `${config.sip.requestRatePerSource}/s); PIN-prompt places ${config.conferences.pinPromptPlaces}, ` +
        `${config.conferences.pinPromptPlacesPerSource} per source; a caller from ${CALLER} dialling in every ` +
        `${DIAL_INTERVAL_MS / 1000} s with the PIN; ${os.cpus().length} cores, load average ${os.loadavg()[0]?.toFixed(1)}`,
    );
    console.log("");
    console.log(
      "| window | s | dial-ins in the room | answer p50 / p99 / max ms | to the room p50 / p99 / max ms | places held, answered (most) | SIP server transactions (most) | event-loop delay p99 / max ms | CPU % of a core: service, SIPp, others |",
    );
    console.log("| --- | --: | --: | --: | --: | --: | --: | --: | --: |");
    for (const entry of windows) {
      // Times of the dial-ins that got that far (answered; in the room).
      const sorted = (times: number[]) => times.filter(Number.isFinite).sort((a, b) => a - b);
      const answers = sorted(entry.dialIns.map((d) => d.answerMs));
      const rooms = sorted(entry.dialIns.map((d) => d.roomMs));
      const triple = (sorted: number[]) =>
        `${percentile(sorted, 0.5).toFixed(0)} / ${percentile(sorted, 0.99).toFixed(0)} / ${(sorted.at(-1) ?? Number.NaN).toFixed(0)}`;
      console.log(
        `| ${entry.name} | ${entry.seconds} | ${entry.dialIns.filter((d) => d.ok).length} / ${entry.dialIns.length} | ` +
          `${triple(answers)} | ${triple(rooms)} | ${entry.placesHeldMax}, ${entry.placesAnsweredMax} | ` +
          `${entry.transactionsMax} | ${entry.loopDelayP99.toFixed(0)} / ${entry.loopDelayMax.toFixed(0)} | ` +
          `${entry.serviceCpuPercent.toFixed(0)}, ${entry.sippCpuPercent.toFixed(0)}, ${entry.othersCpuPercent.toFixed(0)} |`,
      );
    }
    console.log("");
    for (const entry of windows)
      if (entry.scan !== null) console.log(`scanners, ${entry.name}: ${describeCounts(entry.scan)}`);
    console.log(`scanners, in all: ${describeCounts(scanTotal)}`);
    const placesChecked = AFTER_SECONDS > UNACKED_HOLD_SECONDS;
    console.log(
      `the after window's first dial-in started ${afterFirstDialMs} ms after the last scanner stopped; ` +
        `dial-ins refused at the prompt by the service: ${JSON.stringify(runtime.dialInsRefused)}; ` +
        `places held at the end: ${placesLeft.held}${
          placesChecked
            ? ""
            : ` (not checked: the after window, ${AFTER_SECONDS} s, ends before the scanners' unACKed INVITEs give theirs back, ${UNACKED_HOLD_SECONDS} s)`
        }`,
    );

    const problems: string[] = [];
    for (const outcome of outcomes) if (!outcome.ok) problems.push(outcome.why);
    for (const entry of windows)
      if (entry.dialIns.length === 0) problems.push(`${entry.name}: no dial-in was made`);
    if (!(afterFirstDialMs <= AFTER_FLOOD_MS))
      problems.push(`the first dial-in after the flood started ${afterFirstDialMs} ms after it`);
    if (stillRunning > 0) problems.push(`${stillRunning} scanners were still running 10 s after the flood`);
    const expected = 3 * SCANNER_CALL_RATE * FLOOD_SECONDS * SCANNER_SOURCES;
    const sent = scanTotal.OPTIONS.sent + scanTotal.REGISTER.sent + scanTotal.INVITE.sent;
    if (sent < MIN_FLOOD_SHARE * expected)
      problems.push(`the scanners sent ${sent} requests, not ${expected}`);
    const taken = scanTotal.INVITE.answers.get("200") ?? 0;
    if (taken < SCANNER_SOURCES * config.conferences.pinPromptPlacesPerSource)
      problems.push(`the scanners' INVITEs were taken ${taken} times: their sources' shares were not filled`);
    if ((runtime.dialInsRefused["source-full"] ?? 0) === 0)
      problems.push(
        "no scanner INVITE was refused for its source's share: the flood did not press the limit",
      );
    if (stillConnected.length > 0) {
      const first = dialIns.find((dialIn) => dialIn.number === `+1${stillConnected[0]?.number}`);
      problems.push(
        `attendees still connected after their callers hung up: ${stillConnected.map((row) => `+1${row.number}`).join(", ")}; ` +
          `the first one's hang-up, as SIPp saw it:\n${first?.sipp.messages().slice(-1200)}`,
      );
    }
    if (placesChecked && placesLeft.held !== 0)
      problems.push(`${placesLeft.held} PIN-prompt places still held at the end`);
    if (problems.length > 0) {
      failed = true;
      console.log(`\nINVALID RUN:\n${problems.join("\n")}\nlast log lines:\n${warnings.join("\n")}`);
    }
  } finally {
    await service.close();
    for (const peer of peers) await peer.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(pcapDir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

await main();
