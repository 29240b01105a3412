/**
 * A dial-in the service cannot take now is told when to try again, with real SIPp callers against
 * the real service: every RTP port of the range held by another process gives "503 No Free Media
 * Port" with `Retry-After: 60` (about when calls in progress have ended and freed theirs), and a
 * silent PostgreSQL, behind a frozen proxy, gives "503 Service Unavailable" with `Retry-After: 5` once
 * the caller's wrong PINs cannot be read within the database timeout (the API's 503 for it says 5).
 */
import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { after, describe, test } from "node:test";
import { postgresOnly } from "../../helpers/databases.js";
import { databaseBehindProxy } from "../../helpers/freezable-proxy.js";
import { startTestService } from "../../helpers/service.js";
import { loopbackSip } from "../../helpers/service-settings.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";

const skip = skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A caller to the access number refused 503 (test/fixtures/sipp/uac-unavailable.xml): the 503 it got. */
async function refusedCall(sipPort: number, caller: string): Promise<string> {
  const call = await Sipp.start({
    scenario: "uac-unavailable.xml",
    remote: `127.0.0.1:${sipPort}`,
    keys: { caller },
    args: ["-s", ACCESS_NUMBER],
  });
  cleanups.push(() => call.stop());
  await call.expectSuccess();
  return (
    call
      .messages()
      .split(/-{10,}/)
      .find((message) => /received/.test(message) && /^\s*SIP\/2\.0 503 /m.test(message)) ??
    assert.fail(`no 503 received:\n${call.report()}`)
  );
}

/** Binds `port` on every address (0.0.0.0) for UDP; undefined when some other process holds it. */
async function holdPort(port: number): Promise<Socket | undefined> {
  const socket = createSocket("udp4");
  return new Promise((resolve) => {
    socket.once("error", () => {
      socket.close();
      resolve(undefined);
    });
    socket.bind({ address: "0.0.0.0", port, exclusive: true }, () => resolve(socket));
  });
}

describe("a dial-in refused for now", { skip }, () => {
  test("every RTP port taken: 503 No Free Media Port with Retry-After", async () => {
    // Two port pairs, both held by this process: the service can bind none of them.
    const { min } = rtpPortRange();
    const rtpPorts = { min, max: min + 3 };
    const held = await Promise.all([min, min + 1, min + 2, min + 3].map(holdPort));
    cleanups.push(async () => {
      for (const socket of held) socket?.close();
    });
    const api = await startTestService({
      sip: loopbackSip({ rtpPorts, mediaThreads: 1, accessNumbers: [ACCESS_NUMBER] }),
    });
    cleanups.push(() => api.close());

    const refusal = await refusedCall(api.service.sipPort, "+16045550177");
    assert.match(refusal, /^\s*SIP\/2\.0 503 No Free Media Port\s*$/m);
    assert.match(refusal, /^Retry-After: *60\s*$/im);
    assert.ok(api.logs.some((line) => line.includes("incoming call refused: no media port")));
  });

  test(
    "PostgreSQL silent: the wrong PINs cannot be read, 503 Service Unavailable with Retry-After",
    postgresOnly,
    async () => {
      const { url, proxy, close } = await databaseBehindProxy();
      cleanups.push(close);
      const api = await startTestService({
        databaseUrl: url,
        databaseTimeoutSeconds: 1,
        sip: loopbackSip({ accessNumbers: [ACCESS_NUMBER] }),
      });
      // Closed with the proxy forwarding again, so that its pool can say goodbye.
      cleanups.push(async () => {
        proxy.thaw();
        await api.close();
      });

      proxy.freeze();
      const refusal = await refusedCall(api.service.sipPort, "+16045550178");
      assert.match(refusal, /^\s*SIP\/2\.0 503 Service Unavailable\s*$/m);
      assert.match(refusal, /^Retry-After: *5\s*$/im);
      assert.ok(
        api.logs.some((line) => line.includes("dial-in: wrong PINs could not be read; call refused")),
      );
    },
  );
});
