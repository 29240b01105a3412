/**
 * SIP over TLS with baresip, a real softphone, on loopback. A test CA (openssl) signs the phone's
 * certificate for 127.0.0.1 and another for a wrong name. We call the phone through a
 * `;transport=tls` trunk: its certificate is verified, tones cross both ways, its keys reach us, and
 * the capture of the TLS port holds no readable SIP. The phone calls our TLS listener too. A
 * certificate for another name fails the call with the reason, and nothing goes out in plain text.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { IncomingCall } from "../../../src/telephony/call.js";
import type { SrtpSuite } from "../../../src/telephony/media/rtp/srtp.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import {
  assertTone,
  exchangeAudio,
  goertzelLevelDb,
  SAMPLE_RATE,
  ToneGenerator,
} from "../../helpers/audio.js";
import { Baresip } from "../../helpers/baresip.js";
import { testAuthority } from "../../helpers/certificates.js";
import { CallRecord, rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { WireCapture } from "../../helpers/wire.js";

const skip = skipWithout("baresip") || skipWithout("openssl") || skipWithout("tshark");
const dir = mkdtempSync(join(tmpdir(), "bridgeline-tls-"));
const running: { stop(): Promise<void> }[] = [];
after(async () => {
  for (const each of running.reverse()) await each.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("SIP over TLS with baresip", { skip }, () => {
  const authority = skip ? undefined : testAuthority(dir);

  async function service(
    trunk: string | null,
    ours: { cert: string; key: string },
    srtp: {
      placed: "off" | "optional" | "required";
      dialIn: "off" | "optional" | "required";
      suites?: SrtpSuite[];
    } = {
      placed: "optional",
      dialIn: "optional",
    },
  ): Promise<Telephony> {
    const telephony = await Telephony.start({
      srtp: { ...srtp, keysOverPlainSignalling: false },
      bindAddress: "127.0.0.1",
      sipPort: 0,
      trunk,
      callerId: "+16045550100",
      rtpPorts: rtpPortRange(),
      tls: { port: 0, ...ours },
      tlsCa: readFileSync((authority as { ca: string }).ca),
    });
    running.push({ stop: () => telephony.close() });
    return telephony;
  }

  test("a call placed through a ;transport=tls trunk: verified, heard both ways, keys arrive, nothing readable on the wire", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const phoneCert = ca.issue("phone", "IP:127.0.0.1");
    const phone = await Baresip.start({
      toneHz: 440,
      user: "+16045550123",
      tls: { certificate: phoneCert.pem, cafile: ca.ca },
    });
    running.push(phone);
    const telephony = await service(
      `sip:127.0.0.1:${phone.tlsPort};transport=tls`,
      ca.issue("ours", "IP:127.0.0.1"),
    );
    const capture = await WireCapture.start(`tcp port ${phone.tlsPort} or udp port ${phone.sipPort}`);
    running.push({ stop: () => capture.dispose() });

    const record = new CallRecord(telephony.placeCall("604-555-0123"), () => phone.log);
    await record.reached("answered");
    await phone.waitForEvent("CALL_ESTABLISHED");
    const { heard } = await exchangeAudio(record.call, 3, new ToneGenerator(880));
    assertTone(heard.subarray(SAMPLE_RATE / 2), 440, 880, "we");
    assert.equal((await phone.command("sndcode", "12")).ok, true);
    await exchangeAudio(record.call, 1, new ToneGenerator(880));
    assert.deepEqual(record.digits, ["1", "2"]);
    record.call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
    assertTone(phone.heard().subarray(SAMPLE_RATE), 880, 440, "the phone");

    await capture.stop();
    assert.ok(capture.size > 2000, "the signalling was captured");
    for (const text of ["INVITE", "SIP/2.0", "+16045550123"])
      assert.equal(capture.carries(text), false, `"${text}" is readable on the wire`);
  });

  test("a call to our TLS listener is taken", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const phone = await Baresip.start({
      toneHz: 440,
      user: "caller",
      tls: { certificate: ca.issue("caller", "IP:127.0.0.1").pem, cafile: ca.ca },
    });
    running.push(phone);
    const telephony = await service(null, ca.issue("listener", "IP:127.0.0.1"));
    const incoming = new Promise<IncomingCall>((resolve) => telephony.onIncomingCall(resolve));
    const port = telephony.sipTlsPort ?? assert.fail("no TLS listener");
    assert.equal((await phone.command("dial", `sip:room@127.0.0.1:${port};transport=tls`)).ok, true);
    const call = await incoming;
    assert.equal(await call.accept(), true);
    const { heard } = await exchangeAudio(call, 3, new ToneGenerator(880));
    assertTone(heard.subarray(SAMPLE_RATE / 2), 440, 880, "we");
    call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
  });

  test("a trunk whose certificate names another host: the call fails with the reason, nothing in plain text", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const phone = await Baresip.start({
      toneHz: 440,
      user: "+16045550124",
      tls: { certificate: ca.issue("impostor", "DNS:wrong.example").pem, cafile: ca.ca },
    });
    running.push(phone);
    const telephony = await service(
      `sip:127.0.0.1:${phone.tlsPort};transport=tls`,
      ca.issue("ours2", "IP:127.0.0.1"),
    );
    const capture = await WireCapture.start(
      `tcp port ${phone.tlsPort} or udp port ${phone.sipPort} or tcp port ${phone.sipPort}`,
    );
    running.push({ stop: () => capture.dispose() });
    const record = new CallRecord(telephony.placeCall("604-555-0124"), () => phone.log);
    await record.reached("failed");
    assert.equal(record.failure?.status, 503);
    assert.match(
      record.failure?.reason ?? "",
      /TLS to 127\.0\.0\.1:\d+ failed: .*(altnames|IP: 127\.0\.0\.1)/i,
    );
    await capture.stop();
    assert.equal(capture.carries("INVITE"), false, "no INVITE went out in plain text");
    assert.doesNotMatch(phone.log, /Incoming call|INVITE/i);
  });

  test("SRTP over TLS with a phone that insists on it: heard both ways, keys arrive, the media on the wire is not G.711", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const phone = await Baresip.start({
      toneHz: 440,
      user: "+16045550125",
      tls: { certificate: ca.issue("srtp-phone", "IP:127.0.0.1").pem, cafile: ca.ca },
      mediaenc: "srtp-mand",
    });
    running.push(phone);
    const telephony = await service(
      `sip:127.0.0.1:${phone.tlsPort};transport=tls`,
      ca.issue("ours3", "IP:127.0.0.1"),
      {
        placed: "required",
        dialIn: "required",
      },
    );
    const capture = await WireCapture.start("udp");
    running.push({ stop: () => capture.dispose() });
    const record = new CallRecord(telephony.placeCall("604-555-0125"), () => phone.log);
    await record.reached("answered");
    assert.equal(record.call.encrypted, true, "the media is SRTP");
    await phone.waitForEvent("CALL_ESTABLISHED");
    const { heard } = await exchangeAudio(record.call, 3, new ToneGenerator(880));
    assertTone(heard.subarray(SAMPLE_RATE / 2), 440, 880, "we");
    assert.equal((await phone.command("sndcode", "34")).ok, true);
    await exchangeAudio(record.call, 1, new ToneGenerator(880));
    assert.deepEqual(record.digits, ["3", "4"]);
    record.call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
    assertTone(phone.heard().subarray(SAMPLE_RATE), 880, 440, "the phone");
    await capture.stop();
    // Every datagram between the two read as PCMU: noise, not the tones.
    const wire = capture.audioTo(record.call.mediaStream?.localPort ?? 0);
    assert.ok(wire.length > SAMPLE_RATE, "the phone's RTP was captured");
    assert.ok(
      goertzelLevelDb(wire, 440) < -35,
      `the phone's 440 Hz is readable at ${goertzelLevelDb(wire, 440).toFixed(1)} dBFS`,
    );
  });

  test("SRTP with only AES_CM_128_HMAC_SHA1_32 offered: the phone takes it, 4-byte tags on the wire, heard both ways", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const phone = await Baresip.start({
      toneHz: 440,
      user: "+16045550126",
      tls: { certificate: ca.issue("srtp32-phone", "IP:127.0.0.1").pem, cafile: ca.ca },
      mediaenc: "srtp-mand",
    });
    running.push(phone);
    const telephony = await service(
      `sip:127.0.0.1:${phone.tlsPort};transport=tls`,
      ca.issue("ours6", "IP:127.0.0.1"),
      { placed: "required", dialIn: "required", suites: ["AES_CM_128_HMAC_SHA1_32"] },
    );
    const capture = await WireCapture.start("udp");
    running.push({ stop: () => capture.dispose() });
    const record = new CallRecord(telephony.placeCall("604-555-0126"), () => phone.log);
    await record.reached("answered");
    assert.equal(record.call.encrypted, true, "the media is SRTP");
    await phone.waitForEvent("CALL_ESTABLISHED");
    const { heard } = await exchangeAudio(record.call, 3, new ToneGenerator(880));
    assertTone(heard.subarray(SAMPLE_RATE / 2), 440, 880, "we");
    record.call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
    assertTone(phone.heard().subarray(SAMPLE_RATE), 880, 440, "the phone");
    await capture.stop();
    // 20 ms of PCMU is 12 header + 160 payload bytes; _32 adds a 4-byte tag (_80 would add 10).
    const ours = record.call.mediaStream?.localPort ?? 0;
    const sizes = new Set(
      capture.datagrams(({ destination }) => destination === ours).map((datagram) => datagram.length),
    );
    assert.deepEqual([...sizes], [176], `the phone's SRTP datagrams are ${[...sizes].join(", ")} bytes`);
    const wire = capture.audioTo(ours);
    assert.ok(
      goertzelLevelDb(wire, 440) < -35,
      `the phone's 440 Hz is readable at ${goertzelLevelDb(wire, 440).toFixed(1)} dBFS`,
    );
  });

  test("SRTP required takes a caller that offers keys: heard both ways, its keys arrive", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const phone = await Baresip.start({
      toneHz: 440,
      user: "secure-caller",
      tls: { certificate: ca.issue("secure-caller", "IP:127.0.0.1").pem, cafile: ca.ca },
      mediaenc: "srtp-mand",
    });
    running.push(phone);
    const telephony = await service(null, ca.issue("ours5", "IP:127.0.0.1"), {
      placed: "optional",
      dialIn: "required",
    });
    const incoming = new Promise<IncomingCall>((resolve) => telephony.onIncomingCall(resolve));
    const port = telephony.sipTlsPort ?? assert.fail("no TLS listener");
    assert.equal((await phone.command("dial", `sip:room@127.0.0.1:${port};transport=tls`)).ok, true);
    const call = await incoming;
    assert.equal(await call.accept(), true);
    assert.equal(call.encrypted, true);
    const digits: string[] = [];
    call.on("digit", (key) => digits.push(key));
    const { heard } = await exchangeAudio(call, 3, new ToneGenerator(880));
    assertTone(heard.subarray(SAMPLE_RATE / 2), 440, 880, "we");
    assert.equal((await phone.command("sndcode", "56")).ok, true);
    await exchangeAudio(call, 1, new ToneGenerator(880));
    assert.deepEqual(digits, ["5", "6"]);
    call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
    assertTone(phone.heard().subarray(SAMPLE_RATE), 880, 440, "the caller");
  });

  test("SRTP required refuses a caller whose offer has no key, with 488", async () => {
    const ca = authority as NonNullable<typeof authority>;
    const phone = await Baresip.start({
      toneHz: 440,
      user: "plain",
      tls: { certificate: ca.issue("plain-phone", "IP:127.0.0.1").pem, cafile: ca.ca },
    });
    running.push(phone);
    const telephony = await service(null, ca.issue("ours4", "IP:127.0.0.1"), {
      placed: "optional",
      dialIn: "required",
    });
    const incoming = new Promise<IncomingCall>((resolve) => telephony.onIncomingCall(resolve));
    const port = telephony.sipTlsPort ?? assert.fail("no TLS listener");
    assert.equal((await phone.command("dial", `sip:room@127.0.0.1:${port};transport=tls`)).ok, true);
    const call = await incoming;
    assert.equal(await call.accept(), false);
    await phone.waitForEvent("CALL_CLOSED");
    assert.match(phone.log, /488/);
  });
});
