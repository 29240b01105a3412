/**
 * What the API flood benchmarks share (bench/flood/api-logins.ts, api-streams.ts): the real service in
 * this process (SQLite in a temporary directory, plain HTTP on loopback) with a live conference of
 * ROOM_SIZE attendees called through a SIPp trunk that answers and echoes every RTP packet back
 * (test/fixtures/sipp/bench-leg.xml, -rtp_echo), so that the media threads tick during the flood; the
 * media threads' tick lateness over a window. The load generators are bench/flood/load-generator.ts.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { XMLParser } from "fast-xml-parser";
import { type Config, loadConfig } from "../../src/config.js";
import { type RunningService, startService } from "../../src/main.js";
import type { MediaPlaneStats } from "../../src/telephony/media/plane/media-plane.js";
import { signupXml } from "../../test/helpers/service.js";
import { Sipp } from "../../test/helpers/sipp.js";

export const ROOM_SIZE = 10;
const RTP_PORTS = { min: 20000, max: 29999 };
const ANSWER_TIMEOUT_MS = 60_000;

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", parseTagValue: false });

/** Requests to the service with XML bodies, as a client would make them. */
export class Api {
  constructor(
    readonly baseUrl: string,
    public authorization = "",
  ) {}

  async send(method: string, urlPath: string, body?: string): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { accept: "application/xml" };
    if (this.authorization) headers.authorization = this.authorization;
    if (body !== undefined) headers["content-type"] = "application/xml";
    const response = await fetch(`${this.baseUrl}${urlPath}`, { method, headers, body });
    return { status: response.status, text: await response.text() };
  }

  /** POSTs and returns the created resource's path; anything but 201 aborts the run. */
  async create(urlPath: string, body: string): Promise<string> {
    const response = await fetch(`${this.baseUrl}${urlPath}`, {
      method: "POST",
      headers: {
        accept: "application/xml",
        "content-type": "application/xml",
        ...(this.authorization && { authorization: this.authorization }),
      },
      body,
    });
    const text = await response.text();
    if (response.status !== 201) throw new Error(`POST ${urlPath} answered ${response.status}: ${text}`);
    return new URL(response.headers.get("location") ?? "", this.baseUrl).pathname;
  }

  /** Signs a user up and returns its path; this client then acts as that user. */
  async signUp(email: string, password: string): Promise<string> {
    const userPath = await this.create("/users", signupXml(email, password));
    this.authorization = basicAuthorization(email, password);
    return userPath;
  }
}

export function basicAuthorization(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}`;
}

export interface FloodService {
  readonly service: RunningService;
  readonly baseUrl: string;
  /** The live room's owner, as a client. */
  readonly owner: Api;
  /** Attendees `connected` in the live room now, as the API shows them. */
  connectedCalls(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Starts the service with `calls` attendees (0 for none) in one live conference, each answered by the
 * SIPp trunk; resolves once the API shows them all connected. `config` overrides settings.
 */
export async function startFloodService(calls: number, config: Partial<Config> = {}): Promise<FloodService> {
  const trunk =
    calls === 0
      ? undefined
      : await Sipp.start({
          scenario: "bench-leg.xml",
          calls,
          timeoutSeconds: 3600,
          args: ["-rtp_echo"],
          traceMessages: false,
        });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-api-flood-"));
  const logs = new Writable({ write: (_chunk, _encoding, done) => done() });
  const service = await startService(
    {
      ...loadConfig({}),
      dataDir,
      host: "127.0.0.1",
      httpsPort: 0,
      httpPort: 0,
      logLevel: "silent",
      sip: {
        ...loadConfig({}).sip,
        bindAddress: "127.0.0.1",
        port: 0,
        callerId: "+16045550000",
        routes: trunk === undefined ? [] : [{ prefix: "+1604555", trunk: `sip:127.0.0.1:${trunk.sipPort}` }],
        rtpPorts: RTP_PORTS,
      },
      ...config,
    },
    logs,
  );
  const baseUrl = `http://127.0.0.1:${service.httpPort}`;
  const owner = new Api(baseUrl);
  const ownerPath = await owner.signUp("room-owner@example.com", "room owner password");
  let conferencePath: string | undefined;
  const connectedCalls = async () => {
    if (conferencePath === undefined) return 0;
    const { text } = await owner.send("GET", `${conferencePath}/attendees`);
    const list = (xml.parse(text) as { attendees?: { attendee?: unknown } }).attendees?.attendee;
    return ([] as { state?: unknown }[]).concat((list ?? []) as []).filter((a) => a.state === "connected")
      .length;
  };
  const close = async () => {
    await service.close();
    await trunk?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    if (calls > 0) {
      const startsAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      conferencePath = await owner.create(
        `${ownerPath}/conferences`,
        `<conference><name>Live room</name><scheduled-to-start-at>${startsAt}</scheduled-to-start-at>
          <no-moderator type="boolean">true</no-moderator><direct-dial type="boolean">true</direct-dial>
          <announce-attendees type="boolean">false</announce-attendees></conference>`,
      );
      for (let i = 0; i < calls; i++)
        await owner.create(
          `${conferencePath}/attendees`,
          `<attendee><phone-number>+1 604 555 ${String(100 + i).padStart(4, "0")}</phone-number></attendee>`,
        );
      const started = await owner.send(
        "PUT",
        conferencePath,
        "<conference><state>pending</state></conference>",
      );
      if (started.status !== 200) throw new Error(`the live room did not start: ${started.text}`);
      const deadline = Date.now() + ANSWER_TIMEOUT_MS;
      while ((await connectedCalls()) < calls) {
        if (Date.now() > deadline)
          throw new Error(`the live room's ${calls} calls were not all connected in time`);
        await sleep(500);
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { service, baseUrl, owner, connectedCalls, close };
}

/** The worst media thread's tick lateness (by p99) over a window, in ms, with the ticks skipped. */
export interface Lateness {
  p50: number;
  p99: number;
  max: number;
  skippedTicks: number;
}

/** Starts a lateness window: read its figures with the returned function when the window ends. */
export async function latenessWindow(service: RunningService): Promise<() => Promise<Lateness>> {
  const before = await service.telephony.media.stats({ resetLateness: true });
  return async () => worstThread(before, await service.telephony.media.stats());
}

function worstThread(before: MediaPlaneStats, after: MediaPlaneStats): Lateness {
  const figures: Lateness = { p50: 0, p99: 0, max: 0, skippedTicks: 0 };
  after.threads.forEach((thread, index) => {
    figures.skippedTicks += thread.skippedTicks - (before.threads[index]?.skippedTicks ?? 0);
    if (thread.legs > 0 && thread.lateness.p99 >= figures.p99) {
      figures.p50 = thread.lateness.p50;
      figures.p99 = thread.lateness.p99;
      figures.max = thread.lateness.max;
    }
  });
  return figures;
}

export const formatLateness = (l: Lateness) =>
  `${l.p50.toFixed(2)} / ${l.p99.toFixed(2)} / ${l.max.toFixed(2)} ms, ${l.skippedTicks} ticks skipped`;

/** Prints why the run is invalid (and exits 1 then), or what held. */
export function reportVerdict(problems: readonly string[], held: string): void {
  if (problems.length > 0) {
    console.error(`INVALID RUN:\n- ${problems.join("\n- ")}`);
    process.exitCode = 1;
  } else console.log(`\n${held}`);
}
