import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { XMLParser } from "fast-xml-parser";
import type { Kysely } from "kysely";
import { Agent, request } from "undici";
import { buildApi } from "../../src/api/server.js";
import { type Config, loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/log.js";
import { type RunningService, type ServiceOptions, startService } from "../../src/main.js";
import { openStore, type Store } from "../../src/store/database.js";
import type { Database } from "../../src/store/schema.js";
import { createTestDatabase, fillDataDir, type StoreKind, type TestDatabase } from "./databases.js";

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed with attributes kept (`@_type`, `@_nil`), values as strings. */
  xml: Record<string, unknown>;
}

export interface RequestOptions {
  /** Text is sent as UTF-8; bytes as they are (e.g. bytes that are not UTF-8). */
  body?: string | Buffer;
  /** [email, password] for HTTP Basic; omit for an anonymous request. */
  auth?: [string, string];
  headers?: Record<string, string>;
  https?: boolean;
}

/** The API over a store: what tests of the API alone need, in process or over sockets. */
export interface TestApi {
  dataDir: string;
  /** Every JSON log line the service wrote. */
  logs: string[];
  request(method: string, urlPath: string, options?: RequestOptions): Promise<TestResponse>;
  /** Reads the service's database directly (either store), for what no response shows. */
  inspect<T>(query: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The API in process, with the store it answers from, for tests of the store's queries. */
export interface InProcessTestApi extends TestApi {
  store: Store;
}

/** The whole service on real sockets (HTTPS, plain HTTP, SIP, media threads). */
export interface TestService extends TestApi {
  service: RunningService;
  httpUrl: string;
  httpsUrl: string;
}

const responseParser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  parseTagValue: false,
});

/** What startService takes, and the store the test service runs on (SQLite unless told). */
export interface TestServiceOptions extends ServiceOptions {
  store?: StoreKind;
}

/** The self-signed certificate is the service's own; tests trust it by not verifying. */
const insecureAgent = new Agent({ connect: { rejectUnauthorized: false } });

/**
 * Starts the real service (HTTPS plus a plain-HTTP listener) on free loopback ports with a fresh
 * data directory. Throttling is generous unless the test overrides it. A test that passes its own
 * `dataDir` (to restart a service on the same data) keeps it: close() removes only a fresh one.
 * On SQLite unless `options.store` says PostgreSQL: then each service gets a database of its own
 * unless the test passes `databaseUrl` (several instances on one database).
 */
