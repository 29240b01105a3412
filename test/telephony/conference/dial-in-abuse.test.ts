/**
 * What a stranger's calls to an access number can do, with real SIPp callers on loopback sockets:
 * a scanner's INVITEs that are never ACKed hold PIN-prompt places only until the ACK timeout
 * (64*T1, run on a fake SIP clock so the test takes seconds), one source holds only its share of
 * the places while another source's caller is answered, scanners on several sources at once
 * (OPTIONS, REGISTER, unACKed INVITEs; more places than the prompt has in all) leave dial-in open
 * during their flood and right after it, and a caller who hangs up during the joining prompt is
 * never taken into the room.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { TIMER_H } from "../../../src/telephony/sip/transaction/timers.js";
import { murmur, sippCaller } from "../../helpers/dial-in-caller.js";
import { FakeClock } from "../../helpers/fake-clock.js";
import { createUser, startTestService, type TestService } from "../../helpers/service.js";
import { conferenceSettings, loopbackSip } from "../../helpers/service-settings.js";
import { Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { itemsOf, textOf, type XmlNode } from "../../helpers/xml.js";

const skip = skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
const PER_SOURCE = 3;
/** Fewer places in all than the scanners' sources have shares: a count of places held would fill. */
const PLACES = 10;
const SCANNER = "127.0.0.3";
const SCANNERS = ["127.0.0.10", "127.0.0.11", "127.0.0.12", "127.0.0.13"];
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
        sip: loopbackSip({ accessNumbers: [ACCESS_NUMBER] }),
        conferences: conferenceSettings({ pinPromptPlaces: PLACES, pinPromptPlacesPerSource: PER_SOURCE }),
      },
      { sipClock: clock },
    );
    cleanups.push(() => api.close());
  });

  /** A started PIN-only conference: its owner, path and member PIN. */
  async function startedConference(name: string) {
    const owner = await createUser(api);
    const created = await api.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: `<conference><name>${name}</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
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
    return { owner, path, memberPin };
  }

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

  test("scanners on several sources at once leave dial-in open: a caller gets into the room during their flood and right after it", async () => {
    const { owner, path, memberPin } = await startedConference("Scanned");
    const runtime = api.service.conferences;
    const refusals = () => Object.values(runtime.dialInsRefused).reduce((sum, count) => sum + count, 0);
    const refusedBefore = refusals();
    const promptFullBefore = runtime.dialInsRefused["prompt-full"];
    // Each scanner: 15 rounds a second of OPTIONS, REGISTER and an INVITE never ACKed (45 requests a
    // second, under the 50 a source may send), until stopped below.
    const scanners = await Promise.all(
      SCANNERS.map((address) =>
        Sipp.start({
          scenario: "uac-scanner.xml",
          remote: `127.0.0.1:${api.service.sipPort}`,
          localAddress: address,
          rate: 15,
          calls: 15 * 30,
          timeoutSeconds: 60,
          args: ["-nr", "-s", ACCESS_NUMBER],
        }),
      ),
    );
    for (const scanner of scanners) cleanups.push(() => scanner.stop());
    const scannerReports = () => scanners.map((scanner) => scanner.report()).join("\n");
    await until(
      "the scanners' INVITEs outnumbering their sources' shares and the places in all",
      async () =>
        runtime.atPinPrompt.held + refusals() - refusedBefore > SCANNERS.length * (PER_SOURCE + 1)
          ? true
          : undefined,
      { detail: scannerReports },
    );

    const dialIn = (from: string) =>
      sippCaller({
        sipPort: api.service.sipPort,
        accessNumber: ACCESS_NUMBER,
        from,
        dir,
        segments: [{ audio: murmur(0.2) }, { events: `${memberPin}#` }, { audio: murmur(3) }],
        localAddress: CALLER,
      });
    const inTheRoom = (caller: Sipp, from: string) =>
      caller.unlessFailed(
        until(
          `${from} in the room`,
          async () => {
            const attendees = itemsOf(
              await api.request("GET", `${path}/attendees`, { auth: owner.auth }),
              "attendees",
              "attendee",
            );
            const connected = attendees.some(
              (attendee) =>
                `+1${textOf(attendee, "phone-number-subscriber-number")}` === from &&
                textOf(attendee, "state") === "connected",
            );
            return connected ? true : undefined;
          },
          { detail: () => caller.report() },
        ),
      );
    const during = await dialIn("+16045550152");
    cleanups.push(() => during.stop());
    await inTheRoom(during, "+16045550152");
    assert.ok(
      scanners.every((scanner) => scanner.running),
      "the scanners were still at it when the caller got into the room",
    );
    const scanned = scanners.map((scanner) => scanner.messages());
    await Promise.all(scanners.map((scanner) => scanner.stop()));
    // Dialled as the flood stops, while its unACKed INVITEs still hold their places (the clock stands).
    const after = await dialIn("+16045550153");
    cleanups.push(() => after.stop());
    await inTheRoom(after, "+16045550153");
    await Promise.all([during.expectSuccess(), after.expectSuccess()]);

    for (const [index, messages] of scanned.entries()) {
      const received = messages.split(/-{10,}/).filter((message) => /received/.test(message));
      const answers = (method: string, status: number) =>
        received.filter(
          (message) =>
            new RegExp(`^\\s*SIP/2\\.0 ${status} `, "m").test(message) &&
            new RegExp(`^CSeq: *\\d+ ${method}\\s*$`, "im").test(message),
        );
      const source = SCANNERS[index];
      assert.equal(answers("INVITE", 200).length, PER_SOURCE, `${source}'s INVITEs took its share`);
      const refused = answers("INVITE", 503);
      assert.ok(refused.length > 0, `${source}'s INVITEs past its share were refused`);
      for (const refusal of refused) assert.match(refusal, /^Retry-After: *10\s*$/im);
      assert.ok(answers("OPTIONS", 200).length > 0, `${source}'s OPTIONS were answered`);
      assert.ok(answers("REGISTER", 405).length > 0, `${source}'s REGISTERs were answered`);
    }
    assert.equal(runtime.dialInsRefused["prompt-full"], promptFullBefore, "the prompt was never full");

    clock.advance(TIMER_H);
    await until("the scanners' places are given back", async () =>
      runtime.atPinPrompt.held === 0 ? true : undefined,
    );
  });

  test("a caller who hangs up during the joining prompt is not taken into the room", async () => {
    const { owner, path, memberPin } = await startedConference("Hang up early");
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
