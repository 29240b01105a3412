/**
 * What a stranger's calls to an access number can do, with real SIPp callers on loopback sockets:
 * a scanner's INVITEs that are never ACKed hold PIN-prompt places only until the ACK timeout
 * (64*T1, run on a fake SIP clock so the test takes seconds), one source holds only its share of
 * the places while another source's caller is answered, and a caller who hangs up during the
 * joining prompt is never taken into the room.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { TIMER_H } from "../../../src/telephony/sip/transaction/timers.js";
import { murmur, sippCaller } from "../../helpers/dial-in-caller.js";
import { createUser, startTestService, type TestService } from "../../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { itemsOf, textOf, type XmlNode } from "../../helpers/xml.js";
import { FakeClock } from "../sip/transaction/helpers.js";

const skip = skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
const PER_SOURCE = 3;
const SCANNER = "127.0.0.3";
const CALLER = "127.0.0.2";

const dir = mkdtempSync(join(tmpdir(), "bridgeline-dial-in-abuse-"));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe("a stranger's calls to an access number", { skip, concurrency: false }, () => {
  const clock = new FakeClock();
  let api: TestService;
  before(async () => {
    api = await startTestService(
      {
        sip: {
          ...loadConfig({}).sip,
          bindAddress: "127.0.0.1",
          port: 0,
          rtpPorts: rtpPortRange(),
          accessNumbers: [ACCESS_NUMBER],
        },
        conferences: { ...loadConfig({}).conferences, pinPromptPlacesPerSource: PER_SOURCE },
      },
      { sipClock: clock },
    );
    cleanups.push(() => api.close());
  });

  /** A scanner's burst of INVITEs from `SCANNER`, never ACKed; what each was answered. */
  async function scan(calls: number): Promise<{ taken: number; refused: string[] }> {
    const scanner = await Sipp.start({
      scenario: "uac-no-ack.xml",
      remote: `127.0.0.1:${api.service.sipPort}`,
      localAddress: SCANNER,
      calls,
      rate: 100,
      keys: { caller: "scanner" },
      args: ["-s", ACCESS_NUMBER],
    });
    cleanups.push(() => scanner.stop());
    await scanner.expectSuccess();
    const received = scanner
      .messages()
      .split(/-{10,}/)
      .filter((message) => /^\s*SIP\/2\.0 (200|503)/m.test(message) && /received/.test(message));
    return {
      taken: received.filter((message) => /SIP\/2\.0 200/.test(message)).length,
      refused: received.filter((message) => /SIP\/2\.0 503/.test(message)),
    };
  }

  test("unACKed INVITEs give their PIN-prompt places back at the ACK timeout; one source holds only its share meanwhile", async () => {
    const first = await scan(PER_SOURCE + 2);
    assert.equal(first.taken, PER_SOURCE, "the source's share is taken");
    assert.equal(first.refused.length, 2);
    for (const refusal of first.refused) assert.match(refusal, /^Retry-After: *10\s*$/im);
    assert.equal(api.service.conferences.atPinPrompt.held, PER_SOURCE);

    // Meanwhile a caller from another address is answered and stays on for its call.
    const caller = await sippCaller({
      sipPort: api.service.sipPort,
      accessNumber: ACCESS_NUMBER,
      from: "+16045550150",
      dir,
      segments: [{ audio: murmur(0.3) }],
      localAddress: CALLER,
    });
    cleanups.push(() => caller.stop());
    await caller.expectSuccess();

    // 64*T1 later the 2xx has gone unACKed: each session ends with BYE and gives its place back.
    clock.advance(TIMER_H);
    await until("the scanner's places are given back", async () =>
      api.service.conferences.atPinPrompt.held === 0 ? true : undefined,
    );
    // Their calls are over too: no call (nor its RTP port) is kept for them.
    await until("the scanner's calls are over", async () =>
      api.service.telephony.activeCalls === 0 ? true : undefined,
    );
    const again = await scan(PER_SOURCE);
    assert.equal(again.taken, PER_SOURCE, "the source is taken again");
    assert.deepEqual(again.refused, []);
    clock.advance(TIMER_H);
    await until("the second burst's places are given back", async () =>
      api.service.conferences.atPinPrompt.held === 0 ? true : undefined,
    );
  });

  test("a caller who hangs up during the joining prompt is not taken into the room", async () => {
    const owner = await createUser(api);
    const created = await api.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: `<conference><name>Hang up early</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
        <no-moderator type="boolean">true</no-moderator></conference>`,
    });
    assert.equal(created.status, 201, created.text);
    const path = new URL(String(created.headers.location), "http://localhost").pathname;
    const memberPin = textOf(created.xml.conference as XmlNode, "member-pin") ?? assert.fail("no PIN");
    await api.request("PUT", path, {
      auth: owner.auth,
      body: "<conference><state>pending</state></conference>",
    });
    await until("the conference started", async () => {
      const conference = (await api.request("GET", path, { auth: owner.auth })).xml.conference as XmlNode;
      return textOf(conference, "state") === "started" ? true : undefined;
    });
    // The PIN, then BYE half a second later: inside the 1.8 s joining prompt.
    const caller = await sippCaller({
      sipPort: api.service.sipPort,
      accessNumber: ACCESS_NUMBER,
      from: "+16045550151",
      dir,
      segments: [{ audio: murmur(0.3) }, { events: `${memberPin}#` }],
      localAddress: CALLER,
    });
    cleanups.push(() => caller.stop());
    await caller.expectSuccess();
    assert.ok(
      api.logs.some((line) => line.includes('"msg":"dial-in: caller admitted"')),
      "the PIN was taken",
    );
    // Past the end of the joining prompt, when the old code admitted the caller anyway.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const attendees = itemsOf(
      await api.request("GET", `${path}/attendees`, { auth: owner.auth }),
      "attendees",
      "attendee",
    );
    // The attendee its admission added is taken back: nobody is recorded for a caller who never joined.
    assert.deepEqual(attendees, []);
    assert.equal(api.service.conferences.legs.joined, 0, "nobody in the room's audio");
    assert.equal(api.service.conferences.atPinPrompt.held, 0);
  });
});
