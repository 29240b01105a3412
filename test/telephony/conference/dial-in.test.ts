/**
 * What callers do in a conference, end to end with baresip phones: dial in with a PIN (member,
 * moderator, wrong three times, locked, encrypted only), press keypad commands, press no 1 in the
 * greeting, and the recording the owner downloads afterwards. States are read back through the API.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { readWav } from "../../../src/telephony/media/wav.js";
import { goertzelLevelDb, heardThroughout, rmsLevelDb, SAMPLE_RATE } from "../../helpers/audio.js";
import { Baresip, heardUntil } from "../../helpers/baresip.js";
import { testAuthority } from "../../helpers/certificates.js";
import { EventStream } from "../../helpers/event-stream.js";
import { createUser, startTestService, type TestService } from "../../helpers/service.js";
import { rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("baresip") || skipWithout("openssl");
const cleanups: Array<() => Promise<unknown>> = [];
/** The service's SIP over TLS certificate and the callers' are the test CA's, for 127.0.0.1. */
const certificates = mkdtempSync(join(tmpdir(), "bridgeline-dial-in-tls-"));
const authority = skip ? undefined : testAuthority(certificates);
cleanups.push(async () => rmSync(certificates, { recursive: true, force: true }));
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const ACCESS_NUMBER = "+16045550199";
type Node = Record<string, unknown>;

