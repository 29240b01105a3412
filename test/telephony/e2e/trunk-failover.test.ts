/**
 * Failover across trunks and 3xx redirects, against SIPp as two carriers: a route's trunk (`a`,
 * numbers from +1604555012) and the default trunk (`b`). A trunk that cannot carry a call (503,
 * silence) has it placed again through the next; the callee's answer (486) ends it there. A 302 to
 * another number, where the trunk follows redirects and the caller allows the number, has that
 * number called through our own dial plan, never the Contact's host: `evil.example`, which dnsmasq
 * points at a third SIPp that must hear nothing.
 */
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { describe, test } from "node:test";
import { Telephony } from "../../../src/telephony/telephony.js";
import type { Trunk } from "../../../src/telephony/trunk.js";
import { Dnsmasq } from "../../helpers/dnsmasq.js";
import { CallRecord, freePorts, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { stoppedAfterTests } from "../../helpers/stop-after.js";

const skip = skipWithout("sipp") || skipWithout("dnsmasq");
const stopAfter = stoppedAfterTests();
const sipp = async (options: Parameters<typeof Sipp.start>[0]) =>
  stopAfter(await Sipp.start({ timeoutSeconds: 30, ...options }));

/** The number placed: the route's trunk takes it. The redirect's number only the default trunk takes. */
const NUMBER = "604-555-0123";
const REDIRECTED = "+16045550199";

async function service(
  a: Trunk,
  b: string,
  logs: string[],
  options: { serverTimeoutMs?: number; dnsServer?: string; ringTimeoutMs?: number } = {},
): Promise<Telephony> {
  const log = (fields: object, message: string) => logs.push(`${message} ${JSON.stringify(fields)}`);
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk: b,
    routes: [{ prefix: "+1604555012", trunk: a }],
    callerId: "+16045550100",
    rtpPorts: rtpPortRange(),
    serverTimeoutMs: options.serverTimeoutMs ?? 1000,
    ...(options.ringTimeoutMs === undefined ? {} : { ringTimeoutMs: options.ringTimeoutMs }),
    ...(options.dnsServer === undefined ? {} : { dnsServers: [options.dnsServer] }),
    logger: { info: log, warn: log, error: log, debug: () => undefined },
  });
  stopAfter({ stop: () => telephony.close() });
  return telephony;
}

/** The Request-URIs of the INVITEs in SIPp's message trace. */
function invitesReceived(peer: Sipp): string[] {
  return [...peer.messages().matchAll(/^INVITE (\S+) SIP\/2\.0/gm)].map((match) => match[1] as string);
}

/** dnsmasq naming `evil.example` (NAPTR, SRV, A) as the SIPp listening on `port`. */
async function evilName(port: number): Promise<Dnsmasq> {
  const dns = await Dnsmasq.start({
    naptr: ["evil.example,10,50,S,SIP+D2U,,_sip._udp.evil.example"],
    srv: [`_sip._udp.evil.example,evil.example,${port},10,50`],
    hosts: ["evil.example,127.0.0.1"],
  });
  stopAfter(dns);
  return dns;
}

