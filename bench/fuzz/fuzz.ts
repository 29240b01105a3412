/**
 * One fuzzing run: starts the service (bench/fuzz/service-process.ts), sets up a PIN-only conference
 * with two of the fuzzer's own calls in it (one that media inputs go to, one that must keep hearing
 * audio; and, when the srtp target runs, one over SRTP per suite the service knows), runs the chosen
 * targets one after another or all at once while probes check the service still answers, then checks
 * the heap after a collection, the log and a clean stop.
 */
import { Agent, request } from "undici";
import { SRTP_SUITES, type SrtpSuite } from "../../src/telephony/media/rtp/srtp-suites.js";
import { apiJsonTarget } from "./api-json-target.js";
import { apiFixture, apiTarget, signupBody } from "./api-target.js";
import { rtcpTarget, rtpEventTarget, rtpTarget } from "./media-targets.js";
import { PROBE_HOST, PROBE_KINDS, type ProbeKind, Probes } from "./probes.js";
import { Random } from "./random.js";
import { type Heap, ServiceProcess, type ServiceSettings } from "./service-process.js";
import { Call, SipPeer } from "./sip-peer.js";
import { sdpTarget, sipTcpTarget, sipUdpTarget } from "./sip-targets.js";
import { srtpTarget } from "./srtp-target.js";
import { type FuzzContext, sleep, type Target, type TargetStats } from "./target.js";
import { sipTlsTarget } from "./tls-target.js";

const ACCESS_NUMBER = "+16045550199";

/** Each target's inputs a second (the API's is also held to four requests in flight). */
const RATES: Record<string, number> = {
  "sip-udp": 400,
  "sip-tcp": 300,
  "sip-tls": 200,
  sdp: 60,
  rtp: 400,
  rtcp: 200,
  "rtp-events": 200,
  srtp: 300,
  "api-xml": 150,
  "api-json": 100,
};
export const TARGET_NAMES = Object.keys(RATES);

export interface FuzzOptions {
  /** Seconds per target (each target, also when they run at once). */
  readonly seconds: number;
  readonly seed: number;
  readonly only?: readonly string[];
  /** All targets at once rather than one after another. */
  readonly parallel?: boolean;
  /** How long to wait after the inputs stop before the heap is read (SIP transactions linger 32 s). */
  readonly settleSeconds?: number;
  /** The service's media threads; 0 (the default here) puts the media on the heap that is measured. */
  readonly mediaThreads?: number;
  /** A PostgreSQL database for the service; SQLite in its data directory without. */
  readonly databaseUrl?: string;
  /** How the service's process is started (its data directory filled first). */
  readonly service?: Pick<ServiceSettings, "prepareDataDir">;
  /** Progress lines. */
  readonly log?: (line: string) => void;
}

export interface TargetReport {
  readonly name: string;
  readonly seconds: number;
  readonly stats: TargetStats;
  /** Probes sent and answered while this target ran. */
  readonly probes: { sent: number; answered: number };
}

export interface FuzzReport {
  readonly seed: number;
  readonly parallel: boolean;
  readonly targets: TargetReport[];
  readonly probes: Record<ProbeKind, { sent: number; answered: number }>;
  readonly heapBefore: Heap;
  readonly heapAfter: Heap | undefined;
  readonly logLines: Record<string, number>;
  /** What went wrong; empty when the run passed. */
  readonly failures: string[];
  /** What the fuzzing found (5xx answers, error log lines, unhandled failures), at most 20, each once. */
  readonly findings: string[];
}

/**
 * The heap's objects: what it holds less the compiled code, which grows as new paths are compiled
 * (a fuzzing run reaches many; in a 40 s run 6 of the 8 MB the heap grew were code, by a snapshot
 * diff) and is bounded by the program.
 */
export function heapObjects(heap: Heap): number {
  return heap.heapUsed - (heap.spaces.code_space ?? 0) - (heap.spaces.code_large_object_space ?? 0);
}

