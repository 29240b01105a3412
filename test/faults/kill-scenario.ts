/**
 * SIGKILL of the service mid-load, and its restart on the same database: the scenario shared by the
 * suite's short test (test/faults/sigkill.test.ts) and the benchmark's longer runs (bench/faults).
 *
 * The compiled service (`bin/bridgeline.js start`, so `npm run build:service` first) runs as a
 * process of its own, its trunk a SIPp that answers every call. Rooms of SIPp-answered attendees are
 * live; writers sign up and then create conferences, add attendees and rename the conferences
 * through the API, each keeping the writes that were answered 2xx. Once enough have been, the
 * service is killed with SIGKILL, writes still in flight, and started again on the same database
 * and data directory (so the same instance name). What the restarted service then shows is
 * returned, for the caller to judge: the acknowledged writes read back, the rooms, the calls
 * still marked in progress, and whether it takes new work.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openStore } from "../../src/store/database.js";
import { createTestDatabase, type StoreKind, type TestDatabase } from "../helpers/databases.js";
import { EventStream } from "../helpers/event-stream.js";
import { signupXml } from "../helpers/service.js";
import { freePorts, rtpPortRange, Sipp } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";

const BIN = fileURLToPath(new URL("../../bin/bridgeline.js", import.meta.url));
/** What crash recovery writes as the reason of the conferences and calls it ends. */
export const RECOVERY_REASON = "call lost: the service stopped";

export interface KillOptions {
  readonly store: StoreKind;
  /** Writers running at once, each a user of its own. */
  readonly writers: number;
  /** The service is killed once this many writes were answered 2xx. */
  readonly writesBeforeKill: number;
  /** Live conferences when it is killed, and the attendees connected in each. */
  readonly rooms: number;
  readonly attendeesPerRoom: number;
}

export interface KillOutcome {
  /** Writes answered 2xx before the kill. */
  readonly acknowledged: number;
  /** Requests cut by the kill (their outcome unknown to the client, so not counted). */
  readonly cut: number;
  /** Acknowledged writes the restarted service does not show, described. */
  readonly lost: readonly string[];
  /** Each live room after the restart: its state and the reason its end event gives. */
  readonly rooms: readonly { state: string; endedReason: string | undefined }[];
  /** Attendees still marked calling or connected, anywhere, after the restart. */
  readonly callsLeftInProgress: number;
  /** Whether the restarted service logged the conferences it ended. */
  readonly recoveryLogged: boolean;
  /** From the restart's spawn to its "bridgeline started". */
  readonly restartMs: number;
  /**
   * After the restart a sign-up must be answered 201 and a new conference's attendee connect: what
   * failed of that, or empty.
   */
  readonly notServedAfterwards: string;
}

type Auth = [string, string];

/** An acknowledged write, and how to see it again: a GET whose body must contain `expect`. */
interface Acknowledged {
  readonly what: string;
  readonly path: string;
  readonly auth: Auth;
  readonly expect: string;
}

class Instance {
  readonly lines: string[] = [];
  readonly exited: Promise<unknown>;

  constructor(
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
    this.exited = new Promise((resolve) => child.once("exit", resolve));
  }

