/**
 * Trunk profiles on the wire: calls placed to SIPp playing a carrier, each profile setting read back
 * from the INVITE SIPp received (its message trace), and the keys of a trunk that takes them in the
 * audio sent as tones.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { Telephony } from "../../../src/telephony/telephony.js";
import type { Trunk } from "../../../src/telephony/trunk.js";
import { exchangeAudio } from "../../helpers/audio.js";
import { CallRecord, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("sipp");
const running: { stop(): Promise<void> }[] = [];
after(async () => {
  for (const peer of running) await peer.stop();
});

async function sipp(options: Parameters<typeof Sipp.start>[0]): Promise<Sipp> {
  const peer = await Sipp.start(options);
  running.push(peer);
  return peer;
}

async function telephonyWith(trunk: Trunk, callerId = "+16045550100"): Promise<Telephony> {
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk,
    callerId,
    rtpPorts: rtpPortRange(),
  });
  running.push({ stop: () => telephony.close() });
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

  test("G.722 and Opus, which the media path lacks yet, are left out of the offer; a profile of only those offers the default", async () => {
    const peer = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await telephonyWith({
      uri: `sip:127.0.0.1:${peer.sipPort}`,
      codecs: ["opus", "PCMA", "G722", "PCMU"],
    });
    const invite = await placedInvite(telephony, peer);
    assert.match(invite, /^m=audio \d+ RTP\/AVP 8 0 101\r?$/m);
    assert.doesNotMatch(invite, /opus|G722|telephone-event\/48000/);
    const widebandPeer = await sipp({ scenario: "uas-answer.xml" });
    const widebandOnly = await telephonyWith({
      uri: `sip:127.0.0.1:${widebandPeer.sipPort}`,
      codecs: ["opus", "G722"],
    });
    assert.match(await placedInvite(widebandOnly, widebandPeer), /^m=audio \d+ RTP\/AVP 0 8 101\r?$/m);
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
      registration: { expires: 600 },
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
