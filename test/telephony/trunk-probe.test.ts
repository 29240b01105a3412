/**
 * The trunk probes on a fake clock: one server's exact schedule (an OPTIONS every interval, each
 * bounded by the timeout, up and down after their counts, a late answer ignored, nothing after
 * stop), every trunk's servers together (a lookup retried, the locator told, a trunk down when all
 * its servers are), and what routing and readiness make of it. Real OPTIONS to real peers are in
 * e2e/trunk-health.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Hop, hopOf } from "../../src/telephony/dial-plan.js";
import type { Destination } from "../../src/telephony/sip/transport/sip-transport.js";
import {
  LOOKUP_REFRESH_MS,
  type ProbeAnswer,
  type ProbeSettings,
  probeSettingsOf,
  ServerProbe,
  serverName,
  type TrunkHealth,
  TrunkProbes,
  trunksReadiness,
} from "../../src/telephony/trunk-probe.js";
import { FakeClock } from "../helpers/fake-clock.js";

const SETTINGS: ProbeSettings = { intervalMs: 1000, timeoutMs: 300, upAfter: 2, downAfter: 3 };
const OK: ProbeAnswer = { result: "ok", status: 200 };

/** A server whose answers the test scripts: each OPTIONS answered at once, or left unanswered. */
function scriptedServer(clock: FakeClock) {
  const sent: number[] = [];
  const unanswered: ((answer: ProbeAnswer) => void)[] = [];
  let answer: ProbeAnswer | "silent" = OK;
  return {
    sent,
    unanswered,
    answerWith(next: ProbeAnswer | "silent") {
      answer = next;
    },
    send: (): Promise<ProbeAnswer> => {
      sent.push(clock.now());
      if (answer === "silent") return new Promise((resolve) => unanswered.push(resolve));
      return Promise.resolve(answer);
    },
  };
}

describe("a trunk server's probe", () => {
  it("sends every interval, bounds each by the timeout, and moves after its counts", async () => {
    const clock = new FakeClock();
    const server = scriptedServer(clock);
    const events: string[] = [];
    const probe = new ServerProbe(clock, SETTINGS, server.send, {
      probed: (result, rttMs) =>
        events.push(`${clock.now()} ${result}${rttMs === undefined ? "" : ` ${rttMs}`}`),
      moved: (health, detail) => events.push(`${clock.now()} ${health} (${detail})`),
    });
    probe.start();
    await clock.pass(0);
    assert.equal(probe.health, "unknown", "one answer of the two up-after asks");
    await clock.pass(1000);
    assert.equal(probe.health, "up");

    server.answerWith("silent");
    await clock.pass(1500); // t = 2500: the OPTIONS of 2000 timed out at 2300
    (server.unanswered[0] as (answer: ProbeAnswer) => void)(OK); // its answer, late: ignored
    await clock.pass(1800); // t = 4300: the third failure
    assert.equal(probe.health, "down");

    server.answerWith({ result: "unavailable", reason: "503 Service Unavailable" });
    await clock.pass(700); // t = 5000: a 503 is a failure, down stays down
    server.answerWith(OK);
    await clock.pass(2000); // t = 7000: answers at 6000 and 7000
    assert.equal(probe.health, "up");

    assert.deepEqual(server.sent, [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000]);
    assert.deepEqual(events, [
      "0 ok 0",
      "1000 ok 0",
      "1000 up (200 answered in 0 ms)",
      "2300 timeout",
      "3300 timeout",
      "4300 timeout",
      "4300 down (no answer in 0.3 s)",
      "5000 unavailable",
      "6000 ok 0",
      "7000 ok 0",
      "7000 up (200 answered in 0 ms)",
    ]);

    probe.stop();
    assert.equal(clock.pending, 0, "every timer cleared");
    await clock.pass(10_000);
    assert.equal(server.sent.length, 8, "no OPTIONS after stop");
  });

  it("counts a failed send as a failure, and an answer after stop as nothing", async () => {
    const clock = new FakeClock();
    const events: string[] = [];
    let fail = true;
    let late: ((answer: ProbeAnswer) => void) | undefined;
    const probe = new ServerProbe(
      clock,
      { ...SETTINGS, downAfter: 1 },
      () =>
        fail
          ? Promise.reject(new Error("connection refused"))
          : new Promise((resolve) => {
              late = resolve;
            }),
      {
        probed: (result) => events.push(result),
        moved: (health, detail) => events.push(`${health}: ${detail}`),
      },
    );
    probe.start();
    await clock.pass(0);
    assert.deepEqual(events, ["error", "down: connection refused"]);
    fail = false;
    await clock.pass(1000);
    probe.stop();
    late?.(OK);
    await clock.pass(0);
    assert.deepEqual(events, ["error", "down: connection refused"]);
    assert.equal(probe.health, "down");
  });
});

