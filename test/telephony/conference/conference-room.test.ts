/**
 * Conferences that take place, end to end: created through the API, started by the scheduler,
 * attendees called through the dial plan to real phones (baresip playing tones, SIPp as a moderator
 * that answers late and hangs up, SIPp as a busy or unanswered line), the room's audio measured in
 * what each phone heard, and every state read back through the API.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { goertzelLevelDb, rmsLevelDb, SAMPLE_RATE } from "../../helpers/audio.js";
import { Baresip, heardUntil } from "../../helpers/baresip.js";
import {
  createPendingConference,
  createUser,
  startTestService,
  type TestService,
} from "../../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("baresip") || skipWithout("sipp");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

type Node = Record<string, { "#text"?: string | number | boolean } | string | undefined>;

/** An element's text, whether the parser gave it as a string or (with attributes) as an object. */
function text(node: Node, field: string): string | undefined {
  const value = node[field];
  if (value === undefined || typeof value === "string") return value;
  return value["#text"] === undefined ? undefined : String(value["#text"]);
}

async function startService(routes: Array<{ prefix: string; trunk: string }>, ringTimeoutSeconds = 45) {
  const service = await startTestService({
    sip: {
      ...loadConfig({}).sip,
      bindAddress: "127.0.0.1",
      port: 0,
      callerId: "+16045550000",
      routes,
      rtpPorts: rtpPortRange(),
      ringTimeoutSeconds,
    },
  });
  cleanups.push(() => service.close());
  diagnostics = () =>
    `\n${service.logs
      .filter((line) => !line.includes('"req') && !line.includes('"res"'))
      .slice(-30)
      .join("\n")}`;
  return service;
}

async function phone(user: string, toneHz: number): Promise<Baresip> {
  const started = await Baresip.start({ user, toneHz });
  cleanups.push(() => started.stop());
  return started;
}

interface Room {
  conferencePath: string;
  read(): Promise<{ conference: Node; attendees: Node[] }>;
}

/** A conference through the API, with attendees, set to pending; it starts `startInSeconds` from now. */
async function conference(
  api: TestService,
  auth: [string, string],
  userId: number,
  options: { numbers: string[]; extra?: string; startInSeconds?: number },
): Promise<Room> {
  // Phones that answer by themselves go straight in unless the test wants the press-1 greeting.
  const directDial = options.extra?.includes("direct-dial")
    ? ""
    : '<direct-dial type="boolean">true</direct-dial>';
  const conferencePath = await createPendingConference(
    api,
    { id: userId, auth },
    {
      numbers: options.numbers,
      startAt: new Date(Date.now() + (options.startInSeconds ?? 0) * 1000),
      extra: `<announce-attendees type="boolean">false</announce-attendees>${directDial}${options.extra ?? ""}`,
    },
  );
  return {
    conferencePath,
    async read() {
      const [one, all] = await Promise.all([
        api.request("GET", conferencePath, { auth }),
        api.request("GET", `${conferencePath}/attendees`, { auth }),
      ]);
      const list = (all.xml.attendees as { attendee?: Node | Node[] }).attendee ?? [];
      return { conference: one.xml.conference as Node, attendees: Array.isArray(list) ? list : [list] };
    },
  };
}

let diagnostics = () => "";

/** until, with what the peers said when it times out. */
function untilInRoom<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  return until(what, probe, { detail: diagnostics });
}

function statesOf(attendees: Node[]): string[] {
  return attendees.map((attendee) => text(attendee, "state") ?? "?");
}

/** The start, in seconds, of the first 100 ms window in which a frequency is clearly heard; Infinity if never. */
function firstSecondHeard(samples: Int16Array, hz: number): number {
  const window = SAMPLE_RATE / 10;
  for (let start = 0; start + window <= samples.length; start += window) {
    if (goertzelLevelDb(samples.subarray(start, start + window), hz) > -25) return start / SAMPLE_RATE;
  }
  return Number.POSITIVE_INFINITY;
}

