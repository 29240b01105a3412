/**
 * A trunk profile file as an operator writes one: the service started with
 * BRIDGELINE_SIP_TRUNKS_FILE dials a conference's attendees through two SIPp carriers, each number
 * written the way its carrier's profile says.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { createPendingConference, createUser, startTestService } from "../../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("sipp");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe("BRIDGELINE_SIP_TRUNKS_FILE in a running service", { skip }, () => {
  test("a conference's attendees are called through the default trunk and a route, each its carrier's way", async () => {
    const carrierA = await Sipp.start({ scenario: "uas-answer.xml" });
    const carrierB = await Sipp.start({ scenario: "uas-answer.xml" });
    cleanups.push(
      () => carrierA.stop(),
      () => carrierB.stop(),
    );
    const dir = mkdtempSync(path.join(tmpdir(), "trunks-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, "trunks.yaml");
    writeFileSync(
      file,
      `trunks:
  carrier-a:
    uri: sip:127.0.0.1:${carrierA.sipPort}
    number-format: E164
    tech-prefix: "77"
    headers:
      X-Account-Code: "A-1"
  carrier-b:
    uri: sip:127.0.0.1:${carrierB.sipPort}
    number-format: national
    caller-id: 778 555 0100
    caller-name: Bridgeline B
default: carrier-a
routes:
  "+1778": carrier-b
`,
    );
    const sip = loadConfig({ BRIDGELINE_SIP_TRUNKS_FILE: file, BRIDGELINE_CALLER_ID: "+16045550000" }).sip;
    const api = await startTestService({
      sip: { ...sip, bindAddress: "127.0.0.1", port: 0, rtpPorts: rtpPortRange() },
    });
    cleanups.push(() => api.close());

    await createPendingConference(api, await createUser(api), {
      name: "Carriers",
      numbers: ["604 555 0123", "(778) 555-0123"],
      extra: '<direct-dial type="boolean">true</direct-dial>',
    });

    const invited = (peer: Sipp) => async () =>
      /^INVITE /m.test(peer.messages()) ? peer.messages() : undefined;
    const detail = () => `${carrierA.report()}\n${carrierB.report()}\n${api.logs.slice(-20).join("\n")}`;
    const [traceA, traceB] = await Promise.all([
      until("carrier A's INVITE", invited(carrierA), { detail }),
      until("carrier B's INVITE", invited(carrierB), { detail }),
    ]);
    assert.match(traceA, /^INVITE sip:7716045550123@127\.0\.0\.1:\d+ SIP\/2\.0\r?$/m);
    assert.match(traceA, /^From: <sip:16045550000@127\.0\.0\.1>;tag=/m);
    assert.match(traceA, /^X-Account-Code: A-1\r?$/m);
    assert.match(traceB, /^INVITE sip:7785550123@127\.0\.0\.1:\d+ SIP\/2\.0\r?$/m);
    assert.match(traceB, /^From: "Bridgeline B" <sip:7785550100@127\.0\.0\.1>;tag=/m);
    assert.doesNotMatch(traceB, /X-Account-Code/);
  });
});
