/**
 * Trunk profiles on the wire: calls placed to SIPp playing a carrier, each profile setting read back
 * from the INVITE SIPp received (its message trace), the keys of a trunk that takes them in the
 * audio sent as tones, and a G.722 carrier's answer honoured (what we send captured by tshark).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  G722_FRAME_BYTES,
  G722_FRAME_SAMPLES,
  G722Decoder,
  G722Encoder,
} from "../../../src/telephony/media/codec/g722.js";
import {
  parseRtpPacket,
  type RtpPacket,
  rtpPacketLength,
  writeRtpPacket,
} from "../../../src/telephony/media/rtp/rtp-packet.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import type { Trunk } from "../../../src/telephony/trunk.js";
import {
  exchangeAudio,
  goertzelLevelDb,
  type PcapPacket,
  ToneGenerator,
  writeRtpPcap,
} from "../../helpers/audio.js";
import { CallRecord, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { stoppedAfterTests } from "../../helpers/stop-after.js";
import { until } from "../../helpers/until.js";
import { WireCapture } from "../../helpers/wire.js";

const skip = skipWithout("sipp");
// Registered first, so that the peers (playing its files) are stopped before it goes.
const stopAfter = stoppedAfterTests();
const pcapDir = mkdtempSync(join(tmpdir(), "bridgeline-g722-"));
after(() => rmSync(pcapDir, { recursive: true, force: true }));
const sipp = async (options: Parameters<typeof Sipp.start>[0]) => stopAfter(await Sipp.start(options));

async function telephonyWith(trunk: Trunk, callerId = "+16045550100"): Promise<Telephony> {
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk,
    callerId,
    rtpPorts: rtpPortRange(),
  });
  stopAfter({ stop: () => telephony.close() });
  return telephony;
}

/** Places a call, lets the trunk answer, hangs up, and returns the INVITE the trunk received. */
async function placedInvite(telephony: Telephony, peer: Sipp, number = "(604) 555-0123"): Promise<string> {
  const record = new CallRecord(telephony.placeCall(number), () => peer.report());
  await peer.unlessFailed(record.reached("answered"));
  record.call.hangup();
  await record.reached("ended");
  await peer.expectSuccess();
  return inviteReceived(peer);
}

/** The first INVITE in SIPp's message trace, head and body. */
function inviteReceived(peer: Sipp): string {
  // SIPp's trace puts a line of dashes before each message it logs.
  const invite = /^INVITE [\s\S]*?(?=^-{10,}|(?![\s\S]))/m.exec(peer.messages())?.[0];
  assert.ok(invite !== undefined, `no INVITE in SIPp's trace:\n${peer.messages()}`);
  return invite;
}

function header(message: string, name: string): string | undefined {
  return new RegExp(`^${name}: *(.*?)\\r?$`, "im").exec(message)?.[1];
}

