/**
 * The most common conference call: "here is the number and the PIN, call in at 10". A user signed up
 * without a phone number makes a conference with no moderator and no attendees; two SIPp callers dial
 * in, one with the moderator PIN typed as in-band tones, one with the member PIN as RFC 4733 events.
 * Both are shown connected as dial-in attendees and hear each other (what the service sends each is
 * captured by tshark); the conference stays started when the member hangs up, and ends when the
 * moderator does (the seed's rule, however the moderator joined).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { goertzelLevelDb, tone } from "../../helpers/audio.js";
import { dtmfTones, murmur, type Segment, sippCaller } from "../../helpers/dial-in-caller.js";
import { createUser, startTestService } from "../../helpers/service.js";
import { loopbackSip } from "../../helpers/service-settings.js";
import { rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { WireCapture } from "../../helpers/wire.js";
import { itemsOf, textOf, type XmlNode } from "../../helpers/xml.js";

const skip = skipWithout("sipp") || skipWithout("tshark");
const ACCESS_NUMBER = "+16045550199";
const MEMBER_HZ = 500;
const MODERATOR_HZ = 1000;

const dir = mkdtempSync(join(tmpdir(), "bridgeline-pin-only-"));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe("a PIN-only conference", { skip }, () => {
  test("takes two callers who hear each other, stays open when the member leaves, ends when the moderator does", async () => {
    const rtpPorts = rtpPortRange();
    const api = await startTestService({
      sip: loopbackSip({ rtpPorts, accessNumbers: [ACCESS_NUMBER] }),
    });
    cleanups.push(() => api.close());
    const owner = await createUser(api);
    const created = await api.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: `<conference><name>Call in at 10</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
        <no-moderator type="boolean">true</no-moderator></conference>`,
    });
    assert.equal(created.status, 201, created.text);
    const path = new URL(String(created.headers.location), "http://localhost").pathname;
    const conference = created.xml.conference as XmlNode;
    const memberPin = textOf(conference, "member-pin") ?? assert.fail("no member PIN");
    const moderatorPin = textOf(conference, "moderator-pin") ?? assert.fail("no moderator PIN");
    const pending = await api.request("PUT", path, {
      auth: owner.auth,
      body: "<conference><state>pending</state></conference>",
    });
    assert.equal(pending.status, 200, pending.text);
    const stateOf = async () =>
      textOf((await api.request("GET", path, { auth: owner.auth })).xml.conference as XmlNode, "state");
    const attendees = async (): Promise<XmlNode[]> =>
      itemsOf(await api.request("GET", `${path}/attendees`, { auth: owner.auth }), "attendees", "attendee");
    await until("the conference started", async () => ((await stateOf()) === "started" ? true : undefined));
    // Empty, it waits for callers until the no-show period is over (proven on a fake clock in
    // test/conference): the callers below find it open.

    const capture = await WireCapture.start(`udp src portrange ${rtpPorts.min}-${rtpPorts.max}`);
    cleanups.push(() => capture.dispose());
    // Each caller's own tone at -12 dBFS after its PIN: the member's 4 s outlast the joining prompt
    // (1.8 s) by 2 s of talk with the moderator, who stays two seconds longer, so that the member
    // leaves first.
    const talk = (hz: number, seconds: number): Segment => ({ audio: tone(hz, seconds, 0.25) });
    const moderator = await sippCaller({
      sipPort: api.service.sipPort,
      accessNumber: ACCESS_NUMBER,
      from: "+16045550171",
      dir,
      segments: [{ audio: murmur(1) }, { audio: dtmfTones(`${moderatorPin}#`) }, talk(MODERATOR_HZ, 6)],
    });
    const member = await sippCaller({
      sipPort: api.service.sipPort,
      accessNumber: ACCESS_NUMBER,
      from: "+16045550172",
      dir,
      segments: [{ audio: murmur(1) }, { events: `${memberPin}#` }, talk(MEMBER_HZ, 4)],
    });
    cleanups.push(
      () => moderator.stop(),
      () => member.stop(),
    );
    const connected = await until(
      "both callers connected",
      async () => {
        const all = await attendees();
        return all.length === 2 && all.every((each) => textOf(each, "state") === "connected")
          ? all
          : undefined;
      },
      { timeoutMs: 20_000, detail: () => `${moderator.report()}\n${member.report()}` },
    );
    const byNumber = (number: string) =>
      connected.find((each) => textOf(each, "phone-number-subscriber-number") === number) ??
      assert.fail(`no attendee ${number}`);
    assert.equal(textOf(byNumber("6045550171"), "dial-in"), "true");
    assert.equal(textOf(byNumber("6045550171"), "moderator"), "true");
    assert.equal(textOf(byNumber("6045550172"), "dial-in"), "true");
    assert.equal(textOf(byNumber("6045550172"), "moderator"), "false");

    await member.expectSuccess();
    await until("the member disconnected", async () =>
      (await attendees()).some(
        (each) =>
          textOf(each, "phone-number-subscriber-number") === "6045550172" &&
          textOf(each, "state") === "disconnected",
      )
        ? true
        : undefined,
    );
    assert.equal(await stateOf(), "started", "a member leaving ends nothing");
    await moderator.expectSuccess();
    await until("the conference ended as the moderator left", async () =>
      (await stateOf()) === "ended" ? true : undefined,
    );

    await capture.stop();
    const heardBy = (sipp: { mediaPort: number }) => capture.audioTo(sipp.mediaPort);
    const level = (audio: Int16Array, hz: number) => goertzelLevelDb(audio, hz);
    const moderatorHeard = heardBy(moderator);
    const memberHeard = heardBy(member);
    assert.ok(
      level(moderatorHeard, MEMBER_HZ) > -35,
      `the moderator heard the member at ${level(moderatorHeard, MEMBER_HZ).toFixed(1)} dBFS`,
    );
    assert.ok(
      level(memberHeard, MODERATOR_HZ) > -35,
      `the member heard the moderator at ${level(memberHeard, MODERATOR_HZ).toFixed(1)} dBFS`,
    );
    assert.ok(
      level(moderatorHeard, MODERATOR_HZ) < level(moderatorHeard, MEMBER_HZ) - 15,
      "the moderator is not sent their own voice",
    );
    assert.ok(
      level(memberHeard, MEMBER_HZ) < level(memberHeard, MODERATOR_HZ) - 15,
      "the member is not sent their own voice",
    );
  });
});