/** The level of a frequency in its loudest 100 ms window: a short tone in a long recording. */
function loudestDb(samples: Int16Array, hz: number): number {
  const window = SAMPLE_RATE / 10;
  let loudest = Number.NEGATIVE_INFINITY;
  for (let start = 0; start + window <= samples.length; start += window / 2) {
    loudest = Math.max(loudest, goertzelLevelDb(samples.subarray(start, start + window), hz));
  }
  return loudest;
}

function heardDb(samples: Int16Array, fromSecond: number, toSecond: number, hz: number): number {
  return goertzelLevelDb(samples.subarray(fromSecond * SAMPLE_RATE, toSecond * SAMPLE_RATE), hz);
}

describe("conferences that take place", { skip, concurrency: true }, () => {
  test("starts on time, holds until the moderator answers, mixes everyone but oneself, ends when the moderator hangs up", async () => {
    const moderator = await Sipp.start({
      scenario: "uas-moderator.xml",
      // In the room 5 s: its duration must read 4 s at least, and each attendee is measured hearing
      // the other for 2.5 s after it joined.
      pauseMs: 5000,
      timeoutSeconds: 40,
    });
    cleanups.push(() => moderator.stop());
    const low = await phone("+16045550101", 440);
    const high = await phone("+16045550102", 880);
    const api = await startService([
      { prefix: "+16045550100", trunk: `sip:127.0.0.1:${moderator.sipPort}` },
      { prefix: "+16045550101", trunk: low.trunk },
      { prefix: "+16045550102", trunk: high.trunk },
    ]);
    const owner = await createUser(
      api,
      '<phone-numbers type="array"><phone-number><subscriber-number>604-555-0100</subscriber-number></phone-number></phone-numbers>',
    );
    const room = await conference(api, owner.auth, owner.id, {
      numbers: ["604-555-0101", "604-555-0102"],
      // Later than its making takes, so that the scheduler is what starts it.
      startInSeconds: 1,
    });
    const scheduledAt = Date.parse(text((await room.read()).conference, "scheduled-to-start-at") ?? "");

    await Promise.all([low.waitForEvent("CALL_ESTABLISHED"), high.waitForEvent("CALL_ESTABLISHED")]);
    const started = await room.read();
    assert.equal(text(started.conference, "state"), "started");
    const startedAt = Date.parse(text(started.conference, "started-at") ?? "");
    assert.ok(startedAt - scheduledAt <= 1000, `started ${startedAt - scheduledAt} ms after its time`);

    const connected = await untilInRoom("every attendee connected", async () => {
      const { attendees } = await room.read();
      return statesOf(attendees).every((state) => state === "connected") ? attendees : undefined;
    });
    assert.equal(connected.length, 3);
    for (const attendee of connected) assert.equal(text(attendee, "muted"), "false");

    await untilInRoom("live duration", async () => {
      const { attendees } = await room.read();
      return attendees.every((attendee) => Number(text(attendee, "duration")) >= 2) ? true : undefined;
    });

    await Promise.all([low.waitForEvent("CALL_CLOSED"), high.waitForEvent("CALL_CLOSED")]);
    assert.equal((await moderator.result()).code, 0, moderator.report());
    const ended = await untilInRoom("the conference ended", async () => {
      const read = await room.read();
      return text(read.conference, "state") === "ended" ? read : undefined;
    });
    assert.ok(text(ended.conference, "ended-at"));
    assert.deepEqual(statesOf(ended.attendees), ["disconnected", "disconnected", "disconnected"]);
    for (const attendee of ended.attendees) assert.ok(Number(text(attendee, "duration")) >= 4);

    // A phone's recording is its decoded frames, not wall-clock time: find where the other attendee
    // is first heard, which is when the moderator answered. Before it, about 3 s of hold music.
    const lowHeard = low.heard();
    const highHeard = high.heard();
    const joined = firstSecondHeard(lowHeard, 880);
    assert.ok(joined >= 1.5, `the other attendee heard after ${joined} s, before the moderator answered`);
    assert.ok(
      rmsLevelDb(lowHeard.subarray(0.3 * SAMPLE_RATE, (joined - 0.3) * SAMPLE_RATE)) > -40,
      "hold music",
    );
    assert.ok(heardDb(lowHeard, 0.3, joined - 0.3, 880) < -40, "on hold, the other attendee is not heard");
    // With the moderator in: each hears the other and not itself.
    assert.ok(
      heardDb(lowHeard, joined + 0.5, joined + 2.5, 880) > -20,
      "440 Hz phone hears the 880 Hz phone",
    );
    assert.ok(heardDb(lowHeard, joined + 0.5, joined + 2.5, 440) < -40, "440 Hz phone does not hear itself");
    const highJoined = firstSecondHeard(highHeard, 440);
    assert.ok(
      heardDb(highHeard, highJoined + 0.5, highJoined + 2.5, 440) > -20,
      "880 Hz phone hears the 440 Hz phone",
    );
    assert.ok(
      heardDb(highHeard, highJoined + 0.5, highJoined + 2.5, 880) < -40,
      "880 Hz phone does not hear itself",
    );
  });

  test("lecture mode: attendees other than the moderator join muted and reach nobody", async () => {
    const lead = await phone("+16045550110", 660);
    const low = await phone("+16045550111", 440);
    const high = await phone("+16045550112", 880);
    const api = await startService([
      { prefix: "+16045550110", trunk: lead.trunk },
      { prefix: "+16045550111", trunk: low.trunk },
      { prefix: "+16045550112", trunk: high.trunk },
    ]);
    const owner = await createUser(
      api,
      '<phone-numbers type="array"><phone-number><subscriber-number>604-555-0110</subscriber-number></phone-number></phone-numbers>',
    );
    const room = await conference(api, owner.auth, owner.id, {
      numbers: ["604-555-0111", "604-555-0112"],
      extra: '<lecture-mode type="boolean">true</lecture-mode>',
    });
    const connected = await untilInRoom("every attendee connected", async () => {
      const { attendees } = await room.read();
      return statesOf(attendees).every((state) => state === "connected") ? attendees : undefined;
    });
    assert.deepEqual(
      connected.map((attendee) => [text(attendee, "moderator"), text(attendee, "muted")]),
      [
        ["true", "false"],
        ["false", "true"],
        ["false", "true"],
      ],
    );
    // What is measured below is the first 3.5 s of each phone's call.
    await Promise.all(
      [lead, low].map((phone) =>
        heardUntil(phone, "3.5 s of the lecture", (heard) => heard.length >= 3.5 * SAMPLE_RATE),
      ),
    );
    assert.equal((await lead.command("hangup")).ok, true);
    await Promise.all([low.waitForEvent("CALL_CLOSED"), high.waitForEvent("CALL_CLOSED")]);

    const leadHeard = lead.heard();
    const lowHeard = low.heard();
    assert.ok(heardDb(leadHeard, 1, 3.5, 440) < -40, "the moderator does not hear a muted attendee");
    assert.ok(heardDb(leadHeard, 1, 3.5, 880) < -40, "the moderator does not hear the other muted attendee");
    assert.ok(heardDb(lowHeard, 1, 3.5, 660) > -20, "a muted attendee hears the moderator");
    assert.ok(heardDb(lowHeard, 1, 3.5, 880) < -40, "a muted attendee does not hear the other");
    await untilInRoom("the conference ended", async () =>
      text((await room.read()).conference, "state") === "ended" ? true : undefined,
    );
  });

  test("busy and unanswered lines end busy and no-answer; with no one left the conference ends", async () => {
    const busy = await Sipp.start({ scenario: "uas-busy.xml", timeoutSeconds: 30 });
    const unanswered = await Sipp.start({ scenario: "uas-no-answer.xml", timeoutSeconds: 30 });
    cleanups.push(
      () => busy.stop(),
      () => unanswered.stop(),
    );
    const api = await startService(
      [
        { prefix: "+16045550121", trunk: `sip:127.0.0.1:${busy.sipPort}` },
        { prefix: "+16045550122", trunk: `sip:127.0.0.1:${unanswered.sipPort}` },
      ],
      2,
    );
    const owner = await createUser(api);
    const room = await conference(api, owner.auth, owner.id, {
      numbers: ["604-555-0121", "604-555-0122", "604-555-0199"],
      extra: '<no-moderator type="boolean">true</no-moderator>',
    });
    const ended = await untilInRoom("the conference ended", async () => {
      const read = await room.read();
      return text(read.conference, "state") === "ended" ? read : undefined;
    });
    // 0199 has no route and there is no default trunk: that call fails.
    assert.deepEqual(statesOf(ended.attendees), ["busy", "no-answer", "failed"]);
    assert.equal((await busy.result()).code, 0, busy.report());
    assert.equal((await unanswered.result()).code, 0, unanswered.report());
    assert.ok(api.logs.some((line) => line.includes("No trunk configured")));
  });

  test("an attendee added while it runs is called at once and gets its extension; deleting an attendee or the conference hangs up", async () => {
    const first = await phone("+16045550131", 440);
    const second = await phone("+16045550132", 300);
    const api = await startService([
      { prefix: "+16045550131", trunk: first.trunk },
      { prefix: "+16045550132", trunk: second.trunk },
    ]);
    const owner = await createUser(api);
    const room = await conference(api, owner.auth, owner.id, {
      numbers: ["604-555-0131"],
      extra:
        '<no-moderator type="boolean">true</no-moderator><announce-attendees type="boolean">true</announce-attendees><direct-dial type="boolean">false</direct-dial>',
    });
    await first.waitForEvent("CALL_ESTABLISHED");
    // The greeting: 1 to join, then # at once, so no name is recorded and the chime announces them.
    assert.equal((await first.command("sndcode", "1#")).ok, true);
    const added = await api.request("POST", `${room.conferencePath}/attendees`, {
      auth: owner.auth,
      body: "<attendee><phone-number>604-555-0132</phone-number><extension>4,7</extension></attendee>",
    });
    assert.equal(added.status, 201);
    await second.waitForEvent("CALL_ESTABLISHED", 5000);
    assert.equal((await second.command("sndcode", "1#")).ok, true);
    const secondPath = new URL(String(added.headers.location), "http://localhost").pathname;
    await untilInRoom("both connected", async () => {
      const { attendees } = await room.read();
      return statesOf(attendees).join() === "connected,connected" ? true : undefined;
    });
    // Its extension went out as DTMF after the answer, the comma a one-second pause.
    const extension = /received event: '4'[\s\S]*received event: '7'/;
    await until("the extension typed", async () => (extension.test(second.log) ? true : undefined));
    assert.match(second.log, extension);

    assert.equal((await api.request("DELETE", secondPath, { auth: owner.auth })).status, 204);
    await second.waitForEvent("CALL_CLOSED", 5000);
    assert.equal(text((await room.read()).conference, "state"), "started", "the room goes on without it");

    assert.equal((await api.request("DELETE", room.conferencePath, { auth: owner.auth })).status, 204);
    await first.waitForEvent("CALL_CLOSED", 5000);

    // announce-attendees: the first attendee heard the chimes (660 and 880 Hz) as the second came and went;
    // neither phone sends those frequencies (440 and 300 Hz).
    const heard = first.heard();
    assert.ok(loudestDb(heard, 660) > -30, "the chime's 660 Hz is heard");
    assert.ok(loudestDb(heard, 880) > -30, "the chime's 880 Hz is heard");
  });
});
