/**
 * Browser participants end to end (issue 28): headless Chromium whose fake microphone plays a tone
 * joins a running conference by PIN through the join page, beside a baresip phone playing another.
 * The phone hears the browser and the page hears the phone (Web Audio in the page); the page's
 * mute silences the browser for the phone; the browser shows in the API's attendee list, the event
 * stream and the console's live view; a wrong PIN is refused with the dial-in throttle; and two
 * browsers and two phones in one wideband room all hear each other.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { loadConfig } from "../../../src/config.js";
import { goertzelLevelDb } from "../../helpers/audio.js";
import { Baresip, type BaresipCodec } from "../../helpers/baresip.js";
import { openPage, signIn, skipWithoutChromium } from "../../helpers/browser.js";
import { createTestDatabase, postgresOnly } from "../../helpers/databases.js";
import { EventStream } from "../../helpers/event-stream.js";
import {
  createPendingConference,
  createUser,
  startTestService,
  type TestService,
} from "../../helpers/service.js";
import { rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import {
  launchToneBrowser,
  measurePageTone,
  PAGE_HEARD_DB,
  pageToneLevel,
  type ToneBrowser,
} from "../../helpers/webrtc-browser.js";
import { textOf, type XmlNode } from "../../helpers/xml.js";

const skip = skipWithout("baresip") || skipWithoutChromium();
/** What each test started (services, phones, pages), stopped when it ends: none loads the next. */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A phone's tone at or above this (Goertzel, dBFS, over its last second) is heard. */
const HEARD_DB = -30;
/** Below this it is not: a muted browser's tone leaks nowhere near it. */
const NOT_HEARD_DB = -45;

async function phone(user: string, toneHz: number, codecs: readonly BaresipCodec[]): Promise<Baresip> {
  const started = await Baresip.start({ user, toneHz, codecs });
  cleanups.push(() => started.stop());
  return started;
}

async function startService(phones: Baresip[]): Promise<TestService> {
  const service = await startTestService({
    browserJoin: true,
    sip: {
      ...loadConfig({}).sip,
      // Every tone mixed: the default mixes the three loudest talkers, and four play at once below.
      mixTalkers: 10,
      bindAddress: "127.0.0.1",
      port: 0,
      callerId: "+16045550000",
      routes: phones.map((each) => ({ prefix: `+1${each.user.slice(2)}`, trunk: each.trunk })),
      rtpPorts: rtpPortRange(),
    },
  });
  cleanups.push(() => service.close());
  return service;
}

interface Room {
  path: string;
  owner: { id: number; auth: [string, string] };
  memberPin: string;
  moderatorPin: string;
}

/** A conference of the phones, dialled direct, no moderator, started now, every phone connected. */
async function roomOf(api: TestService, phones: Baresip[]): Promise<Room> {
  const owner = await createUser(api);
  const path = await createPendingConference(api, owner, {
    name: "Browsers",
    numbers: phones.map((each) => each.user),
    extra: `<direct-dial type="boolean">true</direct-dial><no-moderator type="boolean">true</no-moderator>
      <announce-attendees type="boolean">false</announce-attendees>`,
  });
  await until("every phone connected", async () => {
    const states = await attendeeStates(api, owner, path);
    return states.length === phones.length && states.every((state) => state === "connected")
      ? true
      : undefined;
  });
  const conference = await api.request("GET", path, { auth: owner.auth });
  const memberPin = textOf(conference.xml.conference as XmlNode, "member-pin");
  const moderatorPin = textOf(conference.xml.conference as XmlNode, "moderator-pin");
  if (memberPin === null || moderatorPin === null) throw new Error(`no PINs: ${conference.text}`);
  return { path, owner, memberPin, moderatorPin };
}

async function attendeeStates(api: TestService, owner: Room["owner"], path: string): Promise<string[]> {
  const list = await api.request("GET", `${path}/attendees`, { auth: owner.auth });
  const items = (list.xml.attendees as { attendee?: XmlNode | XmlNode[] }).attendee ?? [];
  return (Array.isArray(items) ? items : [items]).map((item) => textOf(item, "state") ?? "");
}

