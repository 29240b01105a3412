/**
 * API benchmark (`npm run bench:api`, BENCH_DURATION seconds per scenario, default 10).
 *
 * The real service runs in this process over plain HTTP (a TLS proxy terminates in production);
 * beside it a bare Fastify route serves a constant XML document of the same size as the measured
 * GET conference response: the framework's ceiling on this machine. The load generator
 * (autocannon) runs in a forked child process so that it has its own event loop.
 *
 * BENCH_STORE=postgres runs the service on PostgreSQL instead of SQLite, in a database of its own
 * created (and dropped afterwards) through BENCH_ADMIN_DATABASE_URL
 * (default postgres://postgres@127.0.0.1:5432/test).
 */
import { type ChildProcess, fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import autocannon from "autocannon";
import Fastify from "fastify";
import pg from "pg";
import { loadConfig } from "../../src/config.js";
import { MAX_ATTENDEES_PER_CONFERENCE } from "../../src/domain/attendee.js";
import { startService } from "../../src/main.js";
import { signupXml } from "../../test/helpers/service.js";

const CONNECTIONS = 100;
const WARMUP_SECONDS = 2;
/** Forking this file with this argument makes the child a load generator (see `runInLoadGenerator`). */
export const LOAD_GENERATOR_ARG = "--load-generator";
const TARGET_CEILING_RATIO = 0.5;
const TARGET_P99_MS = 20;
/** The POST scenario gets conferences for this many times the GET conference rate. */
const POST_CAPACITY_MARGIN = 2;

/** One scenario, as sent to the load generator. */
export interface LoadJob {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  durationSeconds: number;
  /** For POST: the collection paths to cycle through, each taking at most `requestsPerPath`. */
  cycle?: { paths: string[]; requestsPerPath: number };
}

export interface LoadOutcome {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Counted over warm-up and measured run: every response must succeed. */
  non2xx: number;
  /** Socket errors and timeouts, over warm-up and measured run. */
  errors: number;
  statusCodes: Record<string, number>;
  /** True when the POST scenario issued more requests than its conferences can hold. */
  cycleExhausted: boolean;
  /** When the measured run (after the warm-up) started and finished, in epoch milliseconds. */
  measuredFrom: number;
  measuredTo: number;
}

interface ScenarioResult extends LoadOutcome {
  name: string;
}

function readDurationSeconds(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 10;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) {
    throw new Error(`BENCH_DURATION must be a whole number of seconds (at least 1), got "${raw}"`);
  }
  return Number(raw);
}

// ---- Load generator (child process) ----

async function runLoadJob(job: LoadJob): Promise<LoadOutcome> {
  let built = 0;
  const capacity = job.cycle ? job.cycle.paths.length * job.cycle.requestsPerPath : 0;
  // autocannon builds a request before each send (and one per connection at start), so counting
  // builds never under-counts what a conference receives.
  const requests: autocannon.Request[] | undefined = job.cycle && [
    {
      setupRequest: (request) => {
        const { paths, requestsPerPath } = job.cycle as NonNullable<LoadJob["cycle"]>;
        const index = Math.min(Math.floor(built / requestsPerPath), paths.length - 1);
        built += 1;
        return { ...request, path: paths[index] };
      },
    },
  ];
  const options = {
    url: job.url,
    method: job.method,
    headers: job.headers,
    body: job.body,
    connections: CONNECTIONS,
    requests,
  };
  const warmup = await autocannon({ ...options, duration: WARMUP_SECONDS });
  const measured = await autocannon({ ...options, duration: job.durationSeconds });
  const statusCodes: Record<string, number> = {};
  for (const result of [warmup, measured]) {
    for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
      statusCodes[code] = (statusCodes[code] ?? 0) + (stats.count ?? 0);
    }
  }
  return {
    requestsPerSecond: measured.requests.average,
    p50Ms: measured.latency.p50,
    p99Ms: measured.latency.p99,
    non2xx: warmup.non2xx + measured.non2xx,
    errors: warmup.errors + measured.errors,
    statusCodes,
    cycleExhausted: job.cycle !== undefined && built > capacity,
    measuredFrom: new Date(measured.start).getTime(),
    measuredTo: new Date(measured.finish).getTime(),
  };
}