describe("trunk profiles, read back from the INVITE a SIPp carrier received", {
  skip,
  concurrency: true,
}, () => {
  test("E.164 without +, a tech prefix, caller name, P-Asserted-Identity, an extra header, codec order", async () => {
    const peer = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await telephonyWith({
      uri: `sip:127.0.0.1:${peer.sipPort}`,
      numberFormat: "E164",
      techPrefix: "0011#",
      callerName: "Example Calls",
      assertedIdentity: true,
      headers: [["X-Account-Code", "00042"]],
      codecs: ["PCMA", "PCMU"],
    });
    const invite = await placedInvite(telephony, peer);
    // RFC 3261 section 25.1: "#" is not a user character, so the prefix goes out escaped.
    assert.match(invite, /^INVITE sip:0011%2316045550123@127\.0\.0\.1:\d+ SIP\/2\.0\r?$/m);
    assert.match(header(invite, "To") ?? "", /^<sip:0011%2316045550123@127\.0\.0\.1:\d+>$/);
    // The service's caller ID (+1 604 555 0100) written the trunk's way, with the name.
    assert.match(header(invite, "From") ?? "", /^"Example Calls" <sip:16045550100@127\.0\.0\.1>;tag=/);
    assert.equal(header(invite, "P-Asserted-Identity"), '"Example Calls" <sip:16045550100@127.0.0.1>');
    assert.equal(header(invite, "X-Account-Code"), "00042");
    assert.equal(header(invite, "Privacy"), undefined);
    assert.match(invite, /^m=audio \d+ RTP\/AVP 8 0 101\r?$/m);
  });

  test("a carrier's own ways: From domain, user=phone, P-Asserted-Identity as a tel: URI, no session timer, 100rel required", async () => {
    const peer = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await telephonyWith({
      uri: `sip:127.0.0.1:${peer.sipPort}`,
      fromDomain: "calls.example.com",
      userPhone: true,
      assertedIdentity: true,
      assertedIdentityForm: "tel",
      sessionTimer: "off",
      reliableProvisional: "required",
    });
    const invite = await placedInvite(telephony, peer);
    assert.match(invite, /^INVITE sip:\+16045550123@127\.0\.0\.1:\d+;user=phone SIP\/2\.0\r?$/m);
    assert.match(header(invite, "To") ?? "", /^<sip:\+16045550123@127\.0\.0\.1:\d+;user=phone>$/);
    assert.match(header(invite, "From") ?? "", /^<sip:\+16045550100@calls\.example\.com;user=phone>;tag=/);
    assert.equal(header(invite, "P-Asserted-Identity"), "<tel:+16045550100>");
    assert.equal(header(invite, "Supported"), "100rel");
    assert.equal(header(invite, "Require"), "100rel");
    assert.equal(header(invite, "Session-Expires"), undefined);
    assert.equal(header(invite, "Min-SE"), undefined);
  });

  test("a session timer of the trunk's own, 100rel not offered, P-Asserted-Identity as +E.164 with user=phone", async () => {
    const peer = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await telephonyWith({
      uri: `sip:127.0.0.1:${peer.sipPort}`,
      numberFormat: "national",
      userPhone: true,
      assertedIdentity: true,
      assertedIdentityForm: "e164",
      sessionTimer: 600,
      reliableProvisional: "off",
    });
    const invite = await placedInvite(telephony, peer);
    assert.match(
      header(invite, "From") ?? "",
      /^<sip:6045550100@127\.0\.0\.1>;tag=/,
      "From keeps the trunk's format, a national number: no user=phone",
    );
    // Nor on the Request-URI: a local number would need a phone-context (RFC 3966 section 5.1.5).
    assert.match(invite, /^INVITE sip:6045550123@127\.0\.0\.1:\d+ SIP\/2\.0\r?$/m);
    assert.equal(header(invite, "P-Asserted-Identity"), "<sip:+16045550100@127.0.0.1;user=phone>");
    assert.equal(header(invite, "Supported"), "timer");
    assert.equal(header(invite, "Require"), undefined);
    assert.equal(header(invite, "Session-Expires"), "600");
    assert.equal(header(invite, "Min-SE"), "90");
  });

  test("G.722 and Opus are offered in the profile's order, with a telephone-event at each clock rate; a trunk without codecs offers Opus, G.722, PCMU, PCMA", async () => {
    const peer = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await telephonyWith({
      uri: `sip:127.0.0.1:${peer.sipPort}`,
      codecs: ["opus", "PCMA", "G722", "PCMU"],
    });
    const invite = await placedInvite(telephony, peer);
    assert.match(invite, /^m=audio \d+ RTP\/AVP 111 8 9 0 110 101\r?$/m);
    assert.match(invite, /^a=rtpmap:111 opus\/48000\/2\r?$/m);
    assert.match(invite, /^a=fmtp:111 useinbandfec=1;maxaveragebitrate=20000\r?$/m);
    assert.match(invite, /^a=rtpmap:9 G722\/8000\r?$/m);
    assert.match(invite, /^a=rtpmap:110 telephone-event\/48000\r?$/m);
    assert.match(invite, /^a=rtpmap:101 telephone-event\/8000\r?$/m);
    const defaultPeer = await sipp({ scenario: "uas-answer.xml" });
    const byDefault = await telephonyWith({ uri: `sip:127.0.0.1:${defaultPeer.sipPort}` });
    assert.match(await placedInvite(byDefault, defaultPeer), /^m=audio \d+ RTP\/AVP 111 9 0 8 110 101\r?$/m);
  });

  test("national numbers, the trunk's own caller ID, and a withheld identity (RFC 3323)", async () => {
    const peer = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await telephonyWith({
      uri: `sip:127.0.0.1:${peer.sipPort}`,
      numberFormat: "national",
      callerId: "+17785550199",
      assertedIdentity: true,
      privacy: "id",
      codecs: ["PCMA"],
    });
    const invite = await placedInvite(telephony, peer, "+1 604 555 0123");
    assert.match(invite, /^INVITE sip:6045550123@127\.0\.0\.1:\d+ SIP\/2\.0\r?$/m);
    assert.match(header(invite, "From") ?? "", /^"Anonymous" <sip:anonymous@anonymous\.invalid>;tag=/);
    assert.equal(header(invite, "Privacy"), "id");
    // The carrier still learns who calls, to bill it, and withholds it onwards.
    assert.equal(header(invite, "P-Asserted-Identity"), "<sip:7785550199@127.0.0.1>");
  });

  test("an outbound proxy: the INVITE goes to it with a loose Route, the Request-URI names the carrier", async () => {
    const proxy = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await telephonyWith({
      // Never looked up: with an outbound proxy only the proxy is located.
      uri: "sip:sip.carrier.invalid:5099",
      outboundProxy: `sip:127.0.0.1:${proxy.sipPort}`,
      codecs: ["PCMA"],
    });
    const invite = await placedInvite(telephony, proxy);
    assert.match(invite, /^INVITE sip:\+16045550123@sip\.carrier\.invalid:5099 SIP\/2\.0\r?$/m);
    assert.equal(header(invite, "Route"), `<sip:127.0.0.1:${proxy.sipPort};lr>`);
  });

  test("REGISTER goes through the outbound proxy too, for the trunk's own domain", async () => {
    const proxy = await sipp({ scenario: "uas-registrar.xml" });
    const telephony = await telephonyWith({
      uri: "sip:sip.carrier.invalid",
      outboundProxy: `sip:127.0.0.1:${proxy.sipPort};lr`,
      credentials: { username: "acct", password: "secret" },
      registration: { expires: 600, contactUser: "+16045550150" },
    });
    await until("the REGISTER", async () => (/^REGISTER /m.test(proxy.messages()) ? true : undefined), {
      detail: () => proxy.report(),
    });
    await telephony.close();
    await proxy.expectSuccess();
    const register = /^REGISTER [\s\S]*?(?=^-{10,}|(?![\s\S]))/m.exec(proxy.messages())?.[0] ?? "";
    assert.match(register, /^REGISTER sip:sip\.carrier\.invalid SIP\/2\.0\r?$/m);
    assert.equal(header(register, "Route"), `<sip:127.0.0.1:${proxy.sipPort};lr>`);
    assert.equal(header(register, "To"), "<sip:acct@sip.carrier.invalid>");
    assert.equal(header(register, "Expires"), "600");
    // The carrier's INVITEs come to the number registered (an access number, say).
    assert.match(header(register, "Contact") ?? "", /^<sip:\+16045550150@127\.0\.0\.1:\d+>/);
    // The binding removed at close went the same way.
    assert.match(proxy.messages(), /^Expires: 0\r?$/m);
  });

  test("a trunk that takes keys by SIP INFO: no telephone-event offered, one INFO a key (application/dtmf-relay)", async () => {
    const peer = await sipp({ scenario: "uas-info-keys.xml" });
    const telephony = await telephonyWith({
      uri: `sip:127.0.0.1:${peer.sipPort}`,
      dtmf: "info",
      codecs: ["PCMA"],
    });
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    assert.equal(await record.call.sendDigits("4,7#"), true);
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
    assert.doesNotMatch(inviteReceived(peer), /telephone-event/);
    const infos = [...peer.messages().matchAll(/^INFO [\s\S]*?(?=^-{10,}|(?![\s\S]))/gm)].map(
      (match) => match[0],
    );
    assert.deepEqual(
      infos.map((info) => [
        header(info, "Content-Type"),
        /^Signal=(.*?)\r?$/m.exec(info)?.[1],
        /^Duration=(.*?)\r?$/m.exec(info)?.[1],
      ]),
      [
        ["application/dtmf-relay", "4", "100"],
        ["application/dtmf-relay", "7", "100"],
        ["application/dtmf-relay", "#", "100"],
      ],
    );
  });

  test("a trunk that takes keys in the audio: no telephone-event offered, and the keys sent as tones", async () => {
    const peer = await sipp({ scenario: "uas-answer.xml", args: ["-rtp_echo"] });
    const telephony = await telephonyWith({
      uri: `sip:127.0.0.1:${peer.sipPort}`,
      dtmf: "inband",
      codecs: ["PCMA"],
    });
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    const exchange = exchangeAudio(record.call, 2.5, null);
    assert.equal(await record.call.sendDigits("19#"), true);
    await exchange;
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
    const invite = inviteReceived(peer);
    assert.match(invite, /^m=audio \d+ RTP\/AVP 8\r?$/m);
    assert.doesNotMatch(invite, /telephone-event/);
    // SIPp echoes what we send: our own tones come back and are heard as the keys, once each.
    assert.deepEqual(record.digits, ["1", "9", "#"]);
  });
});

