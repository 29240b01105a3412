/**
 * Kamailio (with kamailio-tls-modules) as a carrier's TLS trunk, in front of the carrier's switch (a
 * SIPp UAS): a call placed through `;transport=tls` verifies the trunk's certificate, is answered
 * through Kamailio and hung up through it, and nothing readable crosses the TLS port. A trunk whose
 * certificate names another host fails the call with the reason; nothing goes out in plain text.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { CallEnd } from "../../../src/telephony/call.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import { type IssuedCertificate, testAuthority } from "../../helpers/certificates.js";
import { Kamailio } from "../../helpers/kamailio.js";
import { CallRecord, freePorts, rtpPortRange, SCENARIO_DIR, Sipp, skipWithout } from "../../helpers/sipp.js";
import { WireCapture } from "../../helpers/wire.js";

const skip =
  skipWithout("kamailio") || skipWithout("sipp") || skipWithout("openssl") || skipWithout("tshark");
const TRUNK_CONFIG = fileURLToPath(new URL("../../fixtures/kamailio/tls-trunk.cfg", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "bridgeline-tls-trunk-"));
const running: { stop(): Promise<unknown> }[] = [];
after(async () => {
  for (const each of running.reverse()) await each.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Kamailio taking TLS on a port of its own with `certificate`, handing calls to `carrier` over UDP. */
async function tlsTrunk(name: string, certificate: IssuedCertificate, carrier: Sipp) {
  const tlsPort = await freePorts();
  const tlsConfig = join(dir, `${name}-tls.cfg`);
  writeFileSync(
    tlsConfig,
    [
      "[server:default]",
      "method = TLSv1.2+",
      "verify_certificate = no",
      "require_certificate = no",
      `private_key = ${certificate.keyFile}`,
      `certificate = ${certificate.certFile}`,
      "",
      "[client:default]",
      "verify_certificate = no",
      "require_certificate = no",
      "",
    ].join("\n"),
  );
  const kamailio = await Kamailio.start({
    config: TRUNK_CONFIG,
    trunk: carrier.uri(),
    instances: [],
    defines: {
      TLS_PORT: String(tlsPort),
      CARRIER_URI: `"sip:127.0.0.1:${carrier.sipPort}"`,
      TLS_CFG: `"${tlsConfig}"`,
    },
  });
  running.push(kamailio);
  return { kamailio, tlsPort };
}

/**
 * A carrier that answers at once and hangs up with BYE (through the trunk's Record-Route): the
 * moderator's phone of uas-moderator.xml without its 3 s of ringing, which nothing here is about.
 */
function answersThenHangsUp(): string {
  const ringing = '<pause milliseconds="3000"/>';
  const moderator = readFileSync(join(SCENARIO_DIR, "uas-moderator.xml"), "utf8");
  assert.ok(moderator.includes(ringing), "uas-moderator.xml rings for 3 s");
  const scenario = join(dir, "uas-answer-hang-up.xml");
  writeFileSync(scenario, moderator.replace(ringing, ""));
  return scenario;
}

