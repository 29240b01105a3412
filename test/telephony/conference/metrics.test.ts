/**
 * /metrics scraped while a real conference runs: one attendee answered by a SIPp carrier that plays
 * audio and hangs up, one whose carrier answers 486. The counters, gauges and histograms must move
 * as the calls connect, fail and end, and packets sent to a call that did not negotiate them are
 * counted as dropped.
 */
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { after, describe, test } from "node:test";
import {
  createPendingConference,
  createUser,
  scrapeMetrics,
  startTestService,
  totalOf,
} from "../../helpers/service.js";
import { loopbackSip } from "../../helpers/service-settings.js";
import { Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { itemsOf, textOf, type XmlNode } from "../../helpers/xml.js";

const skip = skipWithout("sipp");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

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
      sip: loopbackSip({
        routes: [
          { prefix: "+1604555", trunk: `sip:127.0.0.1:${answering.sipPort}` },
          { prefix: "+1778555", trunk: `sip:127.0.0.1:${busy.sipPort}` },
        ],
      }),
    });
    cleanups.push(() => api.close());
    const before = await scrapeMetrics(api);
    assert.equal(totalOf(before, "bridgeline_calls_placed_total"), 0);
    assert.equal(totalOf(before, "bridgeline_conferences", 'state="started"'), 0);

    const owner = await createUser(api);
    const conference = await createPendingConference(api, owner, {
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
        const samples = await scrapeMetrics(api);
        return totalOf(samples, "bridgeline_room_legs", 'state="joined"') === 1 &&
          totalOf(samples, "bridgeline_calls_failed_total") === 1 &&
          totalOf(samples, "bridgeline_rtp_packets_received_total") > 20
          ? samples
          : undefined;
      },
      { detail },
    );
    assert.equal(totalOf(during, "bridgeline_calls_placed_total"), 2);
    assert.equal(totalOf(during, "bridgeline_calls_answered_total"), 1);
    assert.equal(totalOf(during, "bridgeline_calls_failed_total", 'status_class="4xx"'), 1);
    assert.equal(totalOf(during, "bridgeline_call_setup_seconds_count"), 1);
    assert.ok(totalOf(during, "bridgeline_call_setup_seconds_sum") > 0);
    assert.equal(totalOf(during, "bridgeline_rooms"), 1);
    assert.equal(totalOf(during, "bridgeline_conferences", 'state="started"'), 1);
    assert.equal(totalOf(during, "bridgeline_live_attendees", 'state="connected"'), 1);
    // Each trunk's calls through it and waiting (these trunks have no limits: none waits).
    assert.equal(during.get(`bridgeline_trunk_channels{trunk="sip:127.0.0.1:${answering.sipPort}"}`), 1);
    assert.equal(during.get(`bridgeline_trunk_channels{trunk="sip:127.0.0.1:${busy.sipPort}"}`), 0);
    assert.equal(during.get(`bridgeline_trunk_queued_calls{trunk="sip:127.0.0.1:${busy.sipPort}"}`), 0);
    assert.equal(totalOf(during, "bridgeline_trunk_queued_calls"), 0);
    // The room's thread ticks, and each tick is counted into the lateness histogram.
    const ticks = totalOf(during, "bridgeline_media_tick_lateness_seconds_count");
    assert.ok(ticks > 10, `${ticks} ticks counted`);
    assert.equal(totalOf(during, "bridgeline_media_tick_lateness_seconds_bucket", 'le="+Inf"'), ticks);
    // Packets of a payload type the call did not negotiate, sent to its RTP port: dropped and counted.
    const rtpPort = Number(/m=audio (\d+) /.exec(answering.messages())?.[1]);
    const stray = dgram.createSocket("udp4");
    cleanups.push(() => new Promise<void>((resolve) => stray.close(() => resolve())));
    const strayPacket = Buffer.alloc(12 + 160);
    strayPacket.set([0x80, 18, 0, 1, 0, 0, 0, 0, 0, 0, 0x5e, 0x11]);
    for (let i = 0; i < 5; i++)
      await new Promise<void>((resolve) => stray.send(strayPacket, rtpPort, "127.0.0.1", () => resolve()));
    await until(
      "the stray packets counted",
      async () =>
        totalOf(
          await scrapeMetrics(api),
          "bridgeline_rtp_packets_dropped_total",
          'reason="unknown_payload_type"',
        ) >= 5
          ? true
          : undefined,
      { detail },
    );
    // The API requests above, by route pattern, not by path.
    assert.equal(
      totalOf(
        during,
        "bridgeline_http_requests_total",
        'route="/users/:userId/conferences",method="POST",status="201"',
      ),
      1,
    );
    assert.equal(totalOf(during, "bridgeline_http_requests_total", 'method="POST",status="201"') >= 3, true);

    // The carrier hangs up after its audio: the leg leaves, the counts keep what happened.
    const afterwards = await until(
      "the answered call to end",
      async () => {
        const samples = await scrapeMetrics(api);
        return totalOf(samples, "bridgeline_room_legs", 'state="joined"') === 0 ? samples : undefined;
      },
      { detail },
    );
    assert.equal(totalOf(afterwards, "bridgeline_calls_placed_total"), 2);
    assert.equal(totalOf(afterwards, "bridgeline_trunk_channels"), 0, "the ended call's channel given back");
    assert.ok(
      totalOf(afterwards, "bridgeline_rtp_packets_received_total") >=
        totalOf(during, "bridgeline_rtp_packets_received_total"),
      "the RTP count went down when the stream closed",
    );
    assert.ok(totalOf(afterwards, "bridgeline_media_tick_lateness_seconds_count") >= ticks);

    // Both calls have their records: why each ended, the carrier's cause, how the answered one sounded.
    const records = await until(
      "both calls recorded",
      async () => {
        const response = await api.request("GET", `${conference}/calls`, { auth: owner.auth });
        const calls = itemsOf(response, "calls", "call");
        return calls.length === 2 ? calls : undefined;
      },
      { detail },
    );
    const byStatus = new Map(records.map((call) => [textOf(call, "sip-status"), call]));
    const busyCall = byStatus.get("486");
    const answered = byStatus.get("200");
    assert.ok(busyCall && answered, JSON.stringify(records));
    assert.equal(textOf(busyCall, "sip-reason"), "Busy Here");
    assert.equal(textOf(busyCall, "answered-at"), null);
    assert.equal(textOf(busyCall, "route"), `sip:127.0.0.1:${busy.sipPort}`);
    assert.equal(textOf(busyCall.cause as XmlNode, "code"), "17", "the carrier's Q.850 cause");
    assert.equal(textOf(answered, "hung-up-by"), "attendee");
    assert.equal(textOf(answered, "number"), "+16045550123");
    assert.equal(textOf(answered.cause as XmlNode, "code"), "16");
    assert.equal(textOf(answered.cause as XmlNode, "text"), "Normal call clearing");
    assert.match(String(textOf(answered, "codec")), /^(PCMU|PCMA)$/);
    assert.ok(Number(textOf(answered, "duration")) >= 3, "answered, then the carrier's 4 s of audio");
    const quality = answered.quality as XmlNode;
    assert.ok(Number(textOf(quality, "packets-received")) > 100, "the carrier's audio counted");
    assert.ok(Number(textOf(quality, "packets-sent")) > 100);
    assert.equal(textOf(quality, "loss-share"), "0", "nothing lost on loopback");
    const mos = Number(textOf(quality, "mos"));
    assert.ok(mos > 4 && mos <= 4.5, `MOS ${mos}`);
    assert.equal((busyCall.quality as XmlNode)["@_nil"], "true", "no media, no quality");
  });
});
