/**
 * /metrics shows what the SIP bounds did: requests past their source's rate refused and dropped,
 * connections closed and TLS handshakes failed.
 * Requests from a real UDP socket to the running service.
 */

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createSocket } from "node:dgram";
import { connect } from "node:net";
import { after, before, test } from "node:test";
import { scrapeMetrics, startTestService, type TestService, totalOf } from "../../helpers/service.js";
import { loopbackSip } from "../../helpers/service-settings.js";
import { optionsRequest } from "../../helpers/sip-options.js";
import { until } from "../../helpers/until.js";

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** One service for both tests: one request a second per source, and only 127.0.0.1 trusted. */
let api: TestService;
before(async () => {
  api = await startTestService({
    metricsPort: 0,
    sip: loopbackSip({ requestRatePerSource: 1, trusted: ["127.0.0.1"] }),
  });
  cleanups.push(() => api.close());
});

test("requests past a source's rate are counted as refused and dropped", async () => {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  cleanups.push(() => {
    socket.close();
  });
  const port = api.service.sipPort;
  const before = await scrapeMetrics(api);
  assert.equal(totalOf(before, "bridgeline_sip_requests_limited_total"), 0);
  // Twelve at once from one address: a burst of two served, two refused, and most of the rest dropped.
  for (let i = 0; i < 12; i++) {
    const callId = randomBytes(6).toString("hex");
    socket.send(
      optionsRequest({ address: "127.0.0.1", port: socket.address().port }, port, callId),
      port,
      "127.0.0.1",
    );
  }
  const samples = await until("the requests limited to show", async () => {
    const scraped = await scrapeMetrics(api);
    return totalOf(scraped, "bridgeline_sip_requests_limited_total", 'outcome="dropped"') > 0
      ? scraped
      : undefined;
  });
  assert.ok(totalOf(samples, "bridgeline_sip_requests_limited_total", 'outcome="refused"') >= 1);
  assert.equal(totalOf(samples, "bridgeline_sip_connections_refused_total"), 0);
});

test("a stranger's connection closed as accepted and a failed TLS handshake are counted; the handshake logged at warning with its source", async () => {
  const stranger = connect({ host: "127.0.0.1", port: api.service.sipPort, localAddress: "127.0.0.9" });
  stranger.on("error", () => {});
  await new Promise((resolve) => stranger.once("close", resolve));
  // Not TLS at all: the handshake fails at once.
  const tlsPort = api.service.telephony.sipTlsPort ?? assert.fail("no TLS listener");
  const garbled = connect({ host: "127.0.0.1", port: tlsPort, localAddress: "127.0.0.1" });
  garbled.on("error", () => {});
  garbled.write("OPTIONS sip:x SIP/2.0\r\n\r\n");
  await new Promise((resolve) => garbled.once("close", resolve));
  const samples = await until("the TLS failure to show", async () => {
    const scraped = await scrapeMetrics(api);
    return totalOf(scraped, "bridgeline_sip_tls_failures_total") > 0 ? scraped : undefined;
  });
  assert.equal(totalOf(samples, "bridgeline_sip_connections_closed_total", 'reason="untrusted"'), 1);
  const warning = api.logs
    .map((line) => JSON.parse(line) as { level: number; msg: string; source?: string })
    .find((line) => line.msg.startsWith("SIP over TLS: TLS handshake failed"));
  assert.equal(warning?.level, 40, "logged at warning");
  assert.match(warning?.source ?? "", /^127\.0\.0\.1:\d+$/);
});
