/**
 * The compiled service as processes of its own on loopback, for the fault tests (test/faults) and
 * bench/faults: each started from `bin/bridgeline.js start` (so `npm run build:service` first),
 * signalled as a crash or an operator would (SIGKILL, SIGSTOP and SIGCONT, SIGTERM) and asked
 * through its plain-HTTP API; several on one PostgreSQL database make a cluster. Their trunk is a
 * SIPp that answers every call and holds it until it is hung up: its message log tells each call
 * it was offered (a phone ringing), when and from which instance, and which were hung up.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openPostgresStore, type Store } from "../../src/store/database.js";
import { createTestDatabase, fillDataDir, type TestDatabase } from "../helpers/databases.js";
import { signupXml } from "../helpers/service.js";
import { freePorts, rtpPortRange, Sipp } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";

const BIN = fileURLToPath(new URL("../../bin/bridgeline.js", import.meta.url));

export type Auth = [string, string];

export interface Answer {
  status: number;
  text: string;
  /** The Location header's path, when there is one. */
  path: string | null;
}

/** One run of the service: its log lines (JSON, one a line) as they come, its API, its signals. */
export class ServiceProcess {
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** When it said "bridgeline started" (ms since the epoch, as the test saw it). */
  startedAt = Number.NaN;

  private constructor(
    private readonly child: ChildProcess,
    readonly httpPort: number,
  ) {
    let partial = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      this.lines.push(...lines);
    });
    child.stderr?.on("data", (chunk: Buffer) => this.lines.push(chunk.toString()));
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  }

  /** Starts the service with `env` over the process's own, its API on plain HTTP at `httpPort`. */
  static async start(env: Record<string, string>, httpPort: number): Promise<ServiceProcess> {
    const child = spawn(process.execPath, [BIN, "start"], {
      env: { ...process.env, ...env, BRIDGELINE_HTTP_PORT: String(httpPort) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const service = new ServiceProcess(child, httpPort);
    try {
      service.startedAt = await until(
        "the service started",
        async () => {
          if (service.logged("bridgeline started")) return Date.now();
          if (!service.running) throw new Error(`the service exited at start:\n${service.lines.join("\n")}`);
          return undefined;
        },
        { timeoutMs: 60_000, detail: () => service.lines.join("\n") },
      );
    } catch (error) {
      // Nobody holds it yet to stop it later.
      await service.kill("SIGKILL");
      throw error;
    }
    return service;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Whether a log line's message starts with `message`. */
  logged(message: string): boolean {
    return this.lines.some((line) => line.includes(`"msg":"${message}`));
  }

  /** The log lines whose message starts with `message`, parsed. */
  logsOf(message: string): Record<string, unknown>[] {
    return this.lines
      .filter((line) => line.includes(`"msg":"${message}`))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** The log lines at warn or worse, the last `count` of them (for failure messages). */
  warnings(count = 40): string {
    return this.lines
      .filter((line) => !/"level":[23]0/.test(line))
      .slice(-count)
      .join("\n");
  }

  /** Sends `signal` and waits for the process to exit (SIGKILL: at once; SIGTERM: once it has stopped). */
  async kill(signal: "SIGKILL" | "SIGTERM"): Promise<void> {
    if (this.running) this.child.kill(signal);
    await this.exited;
  }

  /** SIGSTOP: the whole process, every thread of it, stands still (as a long pause or a frozen VM). */
  pause(): void {
    this.child.kill("SIGSTOP");
  }

  /** SIGCONT after pause(). */
  resume(): void {
    this.child.kill("SIGCONT");
  }

  async request(method: string, urlPath: string, auth: Auth | null, body?: string): Promise<Answer> {
    const response = await fetch(`http://127.0.0.1:${this.httpPort}${urlPath}`, {
      method,
      headers: {
        accept: "application/xml",
        "content-type": "application/xml",
        ...(auth === null
          ? {}
          : { authorization: `Basic ${Buffer.from(auth.join(":")).toString("base64")}` }),
      },
      body,
    });
    const location = response.headers.get("location");
    return {
      status: response.status,
      text: await response.text(),
      path: location === null ? null : new URL(location, "http://localhost").pathname,
    };
  }
}

/** Signs up a user through `service`; its path and credentials. */
export async function signUp(service: ServiceProcess, email: string): Promise<{ path: string; auth: Auth }> {
  const password = "correct horse";
  const created = await service.request("POST", "/users", null, signupXml(email, password));
  if (created.status !== 201 || created.path === null)
    throw new Error(`sign-up failed: ${created.status} ${created.text}`);
  return { path: created.path, auth: [email, password] };
}

/**
 * A conference that dials `numbers` (North American, such as 604-555-0100) direct, with no
 * moderator, started now (claimed by whichever instance polls first); its path.
 */
export async function liveRoom(
  service: ServiceProcess,
  owner: { path: string; auth: Auth },
  numbers: readonly string[],
): Promise<string> {
  const created = await service.request(
    "POST",
    `${owner.path}/conferences`,
    owner.auth,
    `<conference><name>Live</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at><direct-dial type="boolean">true</direct-dial><no-moderator type="boolean">true</no-moderator><announce-attendees type="boolean">false</announce-attendees></conference>`,
  );
  if (created.status !== 201 || created.path === null) throw new Error(`conference: ${created.text}`);
  for (const number of numbers) {
    const added = await service.request(
      "POST",
      `${created.path}/attendees`,
      owner.auth,
      `<attendee><phone-number>${number}</phone-number></attendee>`,
    );
    if (added.status !== 201) throw new Error(`attendee ${number}: ${added.text}`);
  }
  const pending = await service.request(
    "PUT",
    created.path,
    owner.auth,
    "<conference><state>pending</state></conference>",
  );
  if (pending.status !== 200) throw new Error(`pending: ${pending.text}`);
  return created.path;
}

/** A write answered 2xx, and how to see it again: a GET whose body must contain `expect`. */
export interface AcknowledgedWrite {
  readonly what: string;
  readonly path: string;
  readonly auth: Auth;
  readonly expect: string;
}

/**
 * API writers, each a user of its own: it signs up, then over and over creates a conference (due
 * tomorrow), adds two attendees (604-555-0150 and -0151, never called) and renames it, each request
 * through the instance `pick` gives then. Every write answered 2xx is kept. A request that gets no
 * answer (its instance killed meanwhile) is counted as cut and the writer goes on; any other answer
 * stops the writer, a failure.
 */
export class ApiWriters {
  readonly acknowledged: AcknowledgedWrite[] = [];
  /** Requests that got no answer. */
  cut = 0;
  /** What stopped a writer, each. */
  readonly failures: string[] = [];
  #stopping = false;
  readonly #done: Promise<void>;
  readonly #waiting = new Set<{ count: number; reached: () => void }>();

  constructor(
    count: number,
    private readonly pick: () => ServiceProcess,
    private readonly tag: string,
  ) {
    this.#done = Promise.all(Array.from({ length: count }, (_, index) => this.#write(index))).then(() => {});
  }

  /** Resolves once `count` writes were acknowledged in all, or every writer has stopped. */
  async acknowledgedAtLeast(count: number): Promise<void> {
    if (this.acknowledged.length >= count) return;
    await Promise.race([
      this.#done,
      new Promise<void>((reached) => {
        this.#waiting.add({ count, reached });
      }),
    ]);
  }

  /** Sends no new request from now on; resolves once those in flight have ended. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#done;
  }

  /**
   * The acknowledged writes (from index `from` on) that `service` does not show, described; read
   * back 16 at a time (as fast as the writers wrote them, or a bench between kills never catches up).
   */
  async lost(service: ServiceProcess, from = 0): Promise<string[]> {
    const writes = this.acknowledged.slice(from);
    const lost: string[] = [];
    let next = 0;
    const reader = async () => {
      for (let write = writes[next++]; write !== undefined; write = writes[next++]) {
        const read = await service.request("GET", write.path, write.auth);
        if (read.status !== 200 || !read.text.includes(write.expect))
          lost.push(`${write.what}: GET ${write.path} answered ${read.status}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, reader));
    return lost;
  }

  #acknowledge(write: AcknowledgedWrite): void {
    this.acknowledged.push(write);
    for (const waiter of this.#waiting)
      if (this.acknowledged.length >= waiter.count) {
        this.#waiting.delete(waiter);
        waiter.reached();
      }
  }

  async #write(index: number): Promise<void> {
    let user: { path: string; auth: Auth } | undefined;
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    for (let round = 0; !this.#stopping; round++) {
      try {
        if (user === undefined) {
          const email = `${this.tag}-writer-${index}-${round}-${process.pid}-${Date.now()}@example.com`;
          user = await signUp(this.pick(), email);
          this.#acknowledge({ what: `user ${email}`, path: user.path, auth: user.auth, expect: email });
        }
        const name = `Load ${index}.${round}`;
        const created = await this.pick().request(
          "POST",
          `${user.path}/conferences`,
          user.auth,
          `<conference><name>${name}</name><scheduled-to-start-at>${tomorrow}</scheduled-to-start-at></conference>`,
        );
        if (created.status !== 201 || created.path === null)
          throw new Error(`conference: ${created.status} ${created.text}`);
        const conference = created.path;
        this.#acknowledge({ what: `conference ${name}`, path: conference, auth: user.auth, expect: name });
        for (const last of ["0150", "0151"]) {
          if (this.#stopping) return;
          const added = await this.pick().request(
            "POST",
            `${conference}/attendees`,
            user.auth,
            `<attendee><phone-number>604-555-${last}</phone-number></attendee>`,
          );
          if (added.status !== 201 || added.path === null)
            throw new Error(`attendee: ${added.status} ${added.text}`);
          this.#acknowledge({
            what: `attendee ${last} of ${name}`,
            path: added.path,
            auth: user.auth,
            expect: `6045550${last.slice(1)}`,
          });
        }
        if (this.#stopping) return;
        const renamed = `${name} renamed`;
        const put = await this.pick().request(
          "PUT",
          conference,
          user.auth,
          `<conference><name>${renamed}</name></conference>`,
        );
        if (put.status !== 200) throw new Error(`rename: ${put.status} ${put.text}`);
        this.#acknowledge({ what: `rename of ${name}`, path: conference, auth: user.auth, expect: renamed });
      } catch (error) {
        // fetch fails without a response when the instance is gone: cut, its outcome unknown.
        if (error instanceof TypeError && error.message === "fetch failed") {
          this.cut++;
          continue;
        }
        this.failures.push(`writer ${index}: ${(error as Error).message}`);
        return;
      }
    }
  }
}

/** The number the service dials for a North American number as the API takes it (604-555-0100). */
export function dialled(number: string): string {
  return `+1${number.replace(/\D/g, "")}`;
}

/** A call the trunk was offered: an INVITE outside any dialog (its retransmissions are the same). */
export interface OfferedCall {
  /** The Request-URI's user: the number dialled. */
  readonly number: string;
  readonly callId: string;
  /** When SIPp took it (ms since the epoch): the callee's phone rang then. */
  readonly at: number;
  /** The SIP port it came from (its Via): which instance called. */
  readonly fromPort: number;
}

/**
 * The trunk: a SIPp (test/fixtures/sipp/uas-answer-until-bye.xml) that rings, answers and holds
 * every call it is offered until the caller hangs up, logging every message (-trace_msg).
 */
export class Trunk {
  private constructor(private readonly sipp: Sipp) {}

  static async start(): Promise<Trunk> {
    return new Trunk(
      await Sipp.start({ scenario: "uas-answer-until-bye.xml", calls: 1_000_000, timeoutSeconds: 36_000 }),
    );
  }

  get sipPort(): number {
    return this.sipp.sipPort;
  }

  /** The one port SIPp takes every call's RTP on. */
  get mediaPort(): number {
    return this.sipp.mediaPort;
  }

  /** Every call offered so far, in order. */
  offered(): OfferedCall[] {
    const calls = new Map<string, OfferedCall>();
    for (const message of this.#received()) {
      const uri = /^INVITE sip:([^@;>]+)@/.exec(message.startLine);
      const callId = header(message.headers, "Call-ID");
      if (uri === null || callId === undefined || /;\s*tag=/i.test(header(message.headers, "To") ?? ""))
        continue;
      if (calls.has(callId)) continue;
      const via = /^SIP\/2\.0\/\w+ [^:;\s]+:(\d+)/.exec(header(message.headers, "Via") ?? "");
      calls.set(callId, {
        number: uri[1] as string,
        callId,
        at: message.at,
        fromPort: Number(via?.[1] ?? 0),
      });
    }
    return [...calls.values()];
  }

  /** The Call-IDs of the calls the caller hung up (a BYE received). */
  hungUp(): Set<string> {
    const ids = new Set<string>();
    for (const message of this.#received()) {
      const callId = header(message.headers, "Call-ID");
      if (message.startLine.startsWith("BYE ") && callId !== undefined) ids.add(callId);
    }
    return ids;
  }

  /** SIPp's own report (for failure messages). */
  report(): string {
    return this.sipp.report();
  }

  stop(): Promise<void> {
    return this.sipp.stop();
  }

  /**
   * The requests and responses SIPp received. messages.log holds each as a block after a line of
   * dashes with SIPp's local time, then "UDP message received [n] bytes :", a blank line, the message.
   */
  *#received(): Generator<{ at: number; startLine: string; headers: string[] }> {
    for (const block of this.sipp.messages().split(/^-{20,} /m)) {
      const [stamp = "", kind = "", , startLine = "", ...rest] = block.split("\n");
      if (!kind.includes("message received")) continue;
      const [date, time] = stamp.trim().split(" ");
      // Local time, as SIPp writes it: read as local time (no zone), to the millisecond.
      const at = new Date(`${date}T${(time ?? "").slice(0, 12)}`).getTime();
      const end = rest.indexOf("");
      yield { at, startLine, headers: end === -1 ? rest : rest.slice(0, end) };
    }
  }
}

function header(headers: readonly string[], name: string): string | undefined {
  const prefix = `${name.toLowerCase()}:`;
  return headers
    .find((line) => line.toLowerCase().startsWith(prefix))
    ?.slice(prefix.length)
    .trim();
}

export interface ClusterOptions {
  /** Instances on the one database. */
  readonly instances: number;
  /** BRIDGELINE_CONFERENCE_LEASE_SECONDS; the service's default when left out. */
  readonly leaseSeconds?: number;
  /** RTP ports each instance has, its own range (told apart on the wire by them). */
  readonly rtpPortsEach?: number;
}

/**
 * Instances of the service on one PostgreSQL database (a test database of the machine's server),
 * named `instance-1`, `instance-2`... (BRIDGELINE_INSTANCE_ID), each in a slot of its own: a data
 * directory, an HTTP and a SIP port and an RTP port range that stay the slot's across restarts. Their
 * trunk is one Trunk. `cleanups` gets what to stop and remove, in the order to undo it.
 */
export class Cluster {
  /** The slots' current processes (a killed one stays until the slot is started again). */
  readonly instances: ServiceProcess[] = [];

  private constructor(
    readonly database: TestDatabase,
    /** The database, for what the API does not show (a conference's runner). */
    readonly store: Store,
    readonly trunk: Trunk,
    private readonly slots: readonly { env: Record<string, string>; httpPort: number }[],
    readonly rtpPorts: readonly { min: number; max: number }[],
  ) {}

  static async start(options: ClusterOptions, cleanups: Array<() => Promise<unknown>>): Promise<Cluster> {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const store = await openPostgresStore(database.url);
    cleanups.push(() => store.close());
    const trunk = await Trunk.start();
    cleanups.push(() => trunk.stop());
    const each = options.rtpPortsEach ?? 100;
    // One random window for them all, below SIPp's and baresip's ports (30000 up).
    const first = rtpPortRange().min;
    const base = first + each * options.instances > 30_000 ? 30_000 - each * options.instances : first;
    const slots: { env: Record<string, string>; httpPort: number }[] = [];
    const rtpPorts: { min: number; max: number }[] = [];
    for (let slot = 0; slot < options.instances; slot++) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-cluster-"));
      cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
      // A migrated store and a certificate copied: no RSA key made at each first start.
      await fillDataDir(dataDir);
      const ports = { min: base + slot * each, max: base + (slot + 1) * each - 1 };
      rtpPorts.push(ports);
      slots.push({
        httpPort: await freePorts(),
        env: {
          ...serviceEnv({ dataDir, databaseUrl: database.url, trunk, rtpPorts: ports }),
          // SIP over TLS takes the SIP port + 1.
          BRIDGELINE_SIP_PORT: String(await freePorts(1)),
          BRIDGELINE_INSTANCE_ID: `instance-${slot + 1}`,
          ...(options.leaseSeconds === undefined
            ? {}
            : { BRIDGELINE_CONFERENCE_LEASE_SECONDS: String(options.leaseSeconds) }),
        },
      });
    }
    const cluster = new Cluster(database, store, trunk, slots, rtpPorts);
    cleanups.push(() => Promise.all(cluster.instances.map((instance) => instance.kill("SIGKILL"))));
    await Promise.all(slots.map((_, slot) => cluster.startSlot(slot)));
    return cluster;
  }

  /** Starts the slot's instance (again, once its last run has exited). */
  async startSlot(slot: number): Promise<ServiceProcess> {
    const { env, httpPort } = this.slots[slot] as (typeof this.slots)[number];
    const instance = await ServiceProcess.start(env, httpPort);
    this.instances[slot] = instance;
    return instance;
  }

  /** The slot's instance name (BRIDGELINE_INSTANCE_ID). */
  idOf(slot: number): string {
    return `instance-${slot + 1}`;
  }

  /** The slot's SIP port: the port its calls come from. */
  sipPortOf(slot: number): number {
    return Number(this.slots[slot]?.env.BRIDGELINE_SIP_PORT);
  }

  /** The slot whose RTP port range holds `port`, or undefined. */
  slotOfRtpPort(port: number): number | undefined {
    const slot = this.rtpPorts.findIndex(({ min, max }) => port >= min && port <= max);
    return slot === -1 ? undefined : slot;
  }

  /** The running conferences' runners, by conference id: the slot of each (undefined: none of these). */
  async runners(): Promise<Map<number, number | undefined>> {
    const rows = await this.store.db
      .selectFrom("conferences")
      .select(["id", "runner"])
      .where("state", "=", "started")
      .execute();
    return new Map(
      rows.map((row) => {
        const slot = this.slots.findIndex((_, index) => this.idOf(index) === row.runner);
        return [row.id, slot === -1 ? undefined : slot];
      }),
    );
  }
}

/**
 * The environment of a service on loopback whose calls all go to `trunk`: no TLS key made, limits
 * on sign-ups and logins out of the way of load, and a media timeout longer than any run (the
 * trunk sends no audio).
 */
export function serviceEnv(options: {
  dataDir: string;
  databaseUrl?: string;
  trunk: { sipPort: number };
  rtpPorts: { min: number; max: number };
}): Record<string, string> {
  return {
    BRIDGELINE_DATA_DIR: options.dataDir,
    ...(options.databaseUrl === undefined ? {} : { BRIDGELINE_DATABASE_URL: options.databaseUrl }),
    BRIDGELINE_HOST: "127.0.0.1",
    BRIDGELINE_HTTPS_PORT: "0",
    BRIDGELINE_SIP_ADDRESS: "127.0.0.1",
    BRIDGELINE_RTP_PORTS: `${options.rtpPorts.min}-${options.rtpPorts.max}`,
    BRIDGELINE_SIP_TRUNK: `sip:127.0.0.1:${options.trunk.sipPort}`,
    BRIDGELINE_CALLER_ID: "+16045550000",
    BRIDGELINE_SIGNUP_LIMIT: "100000",
    BRIDGELINE_FAILED_LOGIN_LIMIT: "100000",
    BRIDGELINE_MEDIA_THREADS: "1",
    BRIDGELINE_MEDIA_TIMEOUT_SECONDS: "3600",
  };
}
