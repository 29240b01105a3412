/**
 * An INVITE flood from one source (SIPp on 127.0.0.2, 500 calls/s): the stack keeps taking calls
 * from another source (127.0.0.1) with their audio, refuses the flooder 503 within its rate and
 * drops the rest, and serves the flooder again once the flood stops. Timing figures are in
 * bench/flood/sip.ts; nothing here depends on speed.
 */

import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import type { IncomingCall } from "../../../src/telephony/call.js";
import { parseMessage } from "../../../src/telephony/sip/message/parser.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import { exchangeAudio, goertzelLevelDb, rtpStream, writeRtpPcap } from "../../helpers/audio.js";
import { optionsRequest } from "../../helpers/sip-options.js";
import { CallRecord, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("sipp");
const FLOODER = "127.0.0.2";
/** The caller the flood must not shut out: its From, in uac-call.xml. */
const CALLER = "+16045550111";
const running: { stop(): Promise<void> }[] = [];
const pcapDir = mkdtempSync(join(tmpdir(), "bridgeline-flood-"));
after(async () => {
  for (const peer of running.reverse()) await peer.stop();
  rmSync(pcapDir, { recursive: true, force: true });
});

/** The status an OPTIONS sent from `address` gets, or undefined when none comes within 1 s. */
async function optionsFrom(address: string, port: number): Promise<number | undefined> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, address, resolve));
  const local = socket.address();
  const request = optionsRequest({ address, port: local.port }, port);
  try {
    const answered = new Promise<number>((resolve) =>
      socket.on("message", (bytes) => {
        const parsed = parseMessage(bytes, { stream: false });
        if (parsed.ok && parsed.message.kind === "response") resolve(parsed.message.status);
      }),
    );
    socket.send(request, port, "127.0.0.1");
    const silence = delay(1000, undefined);
    return await Promise.race([answered, silence]);
  } finally {
    socket.close();
  }
}

test("a flood from one source: another source's call sets up with audio, the flooder is refused, then dropped, then served again", {
  skip,
}, async () => {
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    rtpPorts: rtpPortRange(),
    requestRatePerSource: 20,
  });
  running.push({ stop: () => telephony.close() });
  let callerRecord: CallRecord | undefined;
  telephony.onIncomingCall((call: IncomingCall) => {
    if (call.from === CALLER) callerRecord = new CallRecord(call);
    call.ring();
    void call.accept();
  });
  const port = telephony.sipPort;

  const flood = await Sipp.start({
    scenario: "uac-flood.xml",
    remote: `127.0.0.1:${port}`,
    localAddress: FLOODER,
    rate: 500,
    calls: 1_000_000,
    timeoutSeconds: 600,
    traceMessages: false,
    args: ["-nr", "-s", "+16045550199"],
  });
  running.push(flood);
  // The flood is past its source's rate and burst of refusals once requests are being dropped.
  await until(
    "the flood's requests dropped",
    async () => ((telephony.sipStats.requestRate?.dropped ?? 0) > 0 ? true : undefined),
    { detail: () => `${JSON.stringify(telephony.sipStats)}\n${flood.report()}` },
  );

  const pcap = join(pcapDir, "tone.pcap");
  writeRtpPcap(pcap, rtpStream({ payloadType: 0, toneHz: 440, toneSeconds: 3 }));
  const caller = await Sipp.start({
    scenario: "uac-call.xml",
    remote: `127.0.0.1:${port}`,
    args: ["-s", "+16045550199"],
    pauseMs: 3000,
    pcap,
  });
  running.push(caller);
  const record = await caller.unlessFailed(until("the other caller's call", async () => callerRecord));
  await caller.unlessFailed(record.reached("answered"));
  const { heard } = await exchangeAudio(record.call, 1.5, null);
  await record.reached("ended");
  await caller.expectSuccess();
  const tone = heard.subarray(1600);
  assert.ok(goertzelLevelDb(tone, 440) > -20, `440 Hz at ${goertzelLevelDb(tone, 440).toFixed(1)} dB`);
  // All of that happened while the flood ran.
  assert.equal(flood.running, true, "the flood ended before the other caller's call did");
  const during = { ...(telephony.sipStats.requestRate ?? assert.fail("no request rate")) };
  assert.ok(during.refused > 0, `refused ${during.refused}`);
  assert.ok(during.dropped > during.refused, `dropped ${during.dropped}, refused ${during.refused}`);

  await flood.stop();
  // Served again: an OPTIONS from the flooder's address is answered 200 (not 503, not silence).
  await until("an OPTIONS from the flooder's address answered 200", async () =>
    (await optionsFrom(FLOODER, port)) === 200 ? true : undefined,
  );
});
