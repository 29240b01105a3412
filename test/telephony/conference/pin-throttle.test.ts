/**
 * Wrong-PIN throttling across calls, with real SIPp callers: a caller who types wrong PINs over two
 * calls reaches the limit (2 here), and its next calls are refused 403 before they are answered,
 * however its number is written, while another caller is still taken.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { murmur, sippCaller } from "../../helpers/dial-in-caller.js";
import { startTestService } from "../../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";

const skip = skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
const dir = mkdtempSync(join(tmpdir(), "bridgeline-pin-throttle-"));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe("wrong PINs across calls", { skip }, () => {
  test("a caller that reached the limit is refused 403 on its next call; another caller is still answered", async () => {
    const api = await startTestService({
      sip: {
        ...loadConfig({}).sip,
        bindAddress: "127.0.0.1",
        port: 0,
        rtpPorts: rtpPortRange(),
        accessNumbers: [ACCESS_NUMBER],
      },
      conferences: { ...loadConfig({}).conferences, wrongPinLimit: 2 },
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
});