export async function startTestService(
  overrides: Partial<Config> = {},
  { store = "sqlite", ...options }: TestServiceOptions = {},
): Promise<TestService> {
  const ownsDataDir = overrides.dataDir === undefined;
  const dataDir = overrides.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-test-"));
  if (ownsDataDir) await fillDataDir(dataDir);
  const database: TestDatabase | null =
    store === "postgres" && overrides.databaseUrl === undefined ? await createTestDatabase() : null;
  const config: Config = {
    ...loadConfig({}),
    dataDir,
    databaseUrl: database?.url ?? null,
    host: "127.0.0.1",
    httpsPort: 0,
    httpPort: 0,
    logLevel: "info",
    failedLoginLimit: 1000,
    signupLimit: 1000,
    instanceId: `test:${dataDir}`,
    // Off unless a test asks: with it, a room that empties waits for callers (the grace period).
    browserJoin: false,
    sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0 },
    ...overrides,
  };
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  let service: RunningService;
  try {
    service = await startService(config, logStream, { passwordCost: TEST_PASSWORD_COST, ...options });
  } catch (error) {
    // A service that does not start leaves neither its database nor its fresh data directory.
    await database?.drop();
    if (ownsDataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const httpUrl = `http://127.0.0.1:${service.httpPort}`;
  const inspect: TestApi["inspect"] = async (query) => {
    const store = await openStore({ databaseUrl: config.databaseUrl, dataDir });
    try {
      return await query(store.db);
    } finally {
      await store.close();
    }
  };
  const httpsUrl = `https://127.0.0.1:${service.httpsPort}`;
  return {
    service,
    dataDir,
    httpUrl,
    httpsUrl,
    logs,
    async request(method, urlPath, options = {}) {
      const response = await request(`${options.https ? httpsUrl : httpUrl}${urlPath}`, {
        method: method as "GET",
        headers: requestHeaders(options),
        body: options.body,
        dispatcher: options.https ? insecureAgent : undefined,
      });
      return testResponse(response.statusCode, response.headers, await response.body.text());
    },
    inspect,
    async close() {
      await service.close();
      await database?.drop();
      if (ownsDataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * scrypt's cost for the passwords test services hash: a deployment's (2^15, some 100 ms and 32 MiB a
 * hash) paid by every sign-up and first login of the suite is minutes. Tests of the cost itself
 * pass `passwordCost: PASSWORD_COST`.
 */
export const TEST_PASSWORD_COST = 2 ** 10;

/** What every test request sends: XML both ways unless told, and HTTP Basic when given credentials. */
function requestHeaders(options: RequestOptions): Record<string, string> {
  const headers: Record<string, string> = { accept: "application/xml", ...options.headers };
  if (options.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
    headers["content-type"] = "application/xml";
  }
  if (options.auth) {
    headers.authorization = `Basic ${Buffer.from(`${options.auth[0]}:${options.auth[1]}`).toString("base64")}`;
  }
  return headers;
}

function testResponse(status: number, headers: TestResponse["headers"], text: string): TestResponse {
  let xml: Record<string, unknown> = {};
  if (text.startsWith("<?xml")) xml = responseParser.parse(text) as Record<string, unknown>;
  return { status, headers, text, xml };
}

/**
 * The API alone, answering through Fastify's inject() (no sockets, no TLS, no SIP, no media
 * threads, no workers), over a store copied from the migrated template: for tests of what the API
 * says and stores. Tests of the listeners (HTTPS, limits on connections, 100-continue), of the
 * workers (notifications, webhooks, the scheduler) or of calls start the real service instead.
 */
export async function startTestApi(
  overrides: Partial<Config> = {},
  { store: kind = "sqlite" }: { store?: StoreKind } = {},
): Promise<InProcessTestApi> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-api-"));
  await fillDataDir(dataDir);
  const database = kind === "postgres" ? await createTestDatabase() : null;
  const config: Config = {
    ...loadConfig({}),
    dataDir,
    databaseUrl: database?.url ?? null,
    logLevel: "info",
    failedLoginLimit: 1000,
    signupLimit: 1000,
    ...overrides,
  };
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const store = await openStore(config);
  const app = await buildApi({
    store,
    logger: createLogger(config.logLevel, logStream),
    failedLoginLimit: config.failedLoginLimit,
    signupLimit: config.signupLimit,
    throttleWindowSeconds: config.throttleWindowSeconds,
    trustedProxies: config.trustedProxies,
    dataDir,
    accessNumbers: config.sip.accessNumbers,
    callingPolicy: {
      deniedPrefixes: config.conferences.deniedNumberPrefixes,
      maxCallsInProgressPerUser: config.conferences.maxCallsInProgressPerUser,
      maxCallsPerHourPerUser: config.conferences.maxCallsPerHourPerUser,
    },
    passwordCost: TEST_PASSWORD_COST,
  });
  return {
    dataDir,
    logs,
    store,
    async request(method, urlPath, options = {}) {
      if (options.https) throw new Error("startTestApi has no HTTPS listener: use startTestService");
      const response = await app.inject({
        method: method as "GET",
        url: urlPath,
        headers: requestHeaders(options),
        ...(options.body !== undefined && { payload: options.body }),
      });
      // inject() gives some headers as numbers (content-length); a socket gives text.
      const headers = Object.fromEntries(
        Object.entries(response.headers).map(([name, value]) => [
          name,
          typeof value === "number" ? String(value) : value,
        ]),
      );
      return testResponse(response.statusCode, headers, response.body);
    },
    async inspect(query) {
      return query(store.db);
    },
    async close() {
      await app.close();
      await store.close();
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let userCounter = 0;

/** A sign-up body for a fresh user; `extra` is XML inserted inside <user>. */
export function signupXml(email: string, password = "correct horse", extra = ""): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<user>
  <name>Test User</name>
  <email>${email}</email>
  <password>${password}</password>
  <password-confirmation>${password}</password-confirmation>
  <terms-of-service type="boolean">true</terms-of-service>
  <billing-package><id type="integer">1</id></billing-package>
  ${extra}
</user>`;
}

/** Signs up a fresh user and returns its id and credentials. */
export async function createUser(
  api: TestApi,
  extra = "",
): Promise<{ id: number; auth: [string, string]; response: TestResponse }> {
  userCounter += 1;
  const email = `user${userCounter}-${process.pid}@example.com`;
  const password = "correct horse";
  const response = await api.request("POST", "/users", { body: signupXml(email, password, extra) });
  if (response.status !== 201) throw new Error(`sign-up failed: ${response.status} ${response.text}`);
  const user = response.xml.user as Record<string, { "#text": string }>;
  return { id: Number(user.id?.["#text"]), auth: [email, password], response };
}

/**
 * A conference through the API with `numbers` as attendees, set to pending so that the scheduler
 * starts it at `startAt` (default now); `extra` is XML inserted inside <conference>. Its path.
 */
/** Creates a conference (state new) of `owner`'s, scheduled at `startAt`: its path and id. */
export async function createConference(
  api: TestApi,
  owner: { id: number; auth: [string, string] },
  startAt: string,
  name = "Weekly",
): Promise<{ path: string; id: number }> {
  const created = await api.request("POST", `/users/${owner.id}/conferences`, {
    auth: owner.auth,
    body: `<conference><name>${name}</name><scheduled-to-start-at>${startAt}</scheduled-to-start-at></conference>`,
  });
  if (created.status !== 201) throw new Error(`conference not created: ${created.status} ${created.text}`);
  const path = new URL(String(created.headers.location), "http://localhost").pathname;
  return { path, id: Number(path.split("/").pop()) };
}

export async function createPendingConference(
  api: TestApi,
  owner: { id: number; auth: [string, string] },
  options: { numbers: readonly string[]; extra?: string; startAt?: Date; name?: string },
): Promise<string> {
  const startAt = (options.startAt ?? new Date()).toISOString();
  const created = await api.request("POST", `/users/${owner.id}/conferences`, {
    auth: owner.auth,
    body: `<conference><name>${options.name ?? "Weekly"}</name><scheduled-to-start-at>${startAt}</scheduled-to-start-at>${options.extra ?? ""}</conference>`,
  });
  if (created.status !== 201) throw new Error(`conference not created: ${created.status} ${created.text}`);
  const conference = new URL(String(created.headers.location), "http://localhost").pathname;
  for (const number of options.numbers) {
    const added = await api.request("POST", `${conference}/attendees`, {
      auth: owner.auth,
      body: `<attendee><phone-number>${number}</phone-number></attendee>`,
    });
    if (added.status !== 201) throw new Error(`attendee ${number} not added: ${added.status} ${added.text}`);
  }
  const pending = await api.request("PUT", conference, {
    auth: owner.auth,
    body: "<conference><state>pending</state></conference>",
  });
  if (pending.status !== 200)
    throw new Error(`conference not made pending: ${pending.status} ${pending.text}`);
  return conference;
}

/** Every sample of the service's /metrics exposition, as `name{labels}` to value. */
export async function scrapeMetrics(api: TestService): Promise<Map<string, number>> {
  const response = await request(`http://127.0.0.1:${api.service.metricsPort}/metrics`);
  if (response.statusCode !== 200) throw new Error(`/metrics answered ${response.statusCode}`);
  if (!/^text\/plain; version=0\.0\.4/.test(String(response.headers["content-type"])))
    throw new Error(`/metrics is ${response.headers["content-type"]}, not the Prometheus text format`);
  const samples = new Map<string, number>();
  for (const line of (await response.body.text()).split("\n")) {
    const match = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match !== null) samples.set(match[1] as string, Number(match[2]));
  }
  return samples;
}

/** The sum of a metric's samples whose labels include `labels` (e.g. `status_class="4xx"`). */
export function totalOf(samples: Map<string, number>, name: string, labels = ""): number {
  let sum = 0;
  for (const [key, value] of samples) {
    const [metric, rest = ""] = key.split("{");
    if (metric === name && rest.includes(labels)) sum += value;
  }
  return sum;
}
