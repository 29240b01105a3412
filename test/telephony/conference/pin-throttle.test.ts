/**
 * Wrong-PIN throttling across calls, with real SIPp callers: a caller who types wrong PINs over two
 * calls reaches the limit (2 here), and its next calls are refused 403 before they are answered,
 * however its number is written, while another caller is still taken. And the service-wide rate
 * (BRIDGELINE_WRONG_PINS_PER_MINUTE, 3 here): once guessers rotating their caller IDs have typed that
 * many, every new caller, whatever its number and source, is refused 503 with Retry-After, counted in
 * the metrics and logged with its source address and Call-ID.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { murmur, sippCaller } from "../../helpers/dial-in-caller.js";
import { scrapeMetrics, startTestService, type TestService, totalOf } from "../../helpers/service.js";
import { conferenceSettings, loopbackSip } from "../../helpers/service-settings.js";
import { Sipp, skipWithout } from "../../helpers/sipp.js";

const skip = skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
const SERVICE_WRONG_PINS_PER_MINUTE = 3;
/** The refusals for the service-wide rate, as scraped from /metrics. */
const refusedServiceWide = async (api: TestService) =>
  totalOf(await scrapeMetrics(api), "bridgeline_dial_ins_refused_total", 'reason="service-wrong-pins"');
const dir = mkdtempSync(join(tmpdir(), "bridgeline-pin-throttle-"));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe("wrong PINs across calls", { skip }, () => {
  test("a caller that reached the limit is refused 403 on its next call; another caller is still answered", async () => {
    const api = await startTestService({
      sip: loopbackSip({ accessNumbers: [ACCESS_NUMBER] }),
      conferences: conferenceSettings({ wrongPinLimit: 2 }),
    });
    cleanups.push(() => api.close());
    const guesser = "+16045550177";
    // Two calls, one wrong PIN each (the caller hangs up after it).
    for (const guess of ["000001#", "000002#"]) {
      const call = await sippCaller({
        sipPort: api.service.sipPort,
        accessNumber: ACCESS_NUMBER,
        from: guesser,
        dir,
        segments: [{ audio: murmur(0.5) }, { events: guess }, { audio: murmur(1) }],
      });
      cleanups.push(() => call.stop());
      await call.expectSuccess();
    }
    const wrong = api.logs.filter((line) => line.includes('"msg":"dial-in: wrong PIN"'));
    assert.equal(wrong.length, 2, "both guesses were heard as wrong PINs");

    const guess = JSON.parse(wrong[0] as string) as { source?: string; callId?: string };
    assert.equal(guess.source, "127.0.0.1", "a wrong PIN is logged with its source address");
    assert.ok(guess.callId, "and its Call-ID");

    // The same caller however its number is written: it is one caller.
    for (const spelling of [guesser, "6045550177", "16045550177"]) {
      const refused = await Sipp.start({
        scenario: "uac-refused.xml",
        remote: `127.0.0.1:${api.service.sipPort}`,
        keys: { caller: spelling },
        args: ["-s", ACCESS_NUMBER],
      });
      cleanups.push(() => refused.stop());
      await refused.expectSuccess();
    }
    assert.equal(
      api.logs.filter((line) => line.includes("dial-in: call refused, too many wrong PINs from this caller"))
        .length,
      3,
    );

    const other = await sippCaller({
      sipPort: api.service.sipPort,
      accessNumber: ACCESS_NUMBER,
      from: "+16045550178",
      dir,
      segments: [{ audio: murmur(1) }],
    });
    cleanups.push(() => other.stop());
    await other.expectSuccess();
  });

  test("guessers rotating caller IDs past the service-wide rate: every new caller is refused 503 with Retry-After, counted and logged", async () => {
    const api = await startTestService({
      metricsPort: 0,
      sip: loopbackSip({ accessNumbers: [ACCESS_NUMBER] }),
      conferences: conferenceSettings({ wrongPinsPerMinute: SERVICE_WRONG_PINS_PER_MINUTE }),
    });
    cleanups.push(() => api.close());
    // One wrong PIN from each of three numbers, each written its own way: no caller is near its own
    // limit (10), the service reaches its rate.
    const guessers = await Promise.all(
      ["+16045550181", "6045550182", "16045550183"].map((from, index) =>
        sippCaller({
          sipPort: api.service.sipPort,
          accessNumber: ACCESS_NUMBER,
          from,
          dir,
          segments: [{ audio: murmur(0.5) }, { events: `00000${index}#` }, { audio: murmur(1) }],
        }),
      ),
    );
    for (const guesser of guessers) cleanups.push(() => guesser.stop());
    await Promise.all(guessers.map((guesser) => guesser.expectSuccess()));
    assert.equal(api.service.conferences.wrongPins, SERVICE_WRONG_PINS_PER_MINUTE);
    const refusedBefore = await refusedServiceWide(api);

    // More numbers, spelled every way, from two sources: each refused before it is answered.
    const callers = [
      { from: "+16045550184", source: "127.0.0.1" },
      { from: "6045550185", source: "127.0.0.1" },
      { from: "16045550186", source: "127.0.0.7" },
      { from: "+16045550187", source: "127.0.0.7" },
    ];
    const refused = await Promise.all(
      callers.map(({ from, source }) =>
        Sipp.start({
          scenario: "uac-unavailable.xml",
          remote: `127.0.0.1:${api.service.sipPort}`,
          localAddress: source,
          keys: { caller: from },
          args: ["-s", ACCESS_NUMBER],
        }),
      ),
    );
    for (const caller of refused) cleanups.push(() => caller.stop());
    await Promise.all(refused.map((caller) => caller.expectSuccess()));

    const logged = api.logs
      .filter((line) => line.includes('"msg":"dial-in: call refused, too many wrong PINs to the service"'))
      .map((line) => JSON.parse(line) as { source?: string; callId?: string; retryAfterSeconds?: number });
    assert.equal(logged.length, callers.length, "each refusal is logged");
    for (const [index, caller] of refused.entries()) {
      const messages = caller.messages().split(/-{10,}/);
      const invite =
        messages.find((message) => /^\s*INVITE /m.test(message)) ?? assert.fail("no INVITE sent");
      const callId = /^Call-ID: *(\S+)/im.exec(invite)?.[1] ?? assert.fail("no Call-ID");
      const answer =
        messages.find((message) => /received/.test(message) && /^\s*SIP\/2\.0 503 /m.test(message)) ??
        assert.fail("no 503 received");
      const retryAfter = Number(/^Retry-After: *(\d+)\s*$/im.exec(answer)?.[1]);
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter} within the minute`);
      const line = logged.find((entry) => entry.callId === callId);
      assert.ok(line, `the refusal of ${callId} is logged with its Call-ID`);
      assert.equal(line.source, callers[index]?.source, "and its source address");
      assert.equal(line.retryAfterSeconds, retryAfter, "and the Retry-After it was sent");
    }
    assert.equal((await refusedServiceWide(api)) - refusedBefore, callers.length, "each refusal is counted");
    assert.equal(api.service.conferences.dialInsRefused["service-wrong-pins"], callers.length);
  });
});