/** The join page of `chromium` joined with `pin`, the phone's tone measured in what it plays. */
async function joinPage(chromium: ToneBrowser, api: TestService, pin: string, toneHz: number): Promise<Page> {
  const context = await chromium.browser.newContext({ baseURL: api.httpUrl });
  cleanups.push(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto("/join");
  await page.locator("#pin").fill(pin);
  await page.locator("#join").click();
  // Connecting can stall for seconds on a loaded machine (bench/README, "Browser participants").
  await page
    .locator('#status[data-state="in-room"]')
    .waitFor({ timeout: 40_000 })
    .catch(async (error: unknown) => {
      const status = await page.locator("#status").textContent();
      const problem = await page
        .locator("#problem")
        .textContent()
        .catch(() => "");
      throw new Error(`the page is not in the room: ${status} ${problem}`, { cause: error });
    });
  await measurePageTone(page, toneHz, "#remote-audio");
  return page;
}

/** The phone's tone level over what it heard in its last second, dBFS. */
function lastSecondLevel(phone: Baresip, toneHz: number): number {
  const heard = phone.heardSoFar();
  return goertzelLevelDb(
    heard.subarray(Math.max(0, heard.length - phone.sampleRate)),
    toneHz,
    phone.sampleRate,
  );
}

let chromium: ToneBrowser;
before(async () => {
  if (skip) return;
  chromium = await launchToneBrowser(1000);
});
after(async () => {
  await chromium?.close();
});

describe("browser participants", { skip, concurrency: false }, () => {
  test("the owner joins from the console's live view beside a phone: each hears the other, and mute silences the browser", async () => {
    const deskPhone = await phone("+16045550401", 700, ["opus"]);
    const api = await startService([deskPhone]);
    const room = await roomOf(api, [deskPhone]);
    const events = await EventStream.open(`${api.httpUrl}${room.path}/events`, { auth: room.owner.auth });
    cleanups.push(async () => events.close());
    const consolePage = await openPage(chromium.browser, api.httpsUrl);
    cleanups.push(consolePage.close);
    await signIn(consolePage.page, room.owner.auth);
    await consolePage.page.getByRole("link", { name: "Browsers" }).click();
    const consoleRows = consolePage.page.locator("tbody tr").filter({ hasText: "connected" });
    await consoleRows.first().waitFor();
    assert.equal(await consoleRows.count(), 1, "the console lists the phone alone before the browser joins");

    // The live view's link opens the join page in a new tab, the moderator PIN filled in, over HTTPS.
    const [page] = await Promise.all([
      consolePage.page.context().waitForEvent("page"),
      consolePage.page.getByRole("link", { name: "Join from this browser" }).click(),
    ]);
    page.setDefaultTimeout(15_000);
    await page.locator("#pin").waitFor();
    assert.equal(await page.locator("#pin").inputValue(), room.moderatorPin);
    await page.locator("#join").click();
    await page.locator('#status[data-state="in-room"]').waitFor();
    await measurePageTone(page, 700, "#remote-audio");
    await until("the page to hear the phone's 700 Hz", async () =>
      (await pageToneLevel(page)) > PAGE_HEARD_DB ? true : undefined,
    );
    await until("the phone to hear the browser's 1 kHz", async () =>
      lastSecondLevel(deskPhone, 1000) > HEARD_DB ? true : undefined,
    );

    // In the API's list as a dial-in attendee, connected; in the event stream; in the console's live view.
    const states = await attendeeStates(api, room.owner, room.path);
    assert.deepEqual(states.sort(), ["connected", "connected"]);
    // The stream began after the phone connected: the browser is the attendee added and connected since.
    const browserAdded = await events.waitFor(
      "the browser added",
      (event) => event.type === "attendee-added",
    );
    const browserConnected = await events.waitFor(
      "the browser connected",
      (event) =>
        event.type === "attendee-connected" && event.data.attendeeId === browserAdded.data.attendeeId,
    );
    // The page's call is DTLS-SRTP, its signalling HTTPS.
    assert.equal(browserConnected.data.encryption, "tls+srtp");
    await until("the console to list the browser", async () =>
      (await consoleRows.count()) === 2 ? true : undefined,
    );

    // The page's token opens its event stream: the request log never shows it.
    const joinUrls = await page.evaluate(() =>
      performance.getEntriesByType("resource").map((entry) => entry.name),
    );
    const token = /\/join\/calls\/([^/?]+)/.exec(
      joinUrls.find((url) => url.includes("/join/calls/")) ?? "",
    )?.[1];
    assert.ok(token !== undefined, `the page asked for its room: ${joinUrls.join(", ")}`);
    assert.ok(
      api.logs.some((line) => line.includes('"/join/calls/[Redacted]')),
      "requests with a token are logged",
    );
    assert.ok(!api.logs.some((line) => line.includes(token)), "no log line holds the page's token");

    await page.locator("#mute").click();
    await page.locator('#mute[aria-pressed="true"]').waitFor();
    await until("the phone to stop hearing the muted browser", async () =>
      lastSecondLevel(deskPhone, 1000) < NOT_HEARD_DB ? true : undefined,
    );
    // The muted browser still hears the room.
    assert.ok((await pageToneLevel(page)) > PAGE_HEARD_DB, "the muted page still hears the phone");

    await events.waitFor(
      "the browser muted",
      (event) =>
        event.type === "attendee-muted" && event.data.attendeeId === browserConnected.data.attendeeId,
    );
    await page.locator("#leave").click();
    await until("the browser's attendee to be disconnected", async () => {
      const now = await attendeeStates(api, room.owner, room.path);
      return now.includes("disconnected") ? true : undefined;
    });
  });

  test("a wrong PIN in the page is refused, and after the dial-in limit the address is throttled", async () => {
    // A conference with no one to call: with browser joining on, it waits for callers.
    const api = await startService([]);
    const owner = await createUser(api);
    const path = await createPendingConference(api, owner, {
      name: "Throttled",
      numbers: [],
      extra: '<no-moderator type="boolean">true</no-moderator>',
    });
    const conference = await api.request("GET", path, { auth: owner.auth });
    const memberPin = textOf(conference.xml.conference as XmlNode, "member-pin") ?? assert.fail("no PIN");
    const room = { memberPin };
    const context = await chromium.browser.newContext({ baseURL: api.httpUrl });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto("/join");
    const wrong = room.memberPin === "111111" ? "222222" : "111111";
    await page.locator("#pin").fill(wrong);
    await page.locator("#join").click();
    await page.locator('#status[data-state="refused"]').waitFor();
    assert.match(String(await page.locator("#problem").textContent()), /PIN is not right/);
    // The dial-in limit is 10 wrong PINs in 15 minutes per caller: the page's address is one caller.
    for (let attempt = 2; attempt <= 10; attempt++) {
      const refused = await api.request("POST", "/join/calls", {
        body: JSON.stringify({ pin: wrong, offer: "v=0\r\n" }),
        headers: { "content-type": "application/json", accept: "application/json" },
      });
      assert.equal(refused.status, 403, refused.text);
    }
    await page.locator("#pin").fill(room.memberPin);
    await page.locator("#join").click();
    await page.locator('#status[data-state="refused"]').waitFor();
    assert.match(String(await page.locator("#problem").textContent()), /Too many wrong PINs/);
  });

  test("two browsers and two phones in one wideband room all hear each other", async () => {
    const secondChromium = await launchToneBrowser(1500);
    cleanups.push(() => secondChromium.close());
    const opusPhone = await phone("+16045550421", 700, ["opus"]);
    const widePhone = await phone("+16045550422", 400, ["G722"]);
    const api = await startService([opusPhone, widePhone]);
    const room = await roomOf(api, [opusPhone, widePhone]);
    // Each page measures one phone; together they cover both phones and each other.
    const first = await joinPage(chromium, api, room.memberPin, 400);
    const second = await joinPage(secondChromium, api, room.memberPin, 1000);
    await until("the first page to hear the G.722 phone", async () =>
      (await pageToneLevel(first)) > PAGE_HEARD_DB ? true : undefined,
    );
    await until("the second page to hear the first browser", async () =>
      (await pageToneLevel(second)) > PAGE_HEARD_DB ? true : undefined,
    );
    for (const [who, listener] of [
      ["the Opus phone", opusPhone],
      ["the G.722 phone", widePhone],
    ] as const)
      await until(`${who} to hear both browsers`, async () =>
        lastSecondLevel(listener, 1000) > HEARD_DB && lastSecondLevel(listener, 1500) > HEARD_DB
          ? true
          : undefined,
      );
    await until("the phones to hear each other", async () =>
      lastSecondLevel(opusPhone, 400) > HEARD_DB && lastSecondLevel(widePhone, 700) > HEARD_DB
        ? true
        : undefined,
    );
    // And the pages hear the rest: measured again for the other tones.
    await measurePageTone(first, 1500, "#remote-audio");
    await measurePageTone(second, 700, "#remote-audio");
    await until("the first page to hear the second browser", async () =>
      (await pageToneLevel(first)) > PAGE_HEARD_DB ? true : undefined,
    );
    await until("the second page to hear the Opus phone", async () =>
      (await pageToneLevel(second)) > PAGE_HEARD_DB ? true : undefined,
    );
  });
});

describe("browsers on two instances", { skip: skip || postgresOnly.skip }, () => {
  test("a conference with no attendees: a browser on the instance that does not run it is carried there, and hears one on the one that does", async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const instances: TestService[] = [];
    for (let index = 0; index < 2; index++) {
      const service = await startTestService({
        browserJoin: true,
        databaseUrl: database.url,
        sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, rtpPorts: rtpPortRange() },
      });
      cleanups.push(() => service.close());
      instances.push(service);
    }
    const first = instances[0] as TestService;
    const owner = await createUser(first);
    // No attendees at all: only the browsers will be in it.
    const path = await createPendingConference(first, owner, {
      name: "Across",
      numbers: [],
      extra: '<no-moderator type="boolean">true</no-moderator>',
    });
    const conference = await first.request("GET", path, { auth: owner.auth });
    const memberPin = textOf(conference.xml.conference as XmlNode, "member-pin") ?? assert.fail("no PIN");
    const running = await until("one instance to run the conference", async () =>
      instances.find((each) => each.logs.some((line) => line.includes('"msg":"conference started"'))),
    );
    const other = instances.find((each) => each !== running) as TestService;
    const secondChromium = await launchToneBrowser(1500);
    cleanups.push(() => secondChromium.close());
    const here = await joinPage(chromium, running, memberPin, 1500).catch((error: Error) => {
      throw new Error(
        `${error.message}\n${running.logs.filter((line) => line.includes("onferen")).join("\n")}`,
      );
    });
    const carried = await joinPage(secondChromium, other, memberPin, 1000);
    // What the instances said of the two callers, for a failure's message.
    const detail = () =>
      instances
        .flatMap((each) => each.logs.filter((line) => /dial-in|browser|handoff|internal call/.test(line)))
        .join("\n");
    await until(
      "the page on the room's instance to hear the carried browser",
      async () => ((await pageToneLevel(here)) > PAGE_HEARD_DB ? true : undefined),
      { detail },
    );
    await until(
      "the carried page to hear the other browser",
      async () => ((await pageToneLevel(carried)) > PAGE_HEARD_DB ? true : undefined),
      { detail },
    );
    assert.ok(
      other.logs.some((line) => line.includes("dial-in: caller carried to the instance running the room")),
      "the other instance carried its browser over an internal call",
    );
    const states = await attendeeStates(first, owner, path);
    assert.deepEqual(states, ["connected", "connected"]);
  });
});