describe("failover across trunks", { skip }, () => {
  test("the route's trunk answers 503: the default trunk carries the call, and is its route", async () => {
    const a = await sipp({ scenario: "uas-unavailable.xml" });
    const b = await sipp({ scenario: "uas-answer.xml" });
    const logs: string[] = [];
    // The route's trunk takes one call at a time: the call that left it gave its channel back.
    const telephony = await service({ uri: a.uri(), maxChannels: 1 }, b.uri(), logs);
    const record = new CallRecord(telephony.placeCall(NUMBER), () => `${a.report()}\n${b.report()}`);
    await b.unlessFailed(record.reached("answered"));
    assert.equal(record.call.route, b.uri(), "the trunk that carried it");
    const channels = () =>
      Object.fromEntries(telephony.trunkPacing().map((each) => [each.trunk, each.channels]));
    assert.deepEqual(channels(), { [a.uri()]: 0, [b.uri()]: 1 });
    record.call.hangup();
    await record.reached("ended");
    assert.deepEqual(channels(), { [a.uri()]: 0, [b.uri()]: 0 });
    await a.expectSuccess();
    await b.expectSuccess();
    assert.deepEqual(record.events, ["ringing", "answered", "ended"], "one call, no failure told");
    assert.equal(invitesReceived(a).length, 1);
    assert.deepEqual(invitesReceived(b), [`sip:+16045550123@127.0.0.1:${b.sipPort}`]);
    const failover = logs.find((line) => line.startsWith("call failed over to the next trunk"));
    assert.ok(failover !== undefined, logs.join("\n"));
    assert.match(failover, new RegExp(`"from":"${a.uri()}","to":"${b.uri()}"`));
    assert.match(failover, /"status":503/);
  });

  test("the route's trunk answers 486: the callee is busy, no other trunk is tried", async () => {
    const a = await sipp({ scenario: "uas-busy.xml" });
    const b = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await service({ uri: a.uri() }, b.uri(), []);
    const record = new CallRecord(telephony.placeCall(NUMBER), () => `${a.report()}\n${b.report()}`);
    await record.reached("failed");
    assert.equal(record.failure?.status, 486);
    assert.equal(record.call.route, a.uri());
    await a.expectSuccess();
    assert.deepEqual(invitesReceived(b), [], "nothing reached the default trunk");
  });

  test("nothing listens at the route's trunk: given up at the server timeout, the default trunk answers", async () => {
    const silent = await freePorts();
    const b = await sipp({ scenario: "uas-answer.xml" });
    const logs: string[] = [];
    const telephony = await service({ uri: `sip:127.0.0.1:${silent}` }, b.uri(), logs);
    const started = performance.now();
    const record = new CallRecord(telephony.placeCall(NUMBER), () => `${b.report()}\n${logs.join("\n")}`);
    await b.unlessFailed(record.reached("answered"));
    const took = performance.now() - started;
    assert.ok(
      took >= 1000 && took < 10_000,
      `answered through b after ${took.toFixed(0)} ms, not Timer B's 32 s`,
    );
    assert.equal(record.call.route, b.uri());
    record.call.hangup();
    await record.reached("ended");
    await b.expectSuccess();
    assert.ok(
      logs.some(
        (line) => line.startsWith("call failed over to the next trunk") && line.includes('"status":408'),
      ),
      logs.join("\n"),
    );
  });

  test("hung up while its trunk's servers are looked up, and the lookup then fails: no other trunk is tried, nothing held", async () => {
    // A DNS server for carrier-a.invalid: at start an A record of no lifetime (TTL 0: asked again
    // for the call), no NAPTR or SRV; once the call is placed, NXDOMAIN 600 ms late.
    const dns = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => dns.bind(0, "127.0.0.1", resolve));
    stopAfter({ stop: () => new Promise<void>((resolve) => dns.close(() => resolve())) });
    let placed = false;
    dns.on("message", (query, from) => {
      let end = 12;
      while ((query[end] ?? 0) !== 0) end += (query[end] ?? 0) + 1;
      const type = query.readUInt16BE(end + 1);
      const question = query.subarray(0, end + 5);
      const reply = (answer: Buffer) => dns.send(answer, from.port, from.address);
      if (placed) {
        // The query back as its answer: QR, RD and RA set, RCODE 3 (NXDOMAIN), no records.
        const nxdomain = Buffer.from(question);
        nxdomain.writeUInt16BE(0x8183, 2);
        setTimeout(() => reply(nxdomain), 600);
        return;
      }
      const header = Buffer.from(question);
      header.writeUInt16BE(type === 1 ? 0x8180 : 0x8183, 2);
      if (type !== 1) return reply(header);
      header.writeUInt16BE(1, 6); // one answer: 127.0.0.1, TTL 0
      reply(Buffer.concat([header, Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 127, 0, 0, 1])]));
    });
    const b = await sipp({ scenario: "uas-answer.xml" });
    const logs: string[] = [];
    const telephony = await service({ uri: "sip:carrier-a.invalid" }, b.uri(), logs, {
      dnsServer: `127.0.0.1:${dns.address().port}`,
    });
    placed = true;
    const record = new CallRecord(telephony.placeCall(NUMBER), () => `${b.report()}\n${logs.join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    record.call.hangup();
    await record.reached("failed");
    assert.equal(record.failure?.status, 487);
    // Past the late NXDOMAIN, when the next trunk would have been tried.
    await new Promise((resolve) => setTimeout(resolve, 900));
    assert.deepEqual(invitesReceived(b), [], "nothing reached the default trunk");
    assert.ok(!logs.some((line) => line.startsWith("call failed over")), logs.join("\n"));
    assert.deepEqual(
      telephony.trunkPacing().map((each) => [each.queued, each.channels]),
      [
        [0, 0],
        [0, 0],
      ],
    );
  });

  test("the ring timeout runs from the first INVITE, not again for the next trunk", async () => {
    const silent = await freePorts();
    const b = await sipp({ scenario: "uas-no-answer.xml" });
    const telephony = await service({ uri: `sip:127.0.0.1:${silent}` }, b.uri(), [], {
      serverTimeoutMs: 1500,
      ringTimeoutMs: 2000,
    });
    const started = performance.now();
    const record = new CallRecord(telephony.placeCall(NUMBER), () => b.report());
    await record.reached("failed");
    const took = performance.now() - started;
    assert.equal(record.failure?.status, 408);
    assert.ok(took < 3400, `failed after ${took.toFixed(0)} ms: 2 s from the first INVITE, not 1.5 + 2`);
    await b.expectSuccess();
    assert.equal(invitesReceived(b).length, 1, "the default trunk rang, then was cancelled");
  });

  test("a trunk that cannot meet the call's encryption is left out: no INVITE reaches it", async () => {
    const a = await sipp({ scenario: "uas-answer.xml" });
    const b = await sipp({ scenario: "uas-answer.xml" });
    // SRTP required over plain SIP: its keys would travel readable, so that trunk takes no call.
    const telephony = await service({ uri: a.uri(), srtp: "required" }, b.uri(), []);
    const record = new CallRecord(telephony.placeCall(NUMBER), () => `${a.report()}\n${b.report()}`);
    await b.unlessFailed(record.reached("answered"));
    assert.equal(record.call.route, b.uri());
    assert.equal(record.call.encrypted, false);
    record.call.hangup();
    await record.reached("ended");
    await b.expectSuccess();
    assert.deepEqual(invitesReceived(a), []);

    // An encrypted call: neither trunk is SIP over TLS, so none is tried.
    const refused = new CallRecord(telephony.placeCall(NUMBER, { encrypted: true }));
    await refused.reached("failed");
    assert.equal(refused.failure?.status, 488);
    assert.deepEqual(invitesReceived(a), []);
    assert.equal(invitesReceived(b).length, 1);
  });

  test("hung up while the route's trunk is silent: that INVITE is given up, nothing goes to the next", async () => {
    const silent = await freePorts();
    const b = await sipp({ scenario: "uas-answer.xml" });
    const telephony = await service({ uri: `sip:127.0.0.1:${silent}` }, b.uri(), [], {
      serverTimeoutMs: 1000,
    });
    const record = new CallRecord(telephony.placeCall(NUMBER), () => b.report());
    await new Promise((resolve) => setTimeout(resolve, 300));
    record.call.hangup();
    await record.reached("failed");
    assert.equal(record.failure?.status, 487);
    // Past the server timeout, when the next trunk would have been tried.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.deepEqual(invitesReceived(b), []);
    assert.deepEqual(record.events, ["failed"], "one failure told");
  });
});

describe("3xx redirects", { skip }, () => {
  const CONTACT = `<sip:${REDIRECTED}@evil.example>`;

  async function redirected(
    followRedirects: boolean,
    allowRedirect: ((e164: string) => boolean) | undefined,
  ) {
    const evil = await sipp({ scenario: "uas-answer.xml" });
    const dns = await evilName(evil.sipPort);
    const a = await sipp({ scenario: "uas-redirect.xml", keys: { contact: CONTACT } });
    const b = await sipp({ scenario: "uas-answer.xml" });
    const logs: string[] = [];
    const telephony = await service({ uri: a.uri(), followRedirects }, b.uri(), logs, {
      dnsServer: dns.server,
    });
    const call = telephony.placeCall(NUMBER, allowRedirect === undefined ? {} : { allowRedirect });
    const record = new CallRecord(call, () => `${a.report()}\n${b.report()}\n${logs.join("\n")}`);
    return { a, b, evil, record, logs };
  }

  test("followed, and allowed: the Contact's number is called through our own trunk, not the Contact's host", async () => {
    const asked: string[] = [];
    const { a, b, evil, record } = await redirected(true, (e164) => {
      asked.push(e164);
      return true;
    });
    await b.unlessFailed(record.reached("answered"));
    assert.deepEqual(asked, [REDIRECTED]);
    assert.equal(record.call.route, b.uri());
    record.call.hangup();
    await record.reached("ended");
    await a.expectSuccess();
    await b.expectSuccess();
    assert.deepEqual(invitesReceived(b), [`sip:${REDIRECTED}@127.0.0.1:${b.sipPort}`]);
    assert.equal(evil.messages(), "", "nothing went to evil.example");
  });

  test("followed, but the caller does not allow the number: the call fails 302", async () => {
    const asked: string[] = [];
    const { a, b, evil, record } = await redirected(true, (e164) => {
      asked.push(e164);
      return false;
    });
    await record.reached("failed");
    assert.equal(record.failure?.status, 302);
    assert.deepEqual(asked, [REDIRECTED]);
    await a.expectSuccess();
    assert.deepEqual(invitesReceived(b), []);
    assert.equal(evil.messages(), "");
  });

  test("a trunk without follow-redirects: the call fails 302, the caller not even asked", async () => {
    const asked: string[] = [];
    const { a, b, evil, record, logs } = await redirected(false, (e164) => {
      asked.push(e164);
      return true;
    });
    await record.reached("failed");
    assert.equal(record.failure?.status, 302);
    assert.deepEqual(asked, []);
    await a.expectSuccess();
    assert.deepEqual(invitesReceived(b), []);
    assert.equal(evil.messages(), "");
    assert.ok(
      logs.some((line) => line.includes("redirect not followed: the trunk does not follow redirects")),
    );
  });

  test("without allowRedirect no redirect is followed", async () => {
    const { a, b, record } = await redirected(true, undefined);
    await record.reached("failed");
    assert.equal(record.failure?.status, 302);
    await a.expectSuccess();
    assert.deepEqual(invitesReceived(b), []);
  });
});