function serveLoadJobs(): void {
  process.on("message", (job: LoadJob) => {
    runLoadJob(job).then(
      (outcome) => process.send?.(outcome),
      (error: unknown) => {
        process.stderr.write(`load generator failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  });
}

/** Sends one job to the child (this file forked with LOAD_GENERATOR_ARG) and waits for its outcome. */
export function runInLoadGenerator(child: ChildProcess, job: LoadJob): Promise<LoadOutcome> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`load generator exited with ${code}`));
    child.once("exit", onExit);
    child.once("message", (outcome) => {
      child.off("exit", onExit);
      resolve(outcome as LoadOutcome);
    });
    child.send(job);
  });
}

// ---- Fixture set-up over the API ----

class Client {
  constructor(
    private readonly baseUrl: string,
    private readonly authorization?: string,
  ) {}

  async request(method: string, urlPath: string, body?: string): Promise<Response> {
    const headers: Record<string, string> = { accept: "application/xml" };
    if (this.authorization) headers.authorization = this.authorization;
    if (body !== undefined) headers["content-type"] = "application/xml";
    return fetch(`${this.baseUrl}${urlPath}`, { method, headers, body });
  }

  /** POSTs and returns the Location of the created resource; anything but 201 aborts the run. */
  async create(urlPath: string, body: string): Promise<string> {
    const response = await this.request("POST", urlPath, body);
    const text = await response.text();
    const location = response.headers.get("location");
    if (response.status !== 201 || !location) {
      throw new Error(`POST ${urlPath} answered ${response.status}: ${text}`);
    }
    return location;
  }
}

function basicAuthorization(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}`;
}

const conferenceXml = (name: string, startsAt: string) => `<?xml version="1.0" encoding="UTF-8"?>
<conference>
  <name>${name}</name>
  <scheduled-to-start-at type="datetime">${startsAt}</scheduled-to-start-at>
  <accounting-code type="integer">4711</accounting-code>
</conference>`;

const attendeeXml = (index: number) => `<?xml version="1.0" encoding="UTF-8"?>
<attendee>
  <name>Attendee ${index}</name>
  <email>attendee${index}@example.com</email>
  <phone-number>+1 604 555 01${String(index % 100).padStart(2, "0")}</phone-number>
</attendee>`;

/** Creates `count` conferences, a few requests at a time, and returns their paths. */
async function createConferences(
  client: Client,
  userId: string,
  count: number,
  startsAt: string,
): Promise<string[]> {
  const paths: string[] = [];
  const parallel = 8;
  for (let offset = 0; offset < count; offset += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - offset) }, (_, i) =>
      client.create(`/users/${userId}/conferences`, conferenceXml(`Bench ${offset + i}`, startsAt)),
    );
    paths.push(...(await Promise.all(batch)));
  }
  return paths;
}

async function attendeeCount(client: Client, conferencePath: string): Promise<number> {
  const response = await client.request("GET", `${conferencePath}/attendees`);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET attendees answered ${response.status}: ${text}`);
  return text.match(/<attendee>/g)?.length ?? 0;
}

// ---- Report ----

function formatTable(results: ScenarioResult[]): string {
  const header = ["scenario", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors"];
  const rows = results.map((r) => [
    r.name,
    r.requestsPerSecond.toFixed(0),
    r.p50Ms.toFixed(1),
    r.p99Ms.toFixed(1),
    String(r.non2xx),
    String(r.errors),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (cells: string[]) =>
    `| ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(" | ")} |`;
  const rule = `|${widths.map((width, column) => (column === 0 ? `-${"-".repeat(width)}-` : `-${"-".repeat(width)}:`)).join("|")}|`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

const verdict = (met: boolean) => (met ? "met" : "NOT MET");

async function main(): Promise<void> {
  const durationSeconds = readDurationSeconds(process.env.BENCH_DURATION);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-"));
  const database = process.env.BENCH_STORE === "postgres" ? await createBenchDatabase() : null;
  const service = await startService({
    ...loadConfig({}),
    dataDir,
    databaseUrl: database?.url ?? null,
    host: "127.0.0.1",
    httpsPort: 0,
    httpPort: 0,
    logLevel: "warn",
    failedLoginLimit: 1_000_000,
    signupLimit: 1_000_000,
  });
  const ceiling = Fastify({ logger: false });
  const loadGenerator = fork(fileURLToPath(import.meta.url), [LOAD_GENERATOR_ARG]);
  try {
    const baseUrl = `http://127.0.0.1:${service.httpPort}`;
    const email = "bench-owner@example.com";
    const password = "bench password";
    const authorization = basicAuthorization(email, password);
    const userPath = await new Client(baseUrl).create(
      "/users",
      signupXml(
        email,
        password,
        '<phone-numbers type="array"><phone-number><subscriber-number>604-555-0100</subscriber-number></phone-number></phone-numbers>',
      ),
    );
    const userId = userPath.split("/").pop() as string;
    const client = new Client(baseUrl, authorization);
    const startsAt = new Date(Date.now() + 365 * 24 * 3600 * 1000).toISOString().replace(/\.\d+Z$/, "Z");

    // The measured conference: the owner as moderator plus nine attendees.
    const [conferencePath] = await createConferences(client, userId, 1, startsAt);
    if (!conferencePath) throw new Error("no conference created");
    for (let i = 1; i <= 9; i += 1) await client.create(`${conferencePath}/attendees`, attendeeXml(i));
    const attendees = await attendeeCount(client, conferencePath);
    const shown = await client.request("GET", conferencePath);
    const conferenceDocument = Buffer.from(await shown.arrayBuffer());
    if (shown.status !== 200) throw new Error(`GET conference answered ${shown.status}`);

    // The ceiling: Fastify alone, no auth, no database, a document of identical byte size.
    ceiling.get("/conference", (_request, reply) => {
      reply.header("content-type", "application/xml; charset=utf-8").send(conferenceDocument);
    });
    await ceiling.listen({ host: "127.0.0.1", port: 0 });
    const ceilingAddress = ceiling.server.address();
    const ceilingPort = typeof ceilingAddress === "object" && ceilingAddress ? ceilingAddress.port : 0;

    const apiHeaders = { accept: "application/xml", authorization };
    const results: ScenarioResult[] = [];
    const measure = async (name: string, job: Omit<LoadJob, "durationSeconds">) => {
      process.stderr.write(`running ${name} (${WARMUP_SECONDS} s warm-up + ${durationSeconds} s)...\n`);
      const outcome = await runInLoadGenerator(loadGenerator, { ...job, durationSeconds });
      results.push({ name, ...outcome });
      return outcome;
    };

    const ceilingOutcome = await measure("ceiling: bare Fastify GET", {
      url: `http://127.0.0.1:${ceilingPort}/conference`,
      method: "GET",
      headers: { accept: "application/xml" },
    });
    const conferenceOutcome = await measure("GET conference", {
      url: `${baseUrl}${conferencePath}`,
      method: "GET",
      headers: apiHeaders,
    });
    await measure(`GET attendees (${attendees})`, {
      url: `${baseUrl}${conferencePath}/attendees`,
      method: "GET",
      headers: apiHeaders,
    });

    // Each POST must succeed, and a conference holds a bounded number of attendees: enough fresh
    // conferences for a rate well above what GET conference reached, cycled by the load generator.
    const expectedPosts = conferenceOutcome.requestsPerSecond * (WARMUP_SECONDS + durationSeconds);
    const postPaths = await createConferences(
      client,
      userId,
      Math.max(1, Math.ceil((expectedPosts * POST_CAPACITY_MARGIN) / MAX_ATTENDEES_PER_CONFERENCE)),
      startsAt,
    );
    const requestsPerPath =
      MAX_ATTENDEES_PER_CONFERENCE - (await attendeeCount(client, postPaths[0] as string));
    await measure("POST attendee", {
      url: `${baseUrl}${postPaths[0]}/attendees`,
      method: "POST",
      headers: { ...apiHeaders, "content-type": "application/xml" },
      body: attendeeXml(42),
      cycle: { paths: postPaths.map((p) => `${p}/attendees`), requestsPerPath },
    });

    const ratio = conferenceOutcome.requestsPerSecond / ceilingOutcome.requestsPerSecond;
    const apiResults = results.filter((r) => !r.name.startsWith("ceiling"));
    const lines = [
      "",
      `bridgeline API benchmark: ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up + ${durationSeconds} s per scenario`,
      `Node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model ?? "unknown"}), plain HTTP on loopback`,
      `store: ${database ? "PostgreSQL" : "SQLite"}; load generator shares the machine with the server; POST spread over ${postPaths.length} conferences`,
      "",
      formatTable(results),
      "non-2xx and errors (socket errors, timeouts after 10 s) count warm-up and measured run",
      "",
      `GET conference / ceiling req/s: ${(ratio * 100).toFixed(1)} % (target >= ${TARGET_CEILING_RATIO * 100} %): ${verdict(ratio >= TARGET_CEILING_RATIO)}`,
      ...apiResults.map(
        (r) =>
          `p99 ${r.name}: ${r.p99Ms.toFixed(1)} ms (target < ${TARGET_P99_MS} ms at ${CONNECTIONS} connections): ${verdict(r.p99Ms < TARGET_P99_MS)}`,
      ),
    ];
    process.stdout.write(`${lines.join("\n")}\n`);

    const failed = results.filter((r) => r.non2xx > 0 || r.errors > 0 || r.cycleExhausted);
    if (failed.length > 0) {
      const details = failed.map(
        (r) =>
          `  ${r.name}: ${r.non2xx} non-2xx, ${r.errors} socket errors/timeouts, status codes ${JSON.stringify(r.statusCodes)}${r.cycleExhausted ? ", RAN OUT OF CONFERENCES" : ""}`,
      );
      process.stderr.write(
        `\n!!!!!!!! BENCHMARK RUN HAD FAILED REQUESTS: figures are not valid !!!!!!!!\n${details.join("\n")}\n`,
      );
      process.exitCode = 1;
    } else {
      process.stdout.write("every request answered 2xx\n");
    }
  } finally {
    loadGenerator.disconnect();
    await ceiling.close();
    await service.close();
    await database?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function createBenchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const name = `bridgeline_bench_${process.pid}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

// bench/media/room.ts imports the load generator's helpers: the benchmark runs only as the entry point.
if (process.argv.includes(LOAD_GENERATOR_ARG)) {
  serveLoadJobs();
} else if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
