/**
 * Health probes and start-up against real failures: /health/live and /health/ready on the running
 * service; readiness while PostgreSQL is cut off and back (a TCP relay in front of the real server,
 * closed and reopened, since stopping the server itself would stop every other test's database);
 * a start that waits for PostgreSQL; a port already taken.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { Writable } from "node:stream";
import { after, describe, it } from "node:test";
import { loadConfig } from "../../src/config.js";
import { StartupError, startService } from "../../src/main.js";
import { createTestDatabase, postgresOnly } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { freePorts } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const JSON_ACCEPT = { headers: { accept: "application/json" } };

async function readiness(api: TestService): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await api.request("GET", "/health/ready", JSON_ACCEPT);
  return { status: response.status, body: JSON.parse(response.text) as Record<string, unknown> };
}

/** A TCP relay to PostgreSQL that can be cut (every connection reset, new ones refused) and restored. */
class DatabaseRelay {
  readonly #sockets = new Set<net.Socket>();
  #server: net.Server | undefined;

  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async freePort(): Promise<number> {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as net.AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    return port;
  }

  async open(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on("close", () => this.#sockets.delete(socket));
        socket.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.#server = server;
  }

  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.resetAndDestroy();
    if (server !== undefined) await new Promise((resolve) => server.close(resolve));
  }
}

/** A fresh test database and a relay to it (not yet open), with the database URL through the relay. */
async function relayedTestDatabase(): Promise<{ relay: DatabaseRelay; url: string }> {
  const database = await createTestDatabase();
  cleanups.push(() => database.drop());
  const target = new URL(database.url);
  const relay = new DatabaseRelay(await DatabaseRelay.freePort(), {
    host: target.hostname,
    port: Number(target.port || 5432),
  });
  cleanups.push(() => relay.cut());
  const url = new URL(database.url);
  url.hostname = "127.0.0.1";
  url.port = String(relay.port);
  return { relay, url: url.toString() };
}

describe("health probes", () => {
  it("live and ready on a running service, as JSON, with every check named", async () => {
    const api = await startTestService();
    cleanups.push(() => api.close());
    const live = await api.request("GET", "/health/live", JSON_ACCEPT);
    assert.equal(live.status, 200);
    assert.deepEqual(JSON.parse(live.text), { status: "live" });
    assert.equal(live.headers["cache-control"], "no-store");
    // No Accept at all, as load balancers send: JSON all the same.
    const bare = await api.request("GET", "/health/ready", { headers: { accept: "*/*" } });
    assert.equal(bare.status, 200);
    assert.deepEqual(JSON.parse(bare.text), {
      status: "ready",
      checks: { database: "ok", migrations: "ok", sip: "ok", trunks: "ok", media: "ok" },
    });
  });

  it("ready turns 503 naming the database when PostgreSQL is cut off, and 200 when it is back", {
    ...postgresOnly,
  }, async () => {
    const { relay, url } = await relayedTestDatabase();
    await relay.open();
    const api = await startTestService({ databaseUrl: url }, { store: "postgres" });
    cleanups.push(() => api.close());
    assert.equal((await readiness(api)).status, 200);

    await relay.cut();
    const down = await until("ready to say 503", async () => {
      const answer = await readiness(api);
      return answer.status === 503 ? answer : undefined;
    });
    assert.equal(down.body.status, "not ready");
    const checks = down.body.checks as Record<string, string>;
    assert.match(
      checks.database ?? "",
      new RegExp(`^PostgreSQL at 127\\.0\\.0\\.1:${relay.port} not reachable: connection refused$`),
    );
    assert.equal(checks.sip, "ok");
    assert.equal(checks.media, "ok");
    // The process itself still answers.
    assert.equal((await api.request("GET", "/health/live", JSON_ACCEPT)).status, 200);

    await relay.open();
    await until("ready to say 200 again", async () =>
      (await readiness(api)).status === 200 ? true : undefined,
    );
  });

  it("start-up waits for PostgreSQL, a line per attempt, and starts once it is there", {
    ...postgresOnly,
  }, async () => {
    const { relay, url } = await relayedTestDatabase();
    const logs: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    });
    const config = {
      ...loadConfig({}),
      databaseUrl: url,
      databaseWaitSeconds: 30,
      host: "127.0.0.1",
      httpsPort: 0,
      sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, mediaThreads: 0 },
    };
    const starting = startService(config, sink);
    await until("a retry logged", async () =>
      logs.some((line) => line.includes("retrying")) ? true : undefined,
    );
    assert.ok(
      logs.some((line) =>
        line.includes(
          `PostgreSQL at 127.0.0.1:${relay.port} not reachable: connection refused; retrying in 2 s`,
        ),
      ),
      logs.join(""),
    );
    await relay.open();
    const service = await starting;
    cleanups.push(() => service.close());
    assert.ok(service.httpsPort > 0);
  });

  it("gives up on PostgreSQL after BRIDGELINE_DATABASE_WAIT_SECONDS with the reason", async () => {
    const closedPort = await DatabaseRelay.freePort();
    const config = {
      ...loadConfig({}),
      databaseUrl: `postgres://postgres@127.0.0.1:${closedPort}/nothing`,
      databaseWaitSeconds: 1,
      host: "127.0.0.1",
      httpsPort: 0,
      sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, mediaThreads: 0 },
    };
    const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
    await assert.rejects(startService(config, sink), (error: unknown) => {
      assert.ok(error instanceof StartupError);
      assert.equal(
        error.message,
        `PostgreSQL at 127.0.0.1:${closedPort} not reachable: connection refused; gave up after 1 s (BRIDGELINE_DATABASE_WAIT_SECONDS)`,
      );
      return true;
    });
  });

  it("a port already in use names the setting to change", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => holder.close(resolve)));
    const { port } = holder.address() as net.AddressInfo;
    await assert.rejects(
      startTestService({ httpsPort: port }),
      (error: unknown) =>
        error instanceof StartupError &&
        error.message === `port ${port} is already in use: set BRIDGELINE_HTTPS_PORT to a free port`,
    );
  });

  it("two instances on one host with consecutive SIP ports: the TLS port's collision says why", async () => {
    const sipPort = await freePorts(1);
    const first = await startTestService({
      sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: sipPort },
    });
    cleanups.push(() => first.close());
    const note =
      "(SIP over TLS listens on the SIP port + 1 unless BRIDGELINE_SIP_TLS_PORT is set, so instances on one host need SIP ports at least 2 apart, or a BRIDGELINE_SIP_TLS_PORT each)";
    await assert.rejects(
      startTestService({ sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: sipPort + 1 } }),
      (error: unknown) => {
        assert.ok(error instanceof StartupError, String(error));
        assert.equal(
          error.message,
          `port ${sipPort + 1} is already in use: set BRIDGELINE_SIP_PORT to a free port ${note}`,
        );
        return true;
      },
    );
    await first.close();
    const second = await startTestService({
      sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: sipPort + 1 },
    });
    cleanups.push(() => second.close());
    await assert.rejects(
      startTestService({ sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: sipPort } }),
      (error: unknown) => {
        assert.ok(error instanceof StartupError, String(error));
        assert.equal(
          error.message,
          `port ${sipPort + 1} is already in use: set BRIDGELINE_SIP_TLS_PORT to a free port ${note}`,
        );
        return true;
      },
    );
  });
});