/** Object growth over the run that still counts as "back to its level": 10 MB or 20 %. */
export function heapGrewTooMuch(before: Heap, after: Heap): boolean {
  return heapObjects(after) > Math.max(heapObjects(before) + 10 * 2 ** 20, heapObjects(before) * 1.2);
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const log = options.log ?? (() => {});
  const names = options.only ?? TARGET_NAMES;
  for (const name of names)
    if (!TARGET_NAMES.includes(name)) throw new Error(`no target ${name}: ${TARGET_NAMES.join(", ")}`);
  const service = await ServiceProcess.start({
    ...options.service,
    accessNumber: ACCESS_NUMBER,
    mediaThreads: options.mediaThreads ?? 0,
    env: {
      BRIDGELINE_WEBHOOK_ALLOW_PRIVATE: "true",
      // The SRTP calls' keys travel in SIP over UDP: the fuzzer reads them from the answers.
      BRIDGELINE_SRTP_KEYS_OVER_PLAIN_SIP: "true",
      // Every suite the service knows, not only the default two: the srtp target fuzzes each.
      BRIDGELINE_SRTP_SUITES: SRTP_SUITES.join(","),
      ...(options.databaseUrl !== undefined && { BRIDGELINE_DATABASE_URL: options.databaseUrl }),
    },
  });
  const dispatcher = new Agent({ connections: 16 });
  const baseUrl = `http://127.0.0.1:${service.ports.httpPort}`;
  const sipPort = service.ports.sipPort;
  const findings = new Set<string>();
  const found = (what: string) => {
    if (findings.size < 20) findings.add(what);
  };
  const callsPeer = await SipPeer.open(sipPort, "127.0.0.1");
  const probePeer = await SipPeer.open(sipPort, PROBE_HOST);
  const calls: Call[] = [];
  let probes: Probes | undefined;
  try {
    // The room: a PIN-only conference of its own user, started now.
    const email = `fuzz-room-${Date.now()}@example.com`;
    const auth = `Basic ${Buffer.from(`${email}:correct horse`).toString("base64")}`;
    const api = async (method: string, path: string, body?: string) => {
      const response = await request(`${baseUrl}${path}`, {
        method: method as "GET",
        headers: {
          accept: "application/xml",
          authorization: auth,
          ...(body && { "content-type": "application/xml" }),
        },
        body,
        dispatcher,
      });
      return {
        status: response.statusCode,
        text: await response.body.text(),
        location: response.headers.location,
      };
    };
    const signed = await api("POST", "/users", signupBody(email));
    if (signed.status !== 201) throw new Error(`sign-up: ${signed.status} ${signed.text}`);
    const created = await api(
      "POST",
      `/users/${/<id type="integer">(\d+)/.exec(signed.text)?.[1]}/conferences`,
      `<conference><name>Fuzzed room</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at><no-moderator type="boolean">true</no-moderator></conference>`,
    );
    if (created.status !== 201) throw new Error(`conference: ${created.status} ${created.text}`);
    const conference = new URL(String(created.location), baseUrl).pathname;
    const pin = /<member-pin>(\d+)<\/member-pin>/.exec(created.text)?.[1] ?? "";
    await api("PUT", conference, "<conference><state>pending</state></conference>");
    await until("the conference to start", async () =>
      (await api("GET", conference)).text.includes("<state>started</state>") ? true : undefined,
    );
    const join = async (srtp?: SrtpSuite) => {
      const call = await Call.dial(
        callsPeer,
        ACCESS_NUMBER,
        `+1604555${String(1000 + calls.length).slice(-4)}`,
        srtp,
      );
      call.typeKeys(`${pin}#`);
      calls.push(call);
      return call;
    };
    const listener = await join();
    let victim = await join();
    const withSrtp = names.includes("srtp");
    // One SRTP call per suite, each the SRTP inputs under its suite go to.
    const srtpVictims = new Map<SrtpSuite, Call>();
    if (withSrtp) for (const suite of SRTP_SUITES) srtpVictims.set(suite, await join(suite));
    await until("the calls in the room", async () => {
      const connected = (await api("GET", `${conference}/attendees`)).text.match(
        /<state>connected<\/state>/g,
      );
      return (connected?.length ?? 0) >= 2 + srtpVictims.size ? true : undefined;
    });
    const heard = listener.received;
    await until("the room's audio", async () => (listener.received > heard + 10 ? true : undefined));
    for (const [suite, srtpCall] of srtpVictims) {
      const heardSrtp = srtpCall.received;
      await until(`the room's audio over SRTP (${suite})`, async () =>
        srtpCall.received > heardSrtp + 10 ? true : undefined,
      );
    }
    const fixture = await apiFixture(baseUrl, dispatcher);
    probes = new Probes({
      udpPeer: probePeer,
      servicePort: sipPort,
      tlsPort: service.ports.sipTlsPort,
      baseUrl,
      dispatcher,
      get: { path: conference, auth },
      call: listener,
    });
    const snapshots = process.env.FUZZ_SNAPSHOTS;
    const heapBefore = await service.heap(snapshots && `${snapshots}/before.heapsnapshot`);
    log(
      `service up (SIP ${sipPort}, SIP TLS ${service.ports.sipTlsPort}, HTTP ${service.ports.httpPort}), room started, heap ${mb(heapBefore.heapUsed)} MB`,
    );

    const targets: Target[] = names.map((name) => {
      const rng = new Random(options.seed, name);
      const rate = RATES[name] as number;
      switch (name) {
        case "sip-udp":
          return sipUdpTarget(rng, rate);
        case "sip-tcp":
          return sipTcpTarget(rng, rate);
        case "sip-tls":
          return sipTlsTarget(rng, rate);
        case "sdp":
          return sdpTarget(rng, rate);
        case "rtp":
          return rtpTarget(rng, rate);
        case "rtcp":
          return rtcpTarget(rng, rate);
        case "rtp-events":
          return rtpEventTarget(rng, rate);
        case "srtp":
          return srtpTarget(rng, rate);
        case "api-json":
          return apiJsonTarget(rng, rate, dispatcher);
        default:
          return apiTarget(rng, rate, dispatcher);
      }
    });
    const running = new Set<TargetReport>();
    const reports: TargetReport[] = [];
    const probeTotals = Object.fromEntries(
      PROBE_KINDS.map((kind) => [kind, { sent: 0, answered: 0 }]),
    ) as FuzzReport["probes"];
    let redialling: Promise<Call> | undefined;
    const redialSrtp = new Map<SrtpSuite, Promise<Call>>();
    const contextFor = (deadline: number): FuzzContext => ({
      sipPort,
      sipTlsPort: service.ports.sipTlsPort,
      accessNumber: ACCESS_NUMBER,
      api: fixture,
      found,
      running: () => performance.now() < deadline && service.alive,
      async victim() {
        if (!victim.ended) return victim;
        redialling ??= join()
          .catch((error: unknown) => {
            found(`the media inputs' call could not be dialled again: ${(error as Error).message}`);
            return sleep(1000).then(() => victim);
          })
          .finally(() => {
            redialling = undefined;
          });
        victim = await redialling;
        return victim;
      },
      async srtpVictim(suite) {
        const current = srtpVictims.get(suite);
        if (current === undefined)
          throw new Error(`no SRTP call under ${suite}: the srtp target was not chosen`);
        if (!current.ended) return current;
        let redial = redialSrtp.get(suite);
        if (redial === undefined) {
          redial = join(suite)
            .catch((error: unknown) => {
              found(
                `the SRTP inputs' call under ${suite} could not be dialled again: ${(error as Error).message}`,
              );
              return sleep(1000).then(() => current);
            })
            .finally(() => {
              redialSrtp.delete(suite);
            });
          redialSrtp.set(suite, redial);
        }
        const call = await redial;
        srtpVictims.set(suite, call);
        return call;
      },
    });
    const runOne = async (target: Target) => {
      const report: TargetReport = {
        name: target.name,
        seconds: options.seconds,
        stats: { inputs: 0, answers: 0, statuses: new Map() },
        probes: { sent: 0, answered: 0 },
      };
      reports.push(report);
      running.add(report);
      log(`${target.name}: ${options.seconds} s from seed ${options.seed}`);
      await target.run(contextFor(performance.now() + options.seconds * 1000), report.stats);
      running.delete(report);
      log(
        `${target.name}: ${report.stats.inputs} inputs, ${report.probes.answered}/${report.probes.sent} probes answered`,
      );
    };
    let fuzzing = true;
    const probing = (async () => {
      while (fuzzing && service.alive) {
        const started = performance.now();
        const round = await (probes as Probes).round();
        for (const kind of PROBE_KINDS) {
          const ok = round[kind];
          probeTotals[kind].sent++;
          if (ok) probeTotals[kind].answered++;
          for (const report of running) {
            report.probes.sent++;
            if (ok) report.probes.answered++;
          }
          if (!ok)
            found(
              `a ${kind} probe went unanswered while ${[...running].map((r) => r.name).join(", ") || "nothing"} ran`,
            );
        }
        await sleep(Math.max(0, 500 - (performance.now() - started)));
      }
    })();
    if (options.parallel) await Promise.all(targets.map(runOne));
    else for (const target of targets) await runOne(target);
    fuzzing = false;
    await probing;

    const failures: string[] = [];
    let heapAfter: Heap | undefined;
    if (service.alive) {
      log(`inputs stopped; waiting ${options.settleSeconds ?? 0} s before reading the heap`);
      await sleep((options.settleSeconds ?? 0) * 1000);
      heapAfter = await service.heap(snapshots && `${snapshots}/after.heapsnapshot`);
      const last = await probes.round();
      for (const kind of PROBE_KINDS) {
        probeTotals[kind].sent++;
        if (last[kind]) probeTotals[kind].answered++;
        else failures.push(`the last ${kind} probe, after the fuzzing, went unanswered`);
      }
      if (heapGrewTooMuch(heapBefore, heapAfter))
        failures.push(
          `the heap's objects did not come back: ${mb(heapObjects(heapBefore))} MB before, ${mb(heapObjects(heapAfter))} MB after`,
        );
    }
    for (const call of calls) await call.hangup();
    probes.close();
    const exit = await service.stop();
    if (exit.code !== 0 || heapAfter === undefined)
      failures.push(
        `the service ${heapAfter === undefined ? "died during the run" : "did not stop cleanly"}: exit ${exit.code ?? exit.signal}`,
      );
    if (heapAfter === undefined)
      failures.push(`its standard error ended with:\n${service.stderrTail.slice(-3000)}`);
    for (const [kind, { sent, answered }] of Object.entries(probeTotals))
      if (answered < sent) failures.push(`${sent - answered} of ${sent} ${kind} probes went unanswered`);
    for (const report of reports) if (report.stats.inputs === 0) failures.push(`${report.name} sent nothing`);
    if (findings.size + service.problems.length > 0)
      failures.push(`${findings.size + service.problems.length} finding(s), the first listed above`);
    return {
      seed: options.seed,
      parallel: options.parallel ?? false,
      targets: reports,
      probes: probeTotals,
      heapBefore,
      heapAfter,
      logLines: Object.fromEntries(service.logLines),
      failures,
      // What the service said of itself first: what the inputs got may only follow from it.
      findings: [...new Set([...service.problems, ...findings])].slice(0, 20),
    };
  } finally {
    probes?.close();
    for (const call of calls) if (!call.ended) await call.hangup().catch(() => {});
    callsPeer.close();
    probePeer.close();
    if (service.alive) await service.stop();
    await dispatcher.close();
  }
}

