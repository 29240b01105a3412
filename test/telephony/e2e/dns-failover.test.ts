/**
 * Trunk servers found in DNS (RFC 3263), against dnsmasq serving NAPTR, SRV and A records for a trunk
 * name and SIPp servers behind it: calls go to the servers in SRV priority order, skip one that does
 * not answer within the server timeout or answers 503, and go back to it once it has been down long
 * enough.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { Telephony } from "../../../src/telephony/telephony.js";
import { Dnsmasq } from "../../helpers/dnsmasq.js";
import { CallRecord, freePorts, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";

const skip = skipWithout("dnsmasq") || skipWithout("sipp");
const running: { stop(): Promise<unknown> }[] = [];
after(async () => {
  for (const each of running.reverse()) await each.stop();
});

/** dnsmasq naming two servers for `trunk.test`: `a` first (SRV priority 10), then `b` (20). */
async function trunkName(portA: number, portB: number): Promise<Dnsmasq> {
  const dns = await Dnsmasq.start({
    naptr: ["trunk.test,10,50,S,SIP+D2U,,_sip._udp.trunk.test"],
    srv: [
      `_sip._udp.trunk.test,a.trunk.test,${portA},10,50`,
      `_sip._udp.trunk.test,b.trunk.test,${portB},20,50`,
    ],
    hosts: ["a.trunk.test,127.0.0.1", "b.trunk.test,127.0.0.1"],
  });
  running.push(dns);
  return dns;
}

async function service(dns: Dnsmasq, logs: string[]): Promise<Telephony> {
  const log = (fields: object, message: string) => logs.push(`${message} ${JSON.stringify(fields)}`);
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk: "sip:trunk.test",
    callerId: "+16045550100",
    rtpPorts: rtpPortRange(),
    dnsServers: [dns.server],
    serverTimeoutMs: 1000,
    serverDownMs: 3000,
    logger: { info: log, warn: log, error: log, debug: () => undefined },
  });
  running.push({ stop: () => telephony.close() });
  return telephony;
}

/** Places a call, waits for the answer, and hangs up; resolves with how long the answer took. */
async function answeredCall(telephony: Telephony, number: string, peers: () => string): Promise<number> {
  const started = performance.now();
  const record = new CallRecord(telephony.placeCall(number), peers);
  await record.reached("answered");
  const took = performance.now() - started;
  record.call.hangup();
  await record.reached("ended");
  return took;
}

describe("trunk servers from DNS (RFC 3263)", { skip }, () => {
  test("a silent first server is skipped within the server timeout, tried last while down, and first again after", async () => {
    const portA = await freePorts();
    const b = await Sipp.start({ scenario: "uas-answer.xml", calls: 2, timeoutSeconds: 60 });
    running.push(b);
    const dns = await trunkName(portA, b.sipPort);
    const logs: string[] = [];
    const telephony = await service(dns, logs);
    let a: Sipp | undefined;
    const peers = () => `${b.report()}\n${a?.report() ?? ""}\n${logs.join("\n")}`;

    // Nothing listens on a's port: the INVITE goes unanswered there, then to b.
    const took = await answeredCall(telephony, "604-555-0170", peers);
    assert.ok(took >= 1000 && took < 4000, `answered by b after ${took.toFixed(0)} ms`);
    assert.ok(
      logs.some((line) => line.includes("a trunk server failed") && line.includes(`127.0.0.1:${portA}`)),
      `the failed server is logged:\n${logs.join("\n")}`,
    );

    // a comes back, but is still marked down: b answers at once.
    a = await Sipp.start({ scenario: "uas-answer.xml", sipPort: portA, timeoutSeconds: 60 });
    running.push(a);
    const again = await answeredCall(telephony, "604-555-0171", peers);
    assert.ok(again < 1000, `b answered at once (${again.toFixed(0)} ms), a being down`);
    await b.expectSuccess();

    // Once its down time is over, a (priority 10) takes calls again.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await answeredCall(telephony, "604-555-0172", peers);
    await a.expectSuccess();
  });

  test("a first server that answers 503 is failed over to the next at once", async () => {
    const a = await Sipp.start({ scenario: "uas-unavailable.xml", timeoutSeconds: 30 });
    running.push(a);
    const b = await Sipp.start({ scenario: "uas-answer.xml", timeoutSeconds: 30 });
    running.push(b);
    const dns = await trunkName(a.sipPort, b.sipPort);
    const logs: string[] = [];
    const telephony = await service(dns, logs);
    const took = await answeredCall(telephony, "604-555-0173", () => `${a.report()}\n${b.report()}`);
    assert.ok(took < 1000, `answered by b after ${took.toFixed(0)} ms`);
    await a.expectSuccess();
    await b.expectSuccess();
    assert.ok(logs.some((line) => line.includes("503")));
  });

  test("a trunk name DNS does not know fails the call with 503 and the reason", async () => {
    const dns = await trunkName(5060, 5062);
    const telephony = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      trunk: "sip:nowhere.test",
      callerId: "+16045550100",
      rtpPorts: rtpPortRange(),
      dnsServers: [dns.server],
    });
    running.push({ stop: () => telephony.close() });
    const record = new CallRecord(telephony.placeCall("604-555-0174"), () => dns.log);
    await record.reached("failed");
    assert.equal(record.failure?.status, 503);
    assert.match(record.failure?.reason ?? "", /no address found for nowhere\.test/);
  });
});