/** The RTP clock of G.722 is 8000 (RFC 3551 section 4.5.2), its audio 16 kHz: 160 ticks per 20 ms. */
const G722_TICKS_PER_FRAME = 160;
const WIDEBAND_RATE = 16000;

/** `seconds` of a tone in G.722 RTP (payload type 9), one 20 ms packet every 20 ms, for play_pcap_audio. */
function g722Tone(toneHz: number, seconds: number): PcapPacket[] {
  const encoder = new G722Encoder();
  const tone = new ToneGenerator(toneHz, 0.5, WIDEBAND_RATE);
  const frame = new Int16Array(G722_FRAME_SAMPLES);
  const packets: PcapPacket[] = [];
  for (let i = 0; i < seconds * 50; i++) {
    const payload = new Uint8Array(G722_FRAME_BYTES);
    encoder.encode(tone.fill(frame), payload);
    const header = {
      marker: i === 0,
      payloadType: 9,
      sequenceNumber: 4000 + i,
      timestamp: 16_000 + i * G722_TICKS_PER_FRAME,
      ssrc: 0x6722c0de,
      csrcs: [],
    };
    const datagram = Buffer.alloc(rtpPacketLength(header, payload.length));
    writeRtpPacket(header, payload, datagram);
    packets.push({ offsetMs: i * 20, datagram });
  }
  return packets;
}

