/**
 * /metrics scraped while a real conference runs: one attendee answered by a SIPp carrier that plays
 * audio and hangs up, one whose carrier answers 486. The counters, gauges and histograms must move
 * as the calls connect, fail and end.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { request } from "undici";
import { loadConfig } from "../../../src/config.js";
import {
  createPendingConference,
  createUser,
  startTestService,
  type TestService,
} from "../../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("sipp");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Every sample of the exposition, as `name{labels}` to value. */
async function scrape(api: TestService): Promise<Map<string, number>> {
  const response = await request(`http://127.0.0.1:${api.service.metricsPort}/metrics`);
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
  const samples = new Map<string, number>();
  for (const line of (await response.body.text()).split("\n")) {
    const match = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match !== null) samples.set(match[1] as string, Number(match[2]));
  }
  return samples;
}

/** The sum of a metric's samples whose labels include `labels` (e.g. `status_class="4xx"`). */
function total(samples: Map<string, number>, name: string, labels = ""): number {
  let sum = 0;
  for (const [key, value] of samples) {
    const [metric, rest = ""] = key.split("{");
    if (metric === name && rest.includes(labels)) sum += value;
  }
  return sum;
}

describe("metrics during a real conference", { skip }, () => {
  test("calls placed, answered and failed, setup time, rooms, legs, RTP, tick lateness, API requests", async () => {
    const answering = await Sipp.start({ scenario: "uas-answer-play.xml", pauseMs: 4000 });
    const busy = await Sipp.start({ scenario: "uas-busy.xml" });
    cleanups.push(
      () => answering.stop(),
      () => busy.stop(),
    );
    const api = await startTestService({
      metricsPort: 0,
      sip: {
        ...loadConfig({}).sip,
        bindAddress: "127.0.0.1",
        port: 0,
        rtpPorts: rtpPortRange(),
        routes: [
          { prefix: "+1604555", trunk: `sip:127.0.0.1:${answering.sipPort}` },
          { prefix: "+1778555", trunk: `sip:127.0.0.1:${busy.sipPort}` },
        ],
      },
    });
    cleanups.push(() => api.close());
    const before = await scrape(api);
    assert.equal(total(before, "bridgeline_calls_placed_total"), 0);
    assert.equal(total(before, "bridgeline_conferences", 'state="started"'), 0);

    await createPendingConference(api, await createUser(api), {
      name: "Metered",
      numbers: ["+16045550123", "+17785550123"],
      extra:
        '<direct-dial type="boolean">true</direct-dial><announce-attendees type="boolean">false</announce-attendees>',
    });

    const detail = () => `${answering.report()}\n${busy.report()}\n${api.logs.slice(-15).join("\n")}`;
    // In the room: one call answered and joined, one failed 486, media flowing.
    const during = await until(
      "one call in the room and one failed",
      async () => {
        const samples = await scrape(api);
        return total(samples, "bridgeline_room_legs", 'state="joined"') === 1 &&
          total(samples, "bridgeline_calls_failed_total") === 1 &&
          total(samples, "bridgeline_rtp_packets_received_total") > 20
          ? samples
          : undefined;
      },
      { detail },
    );
    assert.equal(total(during, "bridgeline_calls_placed_total"), 2);
    assert.equal(total(during, "bridgeline_calls_answered_total"), 1);
    assert.equal(total(during, "bridgeline_calls_failed_total", 'status_class="4xx"'), 1);
    assert.equal(total(during, "bridgeline_call_setup_seconds_count"), 1);
    assert.ok(total(during, "bridgeline_call_setup_seconds_sum") > 0);
    assert.equal(total(during, "bridgeline_rooms"), 1);
    assert.equal(total(during, "bridgeline_conferences", 'state="started"'), 1);
    assert.equal(total(during, "bridgeline_live_attendees", 'state="connected"'), 1);
    // The room's thread ticks, and each tick is counted into the lateness histogram.
    const ticks = total(during, "bridgeline_media_tick_lateness_seconds_count");
    assert.ok(ticks > 10, `${ticks} ticks counted`);
    assert.equal(total(during, "bridgeline_media_tick_lateness_seconds_bucket", 'le="+Inf"'), ticks);
    // The API requests above, by route pattern, not by path.
    assert.equal(
      total(
        during,
        "bridgeline_http_requests_total",
        'route="/users/:userId/conferences",method="POST",status="201"',
      ),
      1,
    );
    assert.equal(total(during, "bridgeline_http_requests_total", 'method="POST",status="201"') >= 3, true);

    // The carrier hangs up after its audio: the leg leaves, the counts keep what happened.
    const afterwards = await until(
      "the answered call to end",
      async () => {
        const samples = await scrape(api);
        return total(samples, "bridgeline_room_legs", 'state="joined"') === 0 ? samples : undefined;
      },
      { detail },
    );
    assert.equal(total(afterwards, "bridgeline_calls_placed_total"), 2);
    assert.ok(
      total(afterwards, "bridgeline_rtp_packets_received_total") >=
        total(during, "bridgeline_rtp_packets_received_total"),
      "the RTP count went down when the stream closed",
    );
    assert.ok(total(afterwards, "bridgeline_media_tick_lateness_seconds_count") >= ticks);
  });
});