describe("a probe whose timeout is its interval", () => {
  it("counts each unanswered OPTIONS as timed out when the next is sent", async () => {
    const clock = new FakeClock();
    const server = scriptedServer(clock);
    server.answerWith("silent");
    const events: string[] = [];
    const probe = new ServerProbe(clock, { ...SETTINGS, timeoutMs: 1000, downAfter: 2 }, server.send, {
      probed: (result) => events.push(`${clock.now()} ${result}`),
      moved: (health) => events.push(`${clock.now()} ${health}`),
    });
    probe.start();
    await clock.pass(2000);
    probe.stop();
    assert.deepEqual(events, ["1000 timeout", "2000 timeout", "2000 down"]);
    assert.deepEqual(server.sent, [0, 1000, 2000]);
  });
});

/** A first hop as the dial plan reads it (the probes only hand it back to sendOptions). */
const hop = (text: string): Hop => hopOf(text) as Hop;

describe("every trunk's servers", () => {
  it("looks a trunk up again until found, tells the locator, and is down when all its servers are", async () => {
    const clock = new FakeClock();
    const trunk = { uri: "sip:carrier.example" };
    const servers: Destination[] = [
      { host: "192.0.2.1", port: 5060, transport: "UDP" },
      { host: "192.0.2.2", port: 5060, transport: "UDP" },
    ];
    let lookups = 0;
    const silent = new Set<string>(["UDP 192.0.2.1:5060"]);
    const sent: string[] = [];
    const marks: string[] = [];
    const logged: string[] = [];
    const probes = new TrunkProbes({
      clock,
      trunks: [{ trunk, first: hop(trunk.uri), settings: { ...SETTINGS, upAfter: 1, downAfter: 2 } }],
      locate: async () => {
        lookups++;
        if (lookups === 1) throw new Error("SERVFAIL");
        return servers;
      },
      sendOptions: (_hop, server) => {
        sent.push(`${clock.now()} ${serverName(server)}`);
        return silent.has(serverName(server)) ? new Promise(() => undefined) : Promise.resolve(OK);
      },
      markDown: (server) => marks.push(`${clock.now()} down ${serverName(server)}`),
      markUp: (server) => marks.push(`${clock.now()} up ${serverName(server)}`),
      logger: {
        info: (_fields, message) => logged.push(message),
        warn: (_fields, message) => logged.push(message),
      },
    });
    probes.start();
    await clock.pass(0);
    assert.equal(lookups, 1);
    assert.deepEqual(probes.health(), [{ uri: trunk.uri, lookupFailed: true, servers: [] }]);
    assert.deepEqual([...probes.downTrunks()], [trunk], "no server found: down");
    assert.deepEqual(trunksReadiness(probes.health(), "any"), {
      state: "down",
      text: "down: sip:carrier.example (servers not found)",
    });
    await clock.pass(1000); // looked up again after an interval: both servers probed from then
    assert.deepEqual(sent, ["1000 UDP 192.0.2.1:5060", "1000 UDP 192.0.2.2:5060"]);
    await clock.pass(1300); // t = 2300: the silent one's second timeout
    assert.deepEqual(probes.health(), [
      {
        uri: trunk.uri,
        lookupFailed: false,
        servers: [
          { server: "UDP 192.0.2.1:5060", health: "down" },
          { server: "UDP 192.0.2.2:5060", health: "up" },
        ],
      },
    ]);
    assert.equal(probes.downTrunks().size, 0, "one server of two is up");
    assert.equal(
      trunksReadiness(probes.health(), "any").text,
      "degraded: sip:carrier.example (1 server down of 2)",
    );

    silent.add("UDP 192.0.2.2:5060");
    await clock.pass(2000); // t = 4300: the other's second timeout
    assert.deepEqual([...probes.downTrunks()], [trunk]);
    assert.deepEqual(trunksReadiness(probes.health(), "any"), {
      state: "down",
      text: "down: sip:carrier.example (2 servers down)",
    });

    silent.clear();
    await clock.pass(1000); // t = 5300: both answer the OPTIONS of 5000
    assert.equal(probes.downTrunks().size, 0);
    assert.deepEqual(marks, [
      "1000 up UDP 192.0.2.2:5060",
      "2300 down UDP 192.0.2.1:5060",
      "3300 down UDP 192.0.2.1:5060",
      "4300 down UDP 192.0.2.1:5060",
      "4300 down UDP 192.0.2.2:5060",
      "5000 up UDP 192.0.2.1:5060",
      "5000 up UDP 192.0.2.2:5060",
    ]);
    assert.ok(logged.some((line) => line.startsWith("a trunk's servers could not be looked up")));
    assert.equal(logged.filter((line) => line === "a trunk server is down: tried last").length, 2);

    probes.stop();
    assert.equal(clock.pending, 0, "every timer cleared");
    const before = sent.length;
    await clock.pass(5000);
    assert.equal(sent.length, before, "no OPTIONS after stop");
  });

  it("looks the servers up again every LOOKUP_REFRESH_MS: a server gone is no longer probed, a new one is, one kept keeps its health", async () => {
    const clock = new FakeClock();
    const trunk = { uri: "sip:carrier.example" };
    const a: Destination = { host: "192.0.2.1", port: 5060, transport: "UDP" };
    const b: Destination = { host: "192.0.2.2", port: 5060, transport: "UDP" };
    const c: Destination = { host: "192.0.2.3", port: 5060, transport: "UDP" };
    let servers = [a, b];
    const sent: string[] = [];
    const probes = new TrunkProbes({
      clock,
      trunks: [{ trunk, first: hop(trunk.uri), settings: { ...SETTINGS, intervalMs: 60_000 } }],
      locate: async () => servers,
      sendOptions: (_hop, server) => {
        sent.push(serverName(server));
        return Promise.resolve(OK);
      },
      markDown: () => undefined,
      markUp: () => undefined,
    });
    probes.start();
    await clock.pass(0);
    servers = [b, c];
    await clock.pass(LOOKUP_REFRESH_MS);
    sent.length = 0;
    await clock.pass(60_000);
    assert.deepEqual(sent.sort(), ["UDP 192.0.2.2:5060", "UDP 192.0.2.3:5060"]);
    assert.deepEqual(
      probes.health()[0]?.servers.map((each) => `${each.server} ${each.health}`),
      ["UDP 192.0.2.2:5060 up", "UDP 192.0.2.3:5060 up"],
    );
    probes.stop();
    assert.equal(clock.pending, 0, "every timer cleared, the next lookup's too");
  });

  it("stops a lookup's retry", async () => {
    const clock = new FakeClock();
    let lookups = 0;
    const probes = new TrunkProbes({
      clock,
      trunks: [{ trunk: { uri: "sip:a.example" }, first: hop("sip:a.example"), settings: SETTINGS }],
      locate: async () => {
        lookups++;
        throw new Error("NXDOMAIN");
      },
      sendOptions: () => Promise.resolve(OK),
      markDown: () => undefined,
      markUp: () => undefined,
    });
    probes.start();
    await clock.pass(0);
    assert.equal(clock.pending, 1);
    probes.stop();
    assert.equal(clock.pending, 0);
    await clock.pass(5000);
    assert.equal(lookups, 1);
  });
});