  static async start(env: Record<string, string>, httpPort: number): Promise<Instance> {
    const child = spawn(process.execPath, [BIN, "start"], {
      env: { ...process.env, ...env, BRIDGELINE_HTTP_PORT: String(httpPort) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const instance = new Instance(child, httpPort);
    await until(
      "the service started",
      async () => (instance.logged("bridgeline started") ? true : undefined),
      {
        timeoutMs: 60_000,
        detail: () => instance.lines.join("\n"),
      },
    );
    return instance;
  }

  logged(message: string): boolean {
    return this.lines.some((line) => line.includes(`"msg":"${message}`));
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }

  async request(method: string, urlPath: string, auth: Auth | null, body?: string) {
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

/** Runs the scenario; `cleanups` gets what to stop and remove, in the order to undo it. */
export async function killMidLoad(
  options: KillOptions,
  cleanups: Array<() => Promise<unknown>>,
): Promise<KillOutcome> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-kill-"));
  cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  let database: TestDatabase | undefined;
  if (options.store === "postgres") {
    database = await createTestDatabase();
    cleanups.push(() => (database as TestDatabase).drop());
  }
  const carrier = await Sipp.start({
    scenario: "uas-routed.xml",
    calls: 100_000,
    timeoutSeconds: 3600,
    traceMessages: false,
  });
  cleanups.push(() => carrier.stop());
  const rtpPorts = rtpPortRange();
  const env: Record<string, string> = {
    BRIDGELINE_DATA_DIR: dataDir,
    ...(database === undefined ? {} : { BRIDGELINE_DATABASE_URL: database.url }),
    BRIDGELINE_HOST: "127.0.0.1",
    BRIDGELINE_HTTPS_PORT: "0",
    BRIDGELINE_SIP_ADDRESS: "127.0.0.1",
    BRIDGELINE_SIP_PORT: String(await freePorts(1)),
    BRIDGELINE_RTP_PORTS: `${rtpPorts.min}-${rtpPorts.max}`,
    BRIDGELINE_SIP_TRUNK: `sip:127.0.0.1:${carrier.sipPort}`,
    BRIDGELINE_CALLER_ID: "+16045550000",
    BRIDGELINE_SIGNUP_LIMIT: "100000",
    BRIDGELINE_FAILED_LOGIN_LIMIT: "100000",
    BRIDGELINE_MEDIA_THREADS: "1",
    // The carrier sends no audio: its calls must last until the kill however slow the machine is.
    BRIDGELINE_MEDIA_TIMEOUT_SECONDS: "3600",
  };
  const httpPort = await freePorts();
  let service = await Instance.start(env, httpPort);
  cleanups.push(() => service.kill("SIGKILL"));

  // The live rooms, each owned by a user of its own (the per-user limits on placed calls apply).
  const rooms: { path: string; owner: { path: string; auth: Auth } }[] = [];
  for (let room = 0; room < options.rooms; room++) {
    const owner = await signUp(service, `kill-owner-${room}-${process.pid}-${Date.now()}@example.com`);
    const numbers = Array.from(
      { length: options.attendeesPerRoom },
      (_, i) => `604-555-${String(100 + ((room * options.attendeesPerRoom + i) % 50)).padStart(4, "0")}`,
    );
    rooms.push({ path: await liveRoom(service, owner, numbers), owner });
  }
  let attendeeStates = "";
  await until(
    "every attendee of the live rooms connected",
    async () => {
      const states: string[] = [];
      for (const { path: room, owner } of rooms) {
        const list = await service.request("GET", `${room}/attendees`, owner.auth);
        states.push(
          `${room}: ${[...list.text.matchAll(/<state>(\w+)<\/state>/g)].map((m) => m[1]).join(" ")}`,
        );
      }
      attendeeStates = states.join("\n");
      const connected = attendeeStates.match(/\bconnected\b/g)?.length ?? 0;
      return connected === rooms.length * options.attendeesPerRoom ? true : undefined;
    },
    {
      timeoutMs: 120_000,
      detail: () =>
        `attendees:\n${attendeeStates}\n${carrier.report().slice(-3000)}\n` +
        service.lines
          .filter((line) => !/"level":[23]0/.test(line))
          .slice(-40)
          .join("\n"),
    },
  );

  // The writers, until the service is gone.
  const acknowledged: Acknowledged[] = [];
  let cut = 0;
  let killed = false;
  let enough: () => void = () => {};
  const enoughWritten = new Promise<void>((resolve) => {
    enough = resolve;
  });
  const acknowledge = (write: Acknowledged) => {
    acknowledged.push(write);
    if (acknowledged.length >= options.writesBeforeKill) enough();
  };
  const writer = async (index: number) => {
    try {
      const email = `kill-writer-${index}-${process.pid}-${Date.now()}@example.com`;
      const user = await signUp(service, email);
      acknowledge({ what: `user ${email}`, path: user.path, auth: user.auth, expect: email });
      const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
      for (let round = 0; ; round++) {
        const name = `Load ${index}.${round}`;
        const created = await service.request(
          "POST",
          `${user.path}/conferences`,
          user.auth,
          `<conference><name>${name}</name><scheduled-to-start-at>${tomorrow}</scheduled-to-start-at></conference>`,
        );
        if (created.status !== 201 || created.path === null)
          throw new Error(`conference: ${created.status} ${created.text}`);
        const conference = created.path;
        acknowledge({ what: `conference ${name}`, path: conference, auth: user.auth, expect: name });
        for (const last of ["0150", "0151"]) {
          const added = await service.request(
            "POST",
            `${conference}/attendees`,
            user.auth,
            `<attendee><phone-number>604-555-${last}</phone-number></attendee>`,
          );
          if (added.status !== 201 || added.path === null)
            throw new Error(`attendee: ${added.status} ${added.text}`);
          acknowledge({
            what: `attendee ${last} of ${name}`,
            path: added.path,
            auth: user.auth,
            expect: `6045550${last.slice(1)}`,
          });
        }
        const renamed = `${name} renamed`;
        const put = await service.request(
          "PUT",
          conference,
          user.auth,
          `<conference><name>${renamed}</name></conference>`,
        );
        if (put.status !== 200) throw new Error(`rename: ${put.status} ${put.text}`);
        acknowledge({ what: `rename of ${name}`, path: conference, auth: user.auth, expect: renamed });
      }
    } catch (error) {
      // Cut by the kill: fetch fails without a response. Anything else is a failure of its own.
      if (!killed) throw error;
      cut++;
    }
  };
  const writers = Array.from({ length: options.writers }, (_, index) => writer(index));
  await Promise.race([enoughWritten, Promise.all(writers)]);
  killed = true;
  await service.kill("SIGKILL");
  await Promise.all(writers);
  const acknowledgedAtKill = acknowledged.length;

  const restartedAt = Date.now();
  service = await Instance.start(env, httpPort);
  const restartMs = Date.now() - restartedAt;

  const lost: string[] = [];
  for (const write of acknowledged) {
    const read = await service.request("GET", write.path, write.auth);
    if (read.status !== 200 || !read.text.includes(write.expect))
      lost.push(`${write.what}: GET ${write.path} answered ${read.status}`);
  }
  const roomOutcomes: { state: string; endedReason: string | undefined }[] = [];
  for (const { path: room, owner } of rooms) {
    const read = await service.request("GET", room, owner.auth);
    const events = await EventStream.open(`http://127.0.0.1:${httpPort}${room}/events`, {
      auth: owner.auth,
      lastEventId: 0,
    });
    const ended = await events
      .waitFor("the conference's end", (event) => event.type === "conference-ended", 5_000)
      .catch(() => undefined);
    events.close();
    roomOutcomes.push({
      state: /<state>(\w+)<\/state>/.exec(read.text)?.[1] ?? `unread (${read.status})`,
      endedReason: ended?.data.reason,
    });
  }
  const store = await openStore({ databaseUrl: database?.url ?? null, dataDir });
  let callsLeftInProgress: number;
  try {
    const row = await store.db
      .selectFrom("attendees")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .where("state", "in", ["calling", "connected"])
      .executeTakeFirstOrThrow();
    callsLeftInProgress = Number(row.count);
  } finally {
    await store.close();
  }

  const signup = await service.request(
    "POST",
    "/users",
    null,
    signupXml(`kill-after-${process.pid}-${Date.now()}@example.com`),
  );
  const owner = await signUp(service, `kill-fresh-${process.pid}-${Date.now()}@example.com`);
  const fresh = await liveRoom(service, owner, ["604-555-0199"]);
  let freshState = "";
  let notServed = signup.status === 201 ? "" : `sign-up answered ${signup.status} ${signup.text}`;
  await until(
    "the new conference's attendee connected",
    async () => {
      const list = await service.request("GET", `${fresh}/attendees`, owner.auth);
      freshState = list.text;
      return list.text.includes("<state>connected</state>") ? true : undefined;
    },
    {
      timeoutMs: 30_000,
      detail: () =>
        `${freshState}\n${carrier.report().slice(-3000)}\n${service.lines
          .filter((line) => !/"level":[23]0/.test(line))
          .slice(-40)
          .join("\n")}`,
    },
  ).catch((error: Error) => {
    notServed += error.message;
  });
  await service.kill("SIGTERM");

  return {
    acknowledged: acknowledgedAtKill,
    cut,
    lost,
    rooms: roomOutcomes,
    callsLeftInProgress,
    recoveryLogged: service.logged("conference ended: the instance running it stopped"),
    restartMs,
    notServedAfterwards: notServed,
  };
}

async function signUp(service: Instance, email: string): Promise<{ path: string; auth: Auth }> {
  const password = "correct horse";
  const created = await service.request("POST", "/users", null, signupXml(email, password));
  if (created.status !== 201 || created.path === null)
    throw new Error(`sign-up failed: ${created.status} ${created.text}`);
  return { path: created.path, auth: [email, password] };
}

/** A conference that dials `numbers` direct, with no moderator, started now; its path. */
async function liveRoom(
  service: Instance,
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