describe("Kamailio as a TLS trunk", { skip }, () => {
  const authority = skip ? undefined : testAuthority(dir);

  async function service(tlsPort: number): Promise<Telephony> {
    const telephony = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      trunk: `sip:127.0.0.1:${tlsPort};transport=tls`,
      callerId: "+16045550100",
      rtpPorts: rtpPortRange(),
      tlsCa: readFileSync((authority as { ca: string }).ca),
    });
    running.push({ stop: () => telephony.close() });
    return telephony;
  }

  test("a placed call verifies the trunk's certificate and goes through it, in nothing readable", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const carrier = await Sipp.start({ scenario: "uas-answer.xml", timeoutSeconds: 30 });
    running.push(carrier);
    const { kamailio, tlsPort } = await tlsTrunk("good", ca.issue("trunk", "IP:127.0.0.1"), carrier);
    const telephony = await service(tlsPort);
    const capture = await WireCapture.start(`tcp port ${tlsPort}`);
    running.push({ stop: () => capture.dispose() });
    const record = new CallRecord(
      telephony.placeCall("604-555-0160"),
      () => `${carrier.report()}\n${kamailio.log.slice(-3000)}`,
    );
    await record.reached("answered");
    record.call.hangup();
    await record.reached("ended");
    await carrier.expectSuccess();
    assert.match(
      kamailio.log,
      /TLS trunk: INVITE sip:\+16045550160@127\.0\.0\.1:\d+;transport=tls from 127\.0\.0\.1:\d+ over tls/,
    );
    await capture.stop();
    assert.ok(capture.size > 2000, `the TLS connection was captured (${capture.size} bytes)`);
    for (const text of ["INVITE", "SIP/2.0", "+16045550160"])
      assert.equal(capture.carries(text), false, `"${text}" is readable on the TLS port`);
  });

  test("a sips: trunk: the INVITE goes to a SIPS URI with our SIPS Contact, and the carrier's BYE comes back to it over TLS", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const carrier = await Sipp.start({ scenario: answersThenHangsUp(), timeoutSeconds: 30, pauseMs: 0 });
    running.push(carrier);
    const { kamailio, tlsPort } = await tlsTrunk("sips", ca.issue("sips-trunk", "IP:127.0.0.1"), carrier);
    const ours = ca.issue("sips-ours", "IP:127.0.0.1");
    const telephony = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      trunk: `sips:127.0.0.1:${tlsPort}`,
      callerId: "+16045550100",
      rtpPorts: rtpPortRange(),
      tls: { port: 0, ...ours },
      tlsCa: readFileSync(ca.ca),
    });
    running.push({ stop: () => telephony.close() });
    const record = new CallRecord(
      telephony.placeCall("604-555-0161"),
      () => `${carrier.report()}\n${kamailio.log.slice(-3000)}`,
    );
    const ended = once(record.call, "ended");
    await record.reached("answered");
    const [end] = (await ended) as [CallEnd];
    assert.equal(
      end.by,
      "remote",
      `the carrier BYE reached us\n${carrier.report()}\n${kamailio.log.slice(-4000)}`,
    );
    await carrier.expectSuccess();
    assert.match(
      kamailio.log,
      /TLS trunk: INVITE sips:\+16045550161@127\.0\.0\.1:\d+ from 127\.0\.0\.1:\d+ over tls/,
    );
    const port = telephony.sipTlsPort ?? assert.fail("no TLS listener");
    assert.match(
      kamailio.log,
      new RegExp(`TLS trunk: in-dialog BYE to sips:bridgeline@127\\.0\\.0\\.1:${port}\\b`),
    );
  });

  test("a trunk whose certificate names another host fails the call with the reason, and nothing goes out in plain text", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const carrier = await Sipp.start({ scenario: "uas-answer.xml", timeoutSeconds: 30 });
    running.push(carrier);
    const { kamailio, tlsPort } = await tlsTrunk(
      "wrong",
      ca.issue("impostor-trunk", "DNS:wrong.example"),
      carrier,
    );
    const telephony = await service(tlsPort);
    const capture = await WireCapture.start(
      `port ${tlsPort} or port ${kamailio.port} or port ${carrier.sipPort}`,
    );
    running.push({ stop: () => capture.dispose() });
    const record = new CallRecord(telephony.placeCall("604-555-0161"));
    await record.reached("failed");
    assert.equal(record.failure?.status, 503);
    assert.match(
      record.failure?.reason ?? "",
      /TLS to 127\.0\.0\.1:\d+ failed: .*(altnames|IP: 127\.0\.0\.1)/i,
    );
    await capture.stop();
    assert.equal(capture.carries("INVITE"), false, "no INVITE went out in plain text");
    assert.doesNotMatch(kamailio.log, /TLS trunk: INVITE/);
  });
});
