/**
 * The limit of calls in progress per user (toll fraud) with real calls: a SIPp carrier answers the
 * owner's first conference's call and hangs up a few seconds later. While that call is up, the
 * owner's second conference does not place its call (the attendee fails "403 Not Called") and a call
 * again is refused 422; once the carrier has hung up, the call again goes out and is answered.
 * The call not placed is counted in /metrics.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import {
  createPendingConference,
  createUser,
  scrapeMetrics,
  startTestService,
  totalOf,
} from "../../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { textOf, type XmlNode } from "../../helpers/xml.js";

const skip = skipWithout("sipp");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe("calls in progress per user, with a real carrier", { skip }, () => {
  test("a call past the limit is not placed while another is up, and goes out once it has ended", async () => {
    const carrier = await Sipp.start({
      scenario: "uas-answer-play.xml",
      pauseMs: 5000,
      calls: 2,
      timeoutSeconds: 60,
    });
    cleanups.push(() => carrier.stop());
    const defaults = loadConfig({});
    const api = await startTestService({
      sip: {
        ...defaults.sip,
        bindAddress: "127.0.0.1",
        port: 0,
        rtpPorts: rtpPortRange(),
        trunk: `sip:127.0.0.1:${carrier.sipPort}`,
        // Callers could dial in: a conference whose only call was refused stays open.
        accessNumbers: ["+16045550199"],
      },
      conferences: { ...defaults.conferences, maxCallsInProgressPerUser: 1 },
      metricsPort: 0,
    });
    cleanups.push(() => api.close());
    const owner = await createUser(api);
    const detail = () => `${carrier.report()}\n${api.logs.slice(-20).join("\n")}`;
    const attendeeOf = async (conference: string) => {
      const listed = await api.request("GET", `${conference}/attendees?dial_in=false`, { auth: owner.auth });
      const attendees = listed.xml.attendees as XmlNode;
      const attendee = (
        Array.isArray(attendees.attendee) ? attendees.attendee[0] : attendees.attendee
      ) as XmlNode;
      const id = textOf(attendee, "id");
      const path = `${conference}/attendees/${id}`;
      return {
        path,
        state: async () => {
          const shown = await api.request("GET", path, { auth: owner.auth });
          return shown.xml.attendee as XmlNode;
        },
      };
    };
    const direct = '<direct-dial type="boolean">true</direct-dial>';

    const first = await createPendingConference(api, owner, { numbers: ["+16045550123"], extra: direct });
    const firstCallee = await attendeeOf(first);
    await until(
      "the first call answered",
      async () => (textOf(await firstCallee.state(), "state") === "connected" ? true : undefined),
      { detail },
    );

    const second = await createPendingConference(api, owner, { numbers: ["+16045550124"], extra: direct });
    const secondCallee = await attendeeOf(second);
    const refused = await until(
      "the second conference's call refused",
      async () => {
        const attendee = await secondCallee.state();
        return textOf(attendee, "state") === "failed" ? attendee : undefined;
      },
      { detail },
    );
    assert.equal(textOf(refused, "state"), "failed");
    assert.ok(
      api.logs.some(
        (line) =>
          line.includes('"status":403') &&
          line.includes("Not Called: the account has 1 calls in progress") &&
          line.includes("attendee call failed"),
      ),
      detail(),
    );
    const metrics = await scrapeMetrics(api);
    assert.equal(totalOf(metrics, "bridgeline_calls_refused_total", 'reason="user-limit"'), 1);
    assert.equal(totalOf(metrics, "bridgeline_calls_refused_total", 'reason="denied-number"'), 0);
    const tooSoon = await api.request("POST", `${secondCallee.path}/call`, { auth: owner.auth, body: "" });
    assert.equal(tooSoon.status, 422, tooSoon.text);
    assert.match(tooSoon.text, /the account has 1 calls in progress/);
    assert.equal(
      carrier.messages().match(/^INVITE sip:/gm)?.length,
      1,
      "the carrier got only the first call",
    );

    // The carrier hangs up the first call: its place is free.
    await until(
      "the first call ended",
      async () => (textOf(await firstCallee.state(), "state") === "disconnected" ? true : undefined),
      { detail },
    );
    const again = await api.request("POST", `${secondCallee.path}/call`, { auth: owner.auth, body: "" });
    assert.equal(again.status, 200, again.text);
    await until(
      "the second call answered",
      async () => (textOf(await secondCallee.state(), "state") === "connected" ? true : undefined),
      { detail },
    );
  });
});
