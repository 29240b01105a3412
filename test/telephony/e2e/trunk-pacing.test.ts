/**
 * A trunk's limits seen from the carrier: SIPp plays a carrier and its message trace says what it
 * received, when. With `max-channels: 1` it never has two calls at once; with `calls-per-second: 5`
 * the INVITEs arrive about 200 ms apart. The bounds are generous: they catch calls sent together,
 * not a loaded machine's jitter.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Telephony } from "../../../src/telephony/telephony.js";
import type { Trunk } from "../../../src/telephony/trunk.js";
import { CallRecord, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { stoppedAfterTests } from "../../helpers/stop-after.js";

const skip = skipWithout("sipp");
const stopAfter = stoppedAfterTests();
const sipp = async (options: Parameters<typeof Sipp.start>[0]) => stopAfter(await Sipp.start(options));

async function telephonyWith(trunk: Trunk): Promise<Telephony> {
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk,
    callerId: "+16045550100",
    rtpPorts: rtpPortRange(),
  });
  stopAfter({ stop: () => telephony.close() });
  return telephony;
}

/** A message in SIPp's trace: when it was logged (ms since the epoch), sent or received, its first line and Call-ID. */
interface Traced {
  readonly at: number;
  readonly direction: "sent" | "received";
  readonly firstLine: string;
  readonly callId: string;
}

/**
 * SIPp's -trace_msg log: each message after a line of dashes that ends in the time it was logged,
 * as seconds since the epoch (`----- 2026-11-27 21:50:01.123456 1795816201.123456`), then
 * `UDP message received [N] bytes :` or `UDP message sent (N bytes):`.
 */
function traced(peer: Sipp): Traced[] {
  const messages: Traced[] = [];
  const pattern =
    /^-{10,}\s.*?(\d+\.\d+)\s*\r?\n(?:UDP|TCP) message (sent|received)[^\n]*\n\s*\n([^\r\n]+)[\s\S]*?^Call-ID:\s*(\S+)/gm;
  for (const match of peer.messages().matchAll(pattern))
    messages.push({
      at: Number(match[1]) * 1000,
      direction: match[2] as "sent" | "received",
      firstLine: match[3] as string,
      callId: match[4] as string,
    });
  return messages;
}

describe("a trunk's limits, seen from a SIPp carrier", { skip, concurrency: true }, () => {
  test("max-channels 1, three calls: the carrier never has two at once; each is answered in turn, the next sent once the carrier hung up the last", async () => {
    // The carrier answers each call and hangs it up 300 ms later (BYE).
    const peer = await sipp({ scenario: "uas-answer-bye-reason.xml", calls: 3, pauseMs: 300 });
    const telephony = await telephonyWith({ uri: `sip:127.0.0.1:${peer.sipPort}`, maxChannels: 1 });
    const queued: string[] = [];
    const records = ["+16045550101", "+16045550102", "+16045550103"].map((number) => {
      const call = telephony.placeCall(number);
      call.on("queued", (why) => queued.push(`${number} ${why}`));
      return new CallRecord(call, () => peer.report());
    });
    for (const record of records) await peer.unlessFailed(record.reached("ended"));
    await peer.expectSuccess();
    assert.deepEqual(queued, ["+16045550102 max-channels", "+16045550103 max-channels"]);
    for (const record of records) {
      assert.deepEqual(record.events, ["ringing", "answered", "ended"], record.describe());
      assert.equal(record.end?.by, "remote");
    }
    // A call is the carrier's from the INVITE it received until the BYE it sent.
    const trace = traced(peer);
    const open = new Set<string>();
    const order: string[] = [];
    for (const { direction, firstLine, callId } of trace) {
      if (direction === "received" && firstLine.startsWith("INVITE ")) {
        open.add(callId);
        order.push(`INVITE ${firstLine.split(/[:@]/)[1]}`);
        assert.ok(open.size <= 1, `two calls at once at the carrier:\n${peer.messages()}`);
      }
      if (direction === "sent" && firstLine.startsWith("BYE ")) {
        open.delete(callId);
        order.push("BYE");
      }
    }
    assert.deepEqual(order, [
      "INVITE +16045550101",
      "BYE",
      "INVITE +16045550102",
      "BYE",
      "INVITE +16045550103",
      "BYE",
    ]);
    assert.deepEqual(telephony.trunkPacing(), [
      { trunk: `sip:127.0.0.1:${peer.sipPort}`, queued: 0, channels: 0 },
    ]);
  });

  test("calls-per-second 5, five calls placed together: the INVITEs arrive about 200 ms apart", async () => {
    const peer = await sipp({ scenario: "uas-busy.xml", calls: 5 });
    const telephony = await telephonyWith({ uri: `sip:127.0.0.1:${peer.sipPort}`, callsPerSecond: 5 });
    const records = [1, 2, 3, 4, 5].map(
      (index) => new CallRecord(telephony.placeCall(`+1604555011${index}`), () => peer.report()),
    );
    for (const record of records) await peer.unlessFailed(record.reached("failed"));
    await peer.expectSuccess();
    const invites = traced(peer).filter(
      ({ direction, firstLine }) => direction === "received" && firstLine.startsWith("INVITE "),
    );
    assert.deepEqual(
      invites.map(({ firstLine }) => firstLine.split(/[:@]/)[1]),
      ["+16045550111", "+16045550112", "+16045550113", "+16045550114", "+16045550115"],
      "in the order placed, each once",
    );
    const gaps = invites.slice(1).map((invite, index) => invite.at - (invites[index] as Traced).at);
    // Never two together: the gate's timer fires no sooner than 200 ms after the last call went,
    // and the few milliseconds between that and the INVITE's arrival vary little on loopback.
    for (const gap of gaps)
      assert.ok(gap >= 150 && gap < 2000, `INVITEs ${gaps.map(Math.round).join(", ")} ms apart`);
    const span = (invites.at(-1) as Traced).at - (invites[0] as Traced).at;
    assert.ok(span >= 750 && span < 5000, `five INVITEs over ${Math.round(span)} ms`);
  });
});