export function mb(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(1);
}

/** The report as the figures the bench prints. */
export function describe(report: FuzzReport): string {
  const lines = [
    `seed ${report.seed}, targets ${report.parallel ? "all at once" : "one after another"}`,
    "",
    "| target | seconds | inputs | answers | probes answered | answers by status |",
    "| --- | ---: | ---: | ---: | ---: | --- |",
  ];
  for (const target of report.targets) {
    const statuses = [...target.stats.statuses]
      .sort((a, b) => b[1] - a[1])
      .map(([status, n]) => `${status}: ${n}`);
    lines.push(
      `| ${target.name} | ${target.seconds} | ${target.stats.inputs} | ${target.stats.answers || "-"} | ${target.probes.answered}/${target.probes.sent} | ${statuses.slice(0, 8).join(", ") || "-"} |`,
    );
  }
  lines.push("", "| probe | sent | answered |", "| --- | ---: | ---: |");
  for (const [kind, { sent, answered }] of Object.entries(report.probes))
    lines.push(`| ${kind} | ${sent} | ${answered} |`);
  const after = report.heapAfter;
  lines.push(
    "",
    `heap after a full collection: ${mb(report.heapBefore.heapUsed)} MB before, ${after === undefined ? "-" : mb(after.heapUsed)} MB after; resident ${mb(report.heapBefore.rss)} MB before, ${after === undefined ? "-" : mb(after.rss)} MB after`,
    `heap objects (less compiled code): ${mb(heapObjects(report.heapBefore))} MB before, ${after === undefined ? "-" : mb(heapObjects(after))} MB after`,
    `heap by space, after - before: ${Object.entries(after?.spaces ?? {})
      .filter(([space, used]) => Math.abs(used - (report.heapBefore.spaces[space] ?? 0)) >= 0.05 * 2 ** 20)
      .map(([space, used]) => `${space} ${mb(used - (report.heapBefore.spaces[space] ?? 0))} MB`)
      .join(", ")}`,
    `service log lines: ${Object.entries(report.logLines)
      .map(([level, n]) => `${level} ${n}`)
      .join(", ")}`,
  );
  if (report.findings.length > 0)
    lines.push("", "findings:", ...report.findings.map((finding) => `- ${finding}`));
  lines.push(
    "",
    report.failures.length === 0 ? "PASSED" : `FAILED:\n${report.failures.map((f) => `- ${f}`).join("\n")}`,
  );
  return lines.join("\n");
}
