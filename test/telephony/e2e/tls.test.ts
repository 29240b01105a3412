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
import type { SrtpSuite } from "../../../src/telephony/media/rtp/srtp-suites.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import {
  type AudioEndpoint,
  assertTone,
  FRAME_SAMPLES,
  goertzelLevelDb,
  lastSecond,
  RunningAudio,
  SAMPLE_RATE,
  ToneGenerator,
  toneHeard,
  toneLevels,
} from "../../helpers/audio.js";
import { Baresip } from "../../helpers/baresip.js";
import { testAuthority } from "../../helpers/certificates.js";
import { CallRecord, rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { WireCapture } from "../../helpers/wire.js";

const skip = skipWithout("baresip") || skipWithout("openssl") || skipWithout("tshark");
/**
 * How much of an SRTP phone's media we receive before hanging up, all of it captured: read as PCMU,
 * random-looking bytes measure about -48 dBFS at 440 Hz over 2 s, over the -35 dBFS that
 * assertUnreadable allows about once in 300,000 captures (once in 500 over 1 s).
 */
const WIRE_SECONDS = 2;
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

  /** A baresip phone on TLS with a certificate of the test CA for `altName`; SRTP only with `srtp`. */
  async function tlsPhone(
    user: string,
    certificate: string,
    options: { altName?: string; srtp?: boolean } = {},
  ) {
    const ca = authority as NonNullable<typeof authority>;
    const started = await Baresip.start({
      toneHz: 440,
      user,
      tls: { certificate: ca.issue(certificate, options.altName ?? "IP:127.0.0.1").pem, cafile: ca.ca },
      ...(options.srtp === true ? { mediaenc: "srtp-mand" } : {}),
    });
    running.push(started);
    return started;
  }

  /** Our certificate for the service, named `name`, for 127.0.0.1. */
  function ours(name: string) {
    return (authority as NonNullable<typeof authority>).issue(name, "IP:127.0.0.1");
  }

  /**
   * Sends our 880 Hz on `call` until we hear the phone's 440 Hz over a whole second, the phone (unless
   * null) hears our 880 Hz over a whole second, and `also` holds; asserts what we heard, and returns
   * the clock, still running, and how much the phone had heard by then.
   */
  async function untilHeard(
    call: AudioEndpoint,
    phone: Baresip | null,
    also: (audio: RunningAudio) => boolean = () => true,
  ): Promise<{ audio: RunningAudio; phoneHeardUpTo: number }> {
    const audio = RunningAudio.start(call, new ToneGenerator(880));
    let phoneHeardUpTo = 0;
    await audio.until(
      phone === null ? "440 Hz heard" : "the tones heard both ways",
      () => {
        if (!toneHeard(audio.heard, 440, 880) || !also(audio)) return false;
        if (phone === null) return true;
        const phoneHeard = phone.heardSoFar();
        phoneHeardUpTo = phoneHeard.length;
        return toneHeard(phoneHeard, 880, 440);
      },
      {
        detail: () =>
          [
            `we heard ${toneLevels(audio.heard, 440, 880)} (${audio.framesReceived} frames received)`,
            ...(phone === null ? [] : [`the phone ${toneLevels(phone.heardSoFar(), 880, 440)}`]),
          ].join("; "),
      },
    );
    assertTone(lastSecond(audio.heard), 440, 880, "we");
    return { audio, phoneHeardUpTo };
  }

  /** The second of the phone's recording, read after its call closed, up to `upTo` samples. */
  function phoneSecond(phone: Baresip, upTo: number): Int16Array {
    return phone.heard().subarray(Math.max(0, upTo - SAMPLE_RATE), upTo);
  }

  /** Has `phone` send `keys` and waits, the clock running, until `digits` holds as many. */
  async function sendKeys(phone: Baresip, keys: string, audio: RunningAudio, digits: string[]) {
    assert.equal((await phone.command("sndcode", keys)).ok, true);
    await audio.until(`the digits ${keys}`, () => digits.length >= keys.length, {
      detail: () => `digits: ${digits.join(", ")}`,
    });
  }

  /**
   * Places an SRTP-required call over TLS to an SRTP-only phone, with UDP captured meanwhile: both
   * must hear each other (880 Hz from us, 440 Hz from it), and the call lasts until we have received
   * WIRE_SECONDS of its media for the capture; `during` runs before we hang up.
   */
  async function srtpCall(
    user: string,
    suites: SrtpSuite[] | undefined,
    during: (record: CallRecord, called: Baresip, audio: RunningAudio) => Promise<void> = async () =>
      undefined,
  ): Promise<{ record: CallRecord; capture: WireCapture }> {
    const called = await tlsPhone(user, `phone-${user.slice(2)}`, { srtp: true });
    const telephony = await service(
      `sip:127.0.0.1:${called.tlsPort};transport=tls`,
      ours(`ours-${user.slice(2)}`),
      {
        placed: "required",
        dialIn: "required",
        ...(suites === undefined ? {} : { suites }),
      },
    );
    const capture = await WireCapture.start("udp");
    running.push({ stop: () => capture.dispose() });
    const record = new CallRecord(telephony.placeCall(user.slice(2)), () => called.log);
    await record.reached("answered");
    assert.equal(record.call.encrypted, true, "the media is SRTP");
    assert.equal(record.call.signallingTls, true, "the signalling is TLS");
    await called.waitForEvent("CALL_ESTABLISHED");
    const { audio, phoneHeardUpTo } = await untilHeard(
      record.call,
      called,
      (running) => running.framesReceived >= (WIRE_SECONDS * SAMPLE_RATE) / FRAME_SAMPLES,
    );
    await during(record, called, audio);
    audio.stop();
    record.call.hangup();
    await called.waitForEvent("CALL_CLOSED");
    assertTone(phoneSecond(called, phoneHeardUpTo), 880, 440, "the phone");
    await capture.stop();
    return { record, capture };
  }

  /** The phone's RTP to `port`, read as PCMU, does not carry its 440 Hz tone. */
  function assertUnreadable(capture: WireCapture, port: number): void {
    const wire = capture.audioTo(port);
    assert.ok(wire.length > SAMPLE_RATE, "the phone's RTP was captured");
    assert.ok(
      goertzelLevelDb(wire, 440) < -35,
      `the phone's 440 Hz is readable at ${goertzelLevelDb(wire, 440).toFixed(1)} dBFS`,
    );
  }

  test("a call placed through a ;transport=tls trunk: verified, heard both ways, keys arrive, nothing readable on the wire", async () => {
    const phone = await tlsPhone("+16045550123", "phone");
    const telephony = await service(`sip:127.0.0.1:${phone.tlsPort};transport=tls`, ours("ours"));
    const capture = await WireCapture.start(`tcp port ${phone.tlsPort} or udp port ${phone.sipPort}`);
    running.push({ stop: () => capture.dispose() });

    const record = new CallRecord(telephony.placeCall("604-555-0123"), () => phone.log);
    await record.reached("answered");
    assert.deepEqual([record.call.signallingTls, record.call.encrypted], [true, false], "TLS, plain RTP");
    await phone.waitForEvent("CALL_ESTABLISHED");
    const { audio, phoneHeardUpTo } = await untilHeard(record.call, phone);
    await sendKeys(phone, "12", audio, record.digits);
    assert.deepEqual(record.digits, ["1", "2"]);
    audio.stop();
    record.call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
    assertTone(phoneSecond(phone, phoneHeardUpTo), 880, 440, "the phone");

    await capture.stop();
    assert.ok(capture.size > 2000, "the signalling was captured");
    for (const text of ["INVITE", "SIP/2.0", "+16045550123"])
      assert.equal(capture.carries(text), false, `"${text}" is readable on the wire`);

    // A call that must be encrypted offers SRTP alone: the phone, which has none, refuses it.
    const encrypted = new CallRecord(
      telephony.placeCall("604-555-0123", { encrypted: true }),
      () => phone.log,
    );
    await encrypted.reached("failed");
    assert.equal(encrypted.failure?.status, 488, encrypted.failure?.reason);
  });

  test("a call to our TLS listener is taken", async () => {
    const phone = await tlsPhone("caller", "caller");
    const telephony = await service(null, ours("listener"));
    const incoming = new Promise<IncomingCall>((resolve) => telephony.onIncomingCall(resolve));
    const port = telephony.sipTlsPort ?? assert.fail("no TLS listener");
    assert.equal((await phone.command("dial", `sip:room@127.0.0.1:${port};transport=tls`)).ok, true);
    const call = await incoming;
    assert.equal(await call.accept(), true);
    assert.deepEqual([call.signallingTls, call.encrypted], [true, false], "TLS, plain RTP");
    (await untilHeard(call, null)).audio.stop();
    call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
  });

  test("a trunk whose certificate names another host: the call fails with the reason, nothing in plain text", async () => {
    const phone = await tlsPhone("+16045550124", "impostor", { altName: "DNS:wrong.example" });
    const telephony = await service(`sip:127.0.0.1:${phone.tlsPort};transport=tls`, ours("ours2"));
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
    const { record, capture } = await srtpCall("+16045550125", undefined, async (call, called, audio) => {
      await sendKeys(called, "34", audio, call.digits);
      assert.deepEqual(call.digits, ["3", "4"]);
    });
    // Every datagram between the two read as PCMU: noise, not the tones.
    assertUnreadable(capture, record.call.mediaStream?.localPort ?? 0);
  });

  test("SRTP with only AES_CM_128_HMAC_SHA1_32 offered: the phone takes it, 4-byte tags on the wire, heard both ways", async () => {
    const { record, capture } = await srtpCall("+16045550126", ["AES_CM_128_HMAC_SHA1_32"]);
    // 20 ms of PCMU is 12 header + 160 payload bytes; _32 adds a 4-byte tag (_80 would add 10).
    const port = record.call.mediaStream?.localPort ?? 0;
    const sizes = new Set(
      capture.datagrams(({ destination }) => destination === port).map((datagram) => datagram.length),
    );
    assert.deepEqual([...sizes], [176], `the phone's SRTP datagrams are ${[...sizes].join(", ")} bytes`);
    assertUnreadable(capture, port);
  });

  // baresip offers only AES_CM_128_HMAC_SHA1_80, but answers with any suite its srtp module has.
  test("SRTP with only AEAD_AES_256_GCM offered (RFC 7714): the phone takes it, 16-byte tags on the wire, heard both ways", async () => {
    const { record, capture } = await srtpCall("+16045550127", ["AEAD_AES_256_GCM"]);
    const port = record.call.mediaStream?.localPort ?? 0;
    const sizes = new Set(
      capture.datagrams(({ destination }) => destination === port).map((datagram) => datagram.length),
    );
    assert.deepEqual([...sizes], [188], `the phone's SRTP datagrams are ${[...sizes].join(", ")} bytes`);
    assertUnreadable(capture, port);
  });

  test("SRTP required takes a caller that offers keys: heard both ways, its keys arrive", async () => {
    const phone = await tlsPhone("secure-caller", "secure-caller", { srtp: true });
    const telephony = await service(null, ours("ours5"), {
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
    const { audio, phoneHeardUpTo } = await untilHeard(call, phone);
    await sendKeys(phone, "56", audio, digits);
    assert.deepEqual(digits, ["5", "6"]);
    audio.stop();
    call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
    assertTone(phoneSecond(phone, phoneHeardUpTo), 880, 440, "the caller");
  });

  test("SRTP required refuses a caller whose offer has no key, with 488", async () => {
    const phone = await tlsPhone("plain", "plain-phone");
    const telephony = await service(null, ours("ours4"), {
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