function text(node: Node | undefined, field: string): string | undefined {
  const value = node?.[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object") return String(value);
  const inner = (value as { "#text"?: unknown })["#text"];
  return inner === undefined ? undefined : String(inner);
}

/** How many wrong PINs the service logged from the caller `from` (its number as it dialled). */
function wrongPinsLogged(api: TestService, from: string): number {
  return api.logs.filter((line) => {
    if (!line.includes('"msg":"dial-in: wrong PIN"')) return false;
    return (JSON.parse(line) as { from?: string }).from === from;
  }).length;
}

/** A phone; `secure`: it calls over SIP over TLS and insists on SRTP. */
async function phone(user: string, toneHz: number, secure = false): Promise<Baresip> {
  const ca = authority as NonNullable<typeof authority>;
  const started = await Baresip.start({
    user,
    toneHz,
    ...(secure && {
      tls: { certificate: ca.issue(`phone-${user.slice(1)}`, "IP:127.0.0.1").pem, cafile: ca.ca },
      mediaenc: "srtp-mand" as const,
    }),
  });
  cleanups.push(() => started.stop());
  return started;
}

async function startService(routes: Array<{ prefix: string; trunk: string }>): Promise<TestService> {
  const ours = (authority as NonNullable<typeof authority>).issue("service", "IP:127.0.0.1");
  const service = await startTestService({
    sip: {
      ...loadConfig({}).sip,
      bindAddress: "127.0.0.1",
      port: 0,
      routes,
      rtpPorts: rtpPortRange(),
      accessNumbers: [ACCESS_NUMBER],
      tlsCertFile: ours.certFile,
      tlsKeyFile: ours.keyFile,
    },
  });
  cleanups.push(() => service.close());
  return service;
}

interface Running {
  path: string;
  memberPin: string;
  moderatorPin: string;
  attendees(): Promise<Node[]>;
  conference(): Promise<Node>;
}

/** A conference of the owner (moderator, dialled at `ownerPhone`) started now. */
async function runConference(api: TestService, options: { extra?: string } = {}) {
  const owner = await createUser(
    api,
    '<phone-numbers type="array"><phone-number><subscriber-number>604-555-0140</subscriber-number></phone-number></phone-numbers>',
  );
  const created = await api.request("POST", `/users/${owner.id}/conferences`, {
    auth: owner.auth,
    body: `<conference><name>Board call</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
      <direct-dial type="boolean">true</direct-dial>${options.extra ?? ""}</conference>`,
  });
  assert.equal(created.status, 201, created.text);
  const path = new URL(String(created.headers.location), "http://localhost").pathname;
  const conference = created.xml.conference as Node;
  assert.equal(
    (
      await api.request("PUT", path, {
        auth: owner.auth,
        body: "<conference><state>pending</state></conference>",
      })
    ).status,
    200,
  );
  const running: Running = {
    path,
    memberPin: text(conference, "member-pin") ?? "",
    moderatorPin: text(conference, "moderator-pin") ?? "",
    async attendees() {
      const list = (await api.request("GET", `${path}/attendees`, { auth: owner.auth })).xml.attendees as {
        attendee?: Node | Node[];
      };
      const all = list.attendee ?? [];
      return Array.isArray(all) ? all : [all];
    },
    async conference() {
      return (await api.request("GET", path, { auth: owner.auth })).xml.conference as Node;
    },
  };
  return { owner, running };
}

/** Dials the access number (over SIP over TLS with `tls`) and types `keys`. */
async function dialIn(caller: Baresip, api: TestService, keys: string, tls = false): Promise<void> {
  const uri = tls
    ? `sip:${ACCESS_NUMBER}@127.0.0.1:${api.service.telephony.sipTlsPort};transport=tls`
    : `sip:${ACCESS_NUMBER}@127.0.0.1:${api.service.sipPort}`;
  assert.equal((await caller.command("dial", uri)).ok, true);
  await caller.waitForEvent("CALL_ESTABLISHED");
  // Keys typed while the prompt plays count.
  assert.equal((await caller.command("sndcode", keys)).ok, true);
}

describe("callers in a conference", { skip, concurrency: true }, () => {
  test("a member dials in with the PIN, mutes itself and raises its hand; the moderator ends it from the keypad", async () => {
    const moderator = await phone("+16045550140", 660);
    const caller = await phone("+16045550141", 440);
    const api = await startService([{ prefix: "+16045550140", trunk: moderator.trunk }]);
    const { owner, running } = await runConference(api, {
      extra: '<record-audio type="boolean">true</record-audio>',
    });
    await moderator.waitForEvent("CALL_ESTABLISHED");

    await dialIn(caller, api, `${running.memberPin}#`);
    const joined = await until("the caller in the room", async () => {
      const attendees = await running.attendees();
      const dialled = attendees.find((attendee) => text(attendee, "dial-in") === "true");
      return text(dialled, "state") === "connected" ? dialled : undefined;
    });
    assert.equal(text(joined, "phone-number-subscriber-number"), "6045550141", "matched by caller ID");
    assert.equal(text(joined, "moderator"), "false");
    assert.equal(text(joined, "muted"), "false");

    // Talk a little first, until each has heard the other for a second: the recording must hold both
    // voices.
    await Promise.all([
      heardUntil(caller, "the moderator for a second", (heard) => heardThroughout(heard, 660, 1)),
      heardUntil(moderator, "the caller for a second", (heard) => heardThroughout(heard, 440, 1)),
    ]);
    const callerField = async (field: string) =>
      text(
        (await running.attendees()).find((a) => text(a, "dial-in") === "true"),
        field,
      );
    const conferenceField = async (field: string) => text(await running.conference(), field);
    /** Presses keys on a phone, then waits until the API shows `expected`. */
    const press = async (
      who: Baresip,
      keys: string,
      read: () => Promise<string | undefined>,
      expected: string,
    ) => {
      assert.equal((await who.command("sndcode", keys)).ok, true);
      await until(`${keys} to give ${expected}`, async () =>
        (await read()) === expected ? true : undefined,
      );
    };

    await press(caller, "*6", () => callerField("muted"), "true");
    await press(caller, "*6", () => callerField("muted"), "false");
    await press(caller, "*6", () => callerField("muted"), "true");
    await press(caller, "*7", () => callerField("hand-up"), "true");
    // *4: the next raised hand is unmuted and lowered.
    await press(moderator, "*4", () => callerField("hand-up"), "false");
    assert.equal(await callerField("muted"), "false");
    await press(moderator, "*3", () => callerField("muted"), "true");
    await press(moderator, "*2", () => conferenceField("lecture-mode"), "true");
    // Lecture mode off unmutes the members.
    await press(moderator, "*2", () => conferenceField("lecture-mode"), "false");
    assert.equal(await callerField("muted"), "false");
    await press(moderator, "*1", () => conferenceField("dial-in-locked"), "true");
    await press(moderator, "*8", () => conferenceField("record-audio"), "false");
    await press(moderator, "*8", () => conferenceField("record-audio"), "true");

    assert.equal((await moderator.command("sndcode", "*9")).ok, true);
    await caller.waitForEvent("CALL_CLOSED");
    await moderator.waitForEvent("CALL_CLOSED");
    const ended = await until("ended", async () => {
      const conference = await running.conference();
      return text(conference, "state") === "ended" ? conference : undefined;
    });
    assert.ok(text(ended, "ended-at"));

    // record-audio: the room's mix, downloadable by the owner, holds the moderator's 660 Hz and the
    // caller's 440 Hz.
    const authorization = `Basic ${Buffer.from(owner.auth.join(":")).toString("base64")}`;
    const download = await until("the recording", async () => {
      const response = await fetch(`${api.httpUrl}${running.path}/recording`, { headers: { authorization } });
      return response.status === 200 ? response : undefined;
    });
    assert.equal(download.headers.get("content-type"), "audio/wav");
    const recording = readWav(Buffer.from(await download.arrayBuffer()));
    assert.ok(recording.samples.length > 8000 * 2, `${recording.samples.length} samples recorded`);
    assert.ok(goertzelLevelDb(recording.samples, 660) > -30, "the moderator is in the recording");
    assert.ok(goertzelLevelDb(recording.samples, 440) > -30, "the caller is in the recording");
    // The caller heard the moderator.
    assert.ok(goertzelLevelDb(caller.heard(), 660) > -30, "the caller hears the moderator");
  });

  test("three wrong PINs end the call; a locked conference refuses members but takes the moderator; made encrypted only, it drops and refuses the plain calls and takes one over TLS with SRTP", async () => {
    const moderator = await phone("+16045550140", 660);
    const wrong = await phone("+16045550142", 440);
    const member = await phone("+16045550143", 440);
    const second = await phone("+16045550144", 440);
    const plain = await phone("+16045550145", 440);
    const secure = await phone("+16045550146", 440, true);
    const api = await startService([{ prefix: "+16045550140", trunk: moderator.trunk }]);
    const { owner, running } = await runConference(api, {
      extra: '<dial-in-locked type="boolean">true</dial-in-locked>',
    });
    const conferenceId = Number(running.path.split("/").pop());
    const stream = await EventStream.open(
      `${api.httpUrl}/users/${owner.id}/conferences/${conferenceId}/events`,
      { auth: owner.auth },
    );
    cleanups.push(async () => stream.close());
    await moderator.waitForEvent("CALL_ESTABLISHED");

    // Three callers at the PIN prompt at once, none changing what the others meet: one types wrong
    // PINs, one the member PIN of the locked conference, one the moderator PIN.
    const [admitted] = await Promise.all([
      (async () => {
        await dialIn(second, api, `${running.moderatorPin}#`);
        return until("the moderator-PIN caller in the room", async () => {
          const found = (await running.attendees()).find(
            (a) => text(a, "phone-number-subscriber-number") === "6045550144",
          );
          return text(found, "state") === "connected" ? found : undefined;
        });
      })(),
      (async () => {
        assert.equal(
          (await wrong.command("dial", `sip:${ACCESS_NUMBER}@127.0.0.1:${api.service.sipPort}`)).ok,
          true,
        );
        await wrong.waitForEvent("CALL_ESTABLISHED");
        for (let attempt = 1; attempt <= 3; attempt++) {
          assert.equal((await wrong.command("sndcode", "000000#")).ok, true);
          // The next PIN is typed once this one was refused, as a caller does after "invalid PIN".
          await until(`wrong PIN ${attempt} refused`, async () =>
            wrongPinsLogged(api, "+16045550142") >= attempt ? true : undefined,
          );
        }
        await wrong.waitForEvent("CALL_CLOSED", 30_000);
      })(),
      (async () => {
        await dialIn(member, api, `${running.memberPin}#`);
        await member.waitForEvent("CALL_CLOSED", 30_000);
      })(),
    ]);
    assert.ok(admitted);
    assert.equal(wrongPinsLogged(api, "+16045550142"), 3, "three wrong PINs, then the call ended");
    assert.equal(
      (await running.attendees()).filter((a) => text(a, "phone-number-subscriber-number") === "6045550143")
        .length,
      0,
      "the refused member was not added",
    );
    assert.equal(text(admitted, "encryption"), "none");

    // Encrypted only from now on: the moderator's call and the second caller's (plain SIP and RTP)
    // hear why and are hung up; a plain caller is refused at the PIN; one over TLS with SRTP joins.
    const secured = await api.request("PUT", running.path, {
      auth: owner.auth,
      body: '<conference><encrypted-only type="boolean">true</encrypted-only></conference>',
    });
    assert.equal(secured.status, 200, secured.text);
    await dialIn(plain, api, `${running.moderatorPin}#`);
    await dialIn(secure, api, `${running.moderatorPin}#`, true);
    await Promise.all([
      moderator.waitForEvent("CALL_CLOSED", 15_000),
      second.waitForEvent("CALL_CLOSED", 15_000),
      plain.waitForEvent("CALL_CLOSED", 15_000),
    ]);
    const connected = await stream.waitFor(
      "the encrypted caller connected",
      (event) => event.type === "attendee-connected" && event.data.encryption === "tls+srtp",
    );
    const attendees = await running.attendees();
    const byNumber = (number: string) =>
      attendees.find((a) => text(a, "phone-number-subscriber-number") === number);
    assert.equal(text(byNumber("6045550146"), "state"), "connected");
    assert.equal(text(byNumber("6045550146"), "encryption"), "tls+srtp");
    assert.equal(text(byNumber("6045550146"), "id"), String(connected.data.attendeeId));
    assert.equal(text(byNumber("6045550144"), "state"), "disconnected");
    assert.equal(byNumber("6045550145"), undefined, "the refused plain caller was not added");
    assert.equal(text(await running.conference(), "state"), "started");
  });

  // The greeting's timing (two tries of 6 s, then goodbye) is proven on a fake clock in
  // test/conference/greeting.test.ts; here a phone presses another key in each try instead of waiting.
  test("an attendee who does not press 1 in either try of the greeting is not let in and ends no-answer", async () => {
    const machine = await phone("+16045550150", 440);
    const api = await startService([{ prefix: "+16045550150", trunk: machine.trunk }]);
    const owner = await createUser(api);
    const created = await api.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: `<conference><name>Greeting</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
        <no-moderator type="boolean">true</no-moderator></conference>`,
    });
    const path = new URL(String(created.headers.location), "http://localhost").pathname;
    await api.request("POST", `${path}/attendees`, {
      auth: owner.auth,
      body: "<attendee><phone-number>604-555-0150</phone-number></attendee>",
    });
    await api.request("PUT", path, {
      auth: owner.auth,
      body: "<conference><state>pending</state></conference>",
    });
    await machine.waitForEvent("CALL_ESTABLISHED");
    for (let attempt = 0; attempt < 2; attempt++) {
      // Half a second of the invitation heard first, in this try.
      const tryStart = machine.heardSoFar().length;
      await heardUntil(machine, `the invitation, try ${attempt + 1}`, (heard) => {
        const sinceTry = heard.subarray(tryStart);
        return sinceTry.length >= SAMPLE_RATE / 2 && rmsLevelDb(sinceTry) > -40;
      });
      assert.equal((await machine.command("sndcode", "5")).ok, true);
    }
    await machine.waitForEvent("CALL_CLOSED", 20_000);
    // The room records the outcome just after it hangs up.
    const attendees = await until("the attendee recorded as no-answer", async () => {
      const listed = (await api.request("GET", `${path}/attendees`, { auth: owner.auth })).text;
      return /<state>(?!calling)/.test(listed) ? listed : undefined;
    });
    assert.match(attendees, /<state>no-answer<\/state>/);
    // It heard the invitation (spoken with the owner's and the conference's names) in both tries.
    assert.ok(rmsLevelDb(machine.heard()) > -40, "the greeting was played");
  });
});