/** The RTP packets we sent to SIPp's media port, from a stopped capture. */
function sentTo(capture: WireCapture, port: number): RtpPacket[] {
  return capture
    .datagrams(({ destination }) => destination === port)
    .map((datagram) => parseRtpPacket(datagram))
    .filter((packet) => packet !== null);
}

describe("a trunk profile naming g722, pcmu, to a SIPp carrier that answers G.722 and plays it", {
  skip: skip || skipWithout("tshark"),
  concurrency: true,
}, () => {
  /** A call placed through such a trunk, answered, with what we send to the carrier captured. */
  async function g722Call(toneHz: number) {
    const pcap = join(pcapDir, `tone-${toneHz}.pcap`);
    writeRtpPcap(pcap, g722Tone(toneHz, 5));
    const peer = await sipp({ scenario: "uas-answer-g722-play.xml", pcap });
    const capture = await WireCapture.start(`udp dst port ${peer.mediaPort}`);
    stopAfter({ stop: () => capture.dispose() });
    const telephony = await telephonyWith({ uri: `sip:127.0.0.1:${peer.sipPort}`, codecs: ["G722", "PCMU"] });
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    const hangUp = async () => {
      record.call.hangup();
      await record.reached("ended");
      await peer.expectSuccess();
      await capture.stop();
    };
    return { peer, capture, record, hangUp };
  }

  test("offered G.722 then PCMU, answered G.722 (PT 9): the answer is honoured, all we send is PT 9", async () => {
    const { peer, capture, record, hangUp } = await g722Call(5000);
    assert.equal(record.call.codec, "G722");
    // Played to the call alone, the media sends on its own 20 ms clock.
    void record.call.play({ tone: "entry" });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await hangUp();
    assert.match(inviteReceived(peer), /^m=audio \d+ RTP\/AVP 9 0 101\r?$/m);
    const sent = sentTo(capture, peer.mediaPort);
    assert.ok(sent.length >= 25, `${sent.length} RTP packets sent in a second`);
    assert.deepEqual([...new Set(sent.map((packet) => packet.payloadType))], [9]);
  });

  test("G.722 both ways: the carrier's 5 kHz tone is heard, our 6 kHz tone reaches it (neither fits in 8 kHz audio)", async () => {
    const { peer, capture, record, hangUp } = await g722Call(5000);
    // A G.722 call's media runs at 16 kHz: 20 ms frames of 320 samples.
    const frame = new Int16Array(G722_FRAME_SAMPLES);
    const ours = new ToneGenerator(6000, 0.5, WIDEBAND_RATE);
    const frames = 100;
    const heard = new Int16Array(frames * G722_FRAME_SAMPLES);
    for (let i = 0; i < frames; i++) {
      record.call.sendAudio(ours.fill(frame));
      record.call.readAudio(heard.subarray(i * G722_FRAME_SAMPLES, (i + 1) * G722_FRAME_SAMPLES));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await hangUp();
    const late = heard.subarray(heard.length / 2);
    assert.ok(
      goertzelLevelDb(late, 5000, WIDEBAND_RATE) > -20,
      `the carrier's 5 kHz at ${goertzelLevelDb(late, 5000, WIDEBAND_RATE).toFixed(1)} dB`,
    );
    const sent = sentTo(capture, peer.mediaPort);
    assert.ok(
      sent.every((packet) => packet.payload.length === G722_FRAME_BYTES),
      "each packet is 20 ms of G.722",
    );
    const decoder = new G722Decoder();
    const wire = new Int16Array(sent.length * G722_FRAME_SAMPLES);
    for (const [i, packet] of sent.entries())
      decoder.decode(packet.payload, wire.subarray(i * G722_FRAME_SAMPLES));
    const lateWire = wire.subarray(wire.length / 2);
    assert.ok(
      goertzelLevelDb(lateWire, 6000, WIDEBAND_RATE) > -20,
      `our 6 kHz on the wire at ${goertzelLevelDb(lateWire, 6000, WIDEBAND_RATE).toFixed(1)} dB`,
    );
  });
});
