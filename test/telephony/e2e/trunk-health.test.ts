/**
 * Trunk health against real peers: the service probes two trunks with OPTIONS every 0.25 s, one a
 * SIPp that answers them (and calls), one a UDP port that hears and says nothing. The silent one
 * goes down after two timeouts and the SIPp one stays up; /metrics shows both; /health/ready names
 * the down trunk and stays 200 while the other can carry calls, 503 once neither can (or at once
 * with BRIDGELINE_READY_TRUNKS=all); a call to a number whose longest-prefix route's trunk is down
 * goes through the other; SIPp started again is up after one answer; nothing is sent after stop.
 * What counts as an answer: a server that answers 404 is up, one that answers 503 is down (each
 * trunk probed by its own settings, the service's being off).
 */
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { after, describe, test } from "node:test";
import { Telephony } from "../../../src/telephony/telephony.js";
import { scrapeMetrics, startTestService, type TestService, totalOf } from "../../helpers/service.js";
import { loopbackSip } from "../../helpers/service-settings.js";
import { CallRecord, freePorts, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("sipp");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const INTERVAL_SECONDS = 0.25;

/** A UDP port that takes every datagram and answers none: a trunk server that is gone. */
async function silentServer(): Promise<{ port: number; received: string[]; close: () => Promise<void> }> {
  const port = await freePorts();
  const socket = dgram.createSocket("udp4");
  const received: string[] = [];
  socket.on("message", (message) => received.push(message.toString("latin1").split("\r\n")[0] ?? ""));
  await new Promise<void>((resolve) => socket.bind(port, "127.0.0.1", resolve));
  return { port, received, close: () => new Promise((resolve) => socket.close(() => resolve())) };
}

/** SIPp answering OPTIONS and calls, for a minute's worth of probes. */
function optionsAnswerer(sipPort?: number): Promise<Sipp> {
  return Sipp.start({
    scenario: "uas-options-or-answer.xml",
    calls: 100_000,
    timeoutSeconds: 120,
    traceMessages: true,
    ...(sipPort === undefined ? {} : { sipPort }),
  });
}

async function readiness(
  api: TestService,
): Promise<{ status: number; body: { status: string; checks: Record<string, string> } }> {
  const response = await api.request("GET", "/health/ready", { headers: { accept: "application/json" } });
  return { status: response.status, body: JSON.parse(response.text) };
}

describe("trunk health", { skip }, () => {
  test("a silent trunk goes down, calls go round it, readiness names it, SIPp back is up", async () => {
    const silent = await silentServer();
    let sipp = await optionsAnswerer();
    const sippPort = sipp.sipPort;
    cleanups.push(
      () => silent.close(),
      () => sipp.stop(),
    );
    const silentTrunk = `sip:127.0.0.1:${silent.port}`;
    const sippTrunk = `sip:127.0.0.1:${sippPort}`;
    const started = Date.now();
    const api = await startTestService({
      metricsPort: 0,
      sip: loopbackSip({
        trunk: { uri: sippTrunk },
        routes: [{ prefix: "+1604555", trunk: { uri: silentTrunk } }],
        trunkProbeSeconds: INTERVAL_SECONDS,
      }),
    });
    let closed = false;
    cleanups.push(async () => {
      if (!closed) await api.close();
    });
    const detail = () => `${sipp.report()}\n${api.logs.slice(-20).join("\n")}`;

    // Down after two timeouts of 0.25 s: 0.5 s in; 10 s is a bound a loaded machine keeps.
    const degraded = `degraded: ${silentTrunk} (1 server down)`;
    const first = await until(
      "the silent trunk named in readiness",
      async () => {
        const ready = await readiness(api);
        return ready.body.checks.trunks === degraded ? ready : undefined;
      },
      { detail },
    );
    // Two failures: the first OPTIONS's timeout and the second's, 0.25 s later.
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 500 && elapsed < 10_000, `down after ${elapsed} ms`);
    assert.equal(first.status, 200, "another trunk can carry calls: ready");
    assert.equal(first.body.status, "ready");
    assert.ok(
      silent.received.every((line) => line === `OPTIONS ${silentTrunk} SIP/2.0`),
      silent.received.join("\n"),
    );
    assert.ok(silent.received.length >= 2);
    assert.ok(
      api.logs.some(
        (line) =>
          line.includes("a trunk server is down: tried last") &&
          line.includes(`"server":"UDP 127.0.0.1:${silent.port}"`) &&
          line.includes('"reason":"no answer in 0.25 s"'),
      ),
      api.logs.join("\n"),
    );

    const samples = await scrapeMetrics(api);
    const silentLabels = `trunk="${silentTrunk}",server="UDP 127.0.0.1:${silent.port}"`;
    const sippLabels = `trunk="${sippTrunk}",server="UDP 127.0.0.1:${sippPort}"`;
    assert.equal(samples.get(`bridgeline_trunk_up{${silentLabels}}`), 0);
    assert.equal(samples.get(`bridgeline_trunk_up{${sippLabels}}`), 1);
    assert.ok(totalOf(samples, "bridgeline_trunk_probes_total", `${silentLabels},result="timeout"`) >= 2);
    assert.ok(totalOf(samples, "bridgeline_trunk_probes_total", `${sippLabels},result="ok"`) >= 1);
    const rtt = samples.get(`bridgeline_trunk_options_rtt_seconds{${sippLabels}}`) ?? -1;
    assert.ok(rtt >= 0 && rtt < 1, `RTT ${rtt}`);
    assert.equal(samples.get(`bridgeline_trunk_options_rtt_seconds{${silentLabels}}`), undefined);

    // +1604555… routes to the silent trunk, found down: the call goes through the default one.
    const record = new CallRecord(api.service.telephony.placeCall("+16045550123"), detail);
    await record.reached("answered");
    record.call.hangup();
    await record.reached("ended");
    assert.match(sipp.messages(), /INVITE sip:\+16045550123@127\.0\.0\.1:\d+ SIP\/2\.0/);
    assert.ok(!silent.received.some((line) => line.startsWith("INVITE")));

    // SIPp gone too: no trunk can carry a call, not ready.
    await sipp.stop();
    const down = await until(
      "readiness failing with both trunks down",
      async () => {
        const ready = await readiness(api);
        return ready.status === 503 ? ready : undefined;
      },
      { detail },
    );
    assert.equal(
      down.body.checks.trunks,
      `down: ${sippTrunk} (1 server down); ${silentTrunk} (1 server down)`,
    );
    const whileDown = await scrapeMetrics(api);
    assert.equal(whileDown.get(`bridgeline_trunk_up{${sippLabels}}`), 0);
    assert.equal(
      whileDown.get(`bridgeline_trunk_options_rtt_seconds{${sippLabels}}`),
      undefined,
      "no stale round trip",
    );

    // SIPp back on its port: up at its first answer, ready again with the silent trunk named.
    sipp = await optionsAnswerer(sippPort);
    await until(
      "SIPp's trunk up again",
      async () => ((await readiness(api)).body.checks.trunks === degraded ? true : undefined),
      { detail },
    );
    assert.equal((await readiness(api)).status, 200);
    assert.equal((await scrapeMetrics(api)).get(`bridgeline_trunk_up{${sippLabels}}`), 1);
    assert.ok(
      api.logs.some(
        (line) =>
          line.includes("a trunk server is up") &&
          line.includes(`"server":"UDP 127.0.0.1:${sippPort}"`) &&
          /"answer":"200 answered in \d+ ms"/.test(line),
      ),
    );

    // Stopped: not one more OPTIONS, over four intervals.
    await api.close();
    closed = true;
    const sentBefore = silent.received.length;
    await new Promise((resolve) => setTimeout(resolve, 4 * INTERVAL_SECONDS * 1000));
    assert.equal(silent.received.length, sentBefore, "OPTIONS after stop");
  });

  test("BRIDGELINE_READY_TRUNKS=all: one trunk down is not ready", async () => {
    const silent = await silentServer();
    const sipp = await optionsAnswerer();
    cleanups.push(
      () => silent.close(),
      () => sipp.stop(),
    );
    const api = await startTestService({
      sip: loopbackSip({
        trunk: { uri: `sip:127.0.0.1:${sipp.sipPort}` },
        routes: [{ prefix: "+1604555", trunk: { uri: `sip:127.0.0.1:${silent.port}` } }],
        trunkProbeSeconds: INTERVAL_SECONDS,
        readyTrunks: "all",
      }),
    });
    cleanups.push(() => api.close());
    const ready = await until("not ready", async () => {
      const answer = await readiness(api);
      return answer.status === 503 ? answer : undefined;
    });
    assert.equal(ready.body.checks.trunks, `down: sip:127.0.0.1:${silent.port} (1 server down)`);
  });

  test("a 404 is an answer, a 503 is not; a trunk's own settings probe it with the service's off", async () => {
    const notFound = await Sipp.start({
      scenario: "uas-options-404.xml",
      calls: 100_000,
      timeoutSeconds: 120,
    });
    const unavailable = await Sipp.start({
      scenario: "uas-options-503.xml",
      calls: 100_000,
      timeoutSeconds: 120,
    });
    cleanups.push(
      () => notFound.stop(),
      () => unavailable.stop(),
    );
    const results: string[] = [];
    const telephony = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      rtpPorts: rtpPortRange(),
      // The service's probing off (its default), each trunk's own interval on (a profile's options:).
      trunkProbe: { intervalMs: 0, timeoutMs: 5000, upAfter: 1, downAfter: 2 },
      trunk: { uri: `sip:127.0.0.1:${notFound.sipPort}`, probe: { intervalMs: 250 } },
      routes: [
        {
          prefix: "+1604555",
          trunk: { uri: `sip:127.0.0.1:${unavailable.sipPort}`, probe: { intervalMs: 250 } },
        },
      ],
      probeObserver: {
        probed: (trunk, _server, result) => results.push(`${trunk} ${result}`),
        moved: () => undefined,
      },
    });
    cleanups.push(() => telephony.close());
    const health = await until("both known", async () => {
      const known = telephony.trunkHealth();
      return known.every(
        ({ servers }) => servers.length > 0 && servers.every(({ health }) => health !== "unknown"),
      )
        ? known
        : undefined;
    });
    assert.deepEqual(
      health.map(({ uri, servers }) => `${uri} ${servers.map((server) => server.health).join()}`),
      [`sip:127.0.0.1:${notFound.sipPort} up`, `sip:127.0.0.1:${unavailable.sipPort} down`],
    );
    assert.ok(results.includes(`sip:127.0.0.1:${notFound.sipPort} ok`));
    assert.ok(results.includes(`sip:127.0.0.1:${unavailable.sipPort} unavailable`));
    // The request, as RFC 3261 section 11 has it: the server's URI, Max-Forwards 70, out of dialog.
    const options = notFound.messages();
    assert.match(options, new RegExp(`OPTIONS sip:127\\.0\\.0\\.1:${notFound.sipPort} SIP/2\\.0`));
    assert.match(options, /Max-Forwards: 70/);
    assert.match(options, /CSeq: 1 OPTIONS/);
    assert.match(options, /Accept: application\/sdp/);
    assert.doesNotMatch(options.split("SIP/2.0 404")[0] ?? "", /^To: .*;tag=/m);
  });
});