describe("trunk readiness", () => {
  const up = { server: "UDP 192.0.2.1:5060", health: "up" as const };
  const down = { server: "UDP 192.0.2.2:5060", health: "down" as const };
  const bDown = {
    uri: "sip:b.example",
    lookupFailed: false,
    servers: [down, { ...down, server: "UDP 192.0.2.3:5060" }],
  };
  const health = [{ uri: "sip:a.example", lookupFailed: false, servers: [up] }, bDown];

  it("is ok with none down, degraded while a trunk can carry calls, down when none can", () => {
    assert.deepEqual(trunksReadiness([{ uri: "sip:a.example", lookupFailed: false, servers: [up] }], "any"), {
      state: "ok",
      text: "ok",
    });
    assert.deepEqual(trunksReadiness(health, "any"), {
      state: "degraded",
      text: "degraded: sip:b.example (2 servers down)",
    });
    assert.deepEqual(
      trunksReadiness([{ uri: "sip:a.example", lookupFailed: false, servers: [down] }, bDown], "any"),
      {
        state: "down",
        text: "down: sip:a.example (1 server down); sip:b.example (2 servers down)",
      },
    );
    assert.equal(trunksReadiness([], "any").state, "ok");
    // A trunk whose servers cannot be found carries no call: with the other down, none can.
    const notFound = { uri: "sip:a.example", lookupFailed: true, servers: [] };
    assert.deepEqual(trunksReadiness([notFound, bDown], "any"), {
      state: "down",
      text: "down: sip:a.example (servers not found); sip:b.example (2 servers down)",
    });
    assert.equal(trunksReadiness([notFound, health[0] as TrunkHealth], "any").state, "degraded");
  });

  it("with all, is down when any trunk is", () => {
    assert.equal(trunksReadiness(health, "all").state, "down");
    assert.equal(
      trunksReadiness([{ uri: "sip:a.example", lookupFailed: false, servers: [up, down] }], "all").text,
      "degraded: sip:a.example (1 server down of 2)",
    );
  });
});

describe("probe settings", () => {
  const service: ProbeSettings = { intervalMs: 30_000, timeoutMs: 5000, upAfter: 1, downAfter: 2 };
  it("takes a trunk's own over the service's, a timeout at most the interval, 0 as off", () => {
    assert.deepEqual(probeSettingsOf(service, undefined), service);
    assert.deepEqual(probeSettingsOf(service, { intervalMs: 500 }), {
      ...service,
      intervalMs: 500,
      timeoutMs: 500,
    });
    assert.equal(probeSettingsOf({ ...service, intervalMs: 0 }, null), undefined);
    assert.deepEqual(probeSettingsOf({ ...service, intervalMs: 0 }, { intervalMs: 2000, downAfter: 3 }), {
      ...service,
      intervalMs: 2000,
      timeoutMs: 2000,
      downAfter: 3,
    });
    assert.equal(probeSettingsOf(service, { intervalMs: 0 }), undefined);
  });
});
