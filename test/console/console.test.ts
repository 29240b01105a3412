/**
 * The moderator console end to end: the real service serving the built page to headless Chromium,
 * a conference whose attendees are baresip phones on loopback, and every effect checked where it
 * lands: in the page (without a reload), in the XML API, and in what the phones hear.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parse } from "csv-parse/sync";
import { DateTime } from "luxon";
import type { Browser, Page } from "playwright-core";
import { loadConfig } from "../../src/config.js";
import type { NewCallRecord } from "../../src/domain/call-record.js";
import { recordCall } from "../../src/store/call-records.js";
import { goertzelLevelDb, SAMPLE_RATE } from "../helpers/audio.js";
import { seriousViolations } from "../helpers/axe.js";
import { Baresip } from "../helpers/baresip.js";
import { launchChromium, openPage, signIn, skipWithoutChromium } from "../helpers/browser.js";
import { testAuthority } from "../helpers/certificates.js";
import { createTestDatabase, postgresOnly } from "../helpers/databases.js";
import { createUser, startTestService, type TestService } from "../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";
import { type Auth, itemsOf, textOf, type XmlNode } from "../helpers/xml.js";

const skip = skipWithoutChromium() || skipWithout("baresip") || skipWithout("openssl");
const cleanups: Array<() => Promise<unknown>> = [];
/** A test CA: the service calls the moderator's phone over SIP over TLS and checks its certificate. */
const certificates = mkdtempSync(join(tmpdir(), "bridgeline-console-tls-"));
const authority = skip ? undefined : testAuthority(certificates);
cleanups.push(async () => rmSync(certificates, { recursive: true, force: true }));
let browser: Browser;
/** Where the test's screenshots go, replaced on each run; docs/images/console-live.png is a copy of one. */
const screenshots = join(tmpdir(), "bridgeline-console-screenshots");

before(async () => {
  if (skip) return;
  // The page under test is the current source, built as `npm install` builds it.
  execFileSync(process.execPath, [
    fileURLToPath(new URL("../../scripts/build-console.mjs", import.meta.url)),
  ]);
  mkdirSync(screenshots, { recursive: true });
  browser = await launchChromium();
  cleanups.push(() => browser.close());
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function phone(user: string, toneHz: number): Promise<Baresip> {
  const started = await Baresip.start({ user, toneHz });
  cleanups.push(() => started.stop());
  return started;
}

/** A phone reached over SIP over TLS (its certificate the test CA's) that takes SRTP when offered. */
async function securePhone(user: string, toneHz: number): Promise<{ phone: Baresip; trunk: string }> {
  const ca = authority as NonNullable<typeof authority>;
  const started = await Baresip.start({
    user,
    toneHz,
    tls: { certificate: ca.issue(`phone-${user.slice(1)}`, "IP:127.0.0.1").pem, cafile: ca.ca },
    mediaenc: "srtp",
  });
  cleanups.push(() => started.stop());
  return { phone: started, trunk: `sip:127.0.0.1:${started.tlsPort};transport=tls` };
}

async function startService(routes: Array<{ prefix: string; trunk: string }> = []): Promise<TestService> {
  const service = await startTestService({
    sip: {
      ...loadConfig({}).sip,
      bindAddress: "127.0.0.1",
      port: 0,
      routes,
      rtpPorts: rtpPortRange(),
      accessNumbers: ["+16045550199"],
      tlsCaFile: (authority as NonNullable<typeof authority>).ca,
    },
  });
  cleanups.push(() => service.close());
  return service;
}

/** A started conference of the owner (the moderator) with the attendees, dialled at once. */
async function startConference(
  api: TestService,
  owner: { id: number; auth: Auth },
  name: string,
  attendees: Array<{ name: string; number: string }>,
): Promise<string> {
  const created = await api.request("POST", `/users/${owner.id}/conferences`, {
    auth: owner.auth,
    body: `<conference><name>${name}</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
      <direct-dial type="boolean">true</direct-dial><announce-attendees type="boolean">false</announce-attendees></conference>`,
  });
  assert.equal(created.status, 201, created.text);
  const path = new URL(String(created.headers.location), "http://localhost").pathname;
  for (const attendee of attendees) {
    const added = await api.request("POST", `${path}/attendees`, {
      auth: owner.auth,
      body: `<attendee><name>${attendee.name}</name><phone-number>${attendee.number}</phone-number></attendee>`,
    });
    assert.equal(added.status, 201, added.text);
  }
  const pending = await api.request("PUT", path, {
    auth: owner.auth,
    body: "<conference><state>pending</state></conference>",
  });
  assert.equal(pending.status, 200, pending.text);
  return path;
}

/** The sample where the last 100 ms window in which a frequency is clearly heard ends; 0 if never. */
function lastSampleHeard(samples: Int16Array, hz: number): number {
  const window = SAMPLE_RATE / 10;
  for (let end = samples.length; end - window >= 0; end -= window / 2) {
    if (goertzelLevelDb(samples.subarray(end - window, end), hz) > -25) return end;
  }
  return 0;
}

/** A row of the view's attendees table, by the attendee's name. */
function attendeeRow(page: Page, name: string) {
  return page
    .getByRole("region", { name: /^Attendees/ })
    .locator("tbody tr")
    .filter({ hasText: name });
}

/** The view's table of calls that are over (named by its caption). */
function callsTable(page: Page) {
  return page.getByRole("table", { name: /^Each call once it is over/ });
}

function heardDb(samples: Int16Array, fromSample: number, toSample: number, hz: number): number {
  return goertzelLevelDb(samples.subarray(Math.max(0, fromSample), toSample), hz);
}

describe("the moderator console", { skip }, () => {
  test("a moderator signs in, watches phones join and raise a hand, mutes one, and ends the call", async () => {
    // The moderator's phone is called over SIP over TLS with SRTP; Ann's and Bob's plainly.
    const { phone: moderatorPhone, trunk: moderatorTrunk } = await securePhone("+16045550150", 660);
    const ann = await phone("+16045550151", 440);
    const bob = await phone("+16045550152", 880);
    const api = await startService([
      { prefix: "+16045550150", trunk: moderatorTrunk },
      { prefix: "+16045550151", trunk: ann.trunk },
      { prefix: "+16045550152", trunk: bob.trunk },
    ]);
    const owner = await createUser(
      api,
      `<time-zone>Pacific Time (US &amp; Canada)</time-zone>
       <phone-numbers type="array"><phone-number><subscriber-number>604-555-0150</subscriber-number></phone-number></phone-numbers>`,
    );
    const path = await startConference(api, owner, "Weekly sync", [
      { name: "Ann Low", number: "604-555-0151" },
    ]);
    await Promise.all([
      moderatorPhone.waitForEvent("CALL_ESTABLISHED"),
      ann.waitForEvent("CALL_ESTABLISHED"),
    ]);
    const annJoinedAt = Date.now();

    const { page, problems, close } = await openPage(browser, api.httpsUrl);
    cleanups.push(close);
    page.setDefaultTimeout(15_000);
    await signIn(page, owner.auth);

    // The list: the running conference under Live, its time in the owner's zone (Pacific).
    const live = page.getByRole("region", { name: /^Live/ });
    const entry = live.getByRole("listitem").filter({ hasText: "Weekly sync" });
    await entry.waitFor();
    assert.match(String(await entry.textContent()), /Started .*P[SD]T/);
    await entry.getByRole("link", { name: "Weekly sync" }).click();

    await page.getByRole("heading", { level: 1, name: "Weekly sync" }).waitFor();
    await page.locator("dl.facts").getByText("+16045550199").waitFor();
    await page
      .getByRole("status")
      .filter({ hasText: /^Live$/ })
      .waitFor();
    // A mark that a reload would wipe: everything below must happen in this one document.
    await page.evaluate(() => {
      (window as unknown as { unreloaded: boolean }).unreloaded = true;
    });
    const row = (name: string) => attendeeRow(page, name);
    await row("Ann Low").getByText("connected", { exact: true }).waitFor();
    assert.match(String(await row("Ann Low").textContent()), /\+1 604-555-0151/);
    // Each call's encryption, as the API tells it.
    const encryption = (name: string) => row(name).locator('td[data-label="Encryption"]');
    await encryption("Test User").getByText("TLS + SRTP", { exact: true }).waitFor();
    await encryption("Ann Low").getByText("None", { exact: true }).waitFor();
    await page.getByText("Encrypted calls only: off").waitFor();

    // Added from the page, Bob is called at once and shows up connected without a reload.
    await page.getByLabel("Name", { exact: true }).fill("Bob High");
    await page.getByLabel("Phone number").fill("604-555-0152");
    await page.getByRole("button", { name: "Add and call" }).click();
    await bob.waitForEvent("CALL_ESTABLISHED");
    await row("Bob High").getByText("connected", { exact: true }).waitFor();
    await encryption("Bob High").getByText("None", { exact: true }).waitFor();
    // Its time on the call ticks without any event.
    const timeCell = row("Bob High").locator('td[data-label="Time on call"]');
    const firstReading = await timeCell.textContent();
    await until("the time on the call to tick", async () =>
      (await timeCell.textContent()) !== firstReading ? true : undefined,
    );

    // Bob hangs up; the page shows it and calls him again.
    assert.equal((await bob.command("hangup")).ok, true);
    await row("Bob High").getByText("disconnected", { exact: true }).waitFor();
    // His call is among the calls that are over (its call-ended event read it), still without a reload.
    const bobsCalls = callsTable(page).getByRole("row").filter({ hasText: "Bob High" });
    await bobsCalls.getByText("Hung up by the attendee", { exact: false }).waitFor();
    assert.match(String(await bobsCalls.locator('td[data-label="Outcome"]').textContent()), /^200 OK/);
    assert.equal(await bobsCalls.locator('td[data-label="Direction"]').textContent(), "Outbound");
    await page.getByRole("button", { name: "Call Bob High again" }).click();
    await until("Bob's phone to answer a second call", async () =>
      bob.events.filter((event) => event.type === "CALL_ESTABLISHED").length === 2 ? true : undefined,
    );
    await row("Bob High").getByText("connected", { exact: true }).waitFor();

    // Ann raises her hand on the keypad.
    assert.equal((await ann.command("sndcode", "*7")).ok, true);
    await row("Ann Low").getByText("Raised").waitFor();
    // Bob's tone is speech to the talk detector.
    await row("Bob High").getByText("Talking").waitFor();
    // Those talking before the page opened, and since Bob's hang-up, show it too.
    await row("Ann Low").getByText("Talking").waitFor();
    await row("Test User").getByText("Talking").waitFor();

    await page.screenshot({ path: join(screenshots, "console-live-desktop.png"), fullPage: true });
    await page.setViewportSize({ width: 375, height: 812 });
    await page.screenshot({ path: join(screenshots, "console-live-phone.png"), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });

    // Mute Bob from the keyboard: the API says so, and Ann no longer hears his 880 Hz.
    await page.getByRole("button", { name: "Mute Bob High" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Unmute Bob High" }).waitFor();
    await page.getByRole("status").filter({ hasText: "Muted Bob High." }).waitFor();
    const attendees = itemsOf(
      await api.request("GET", `${path}/attendees`, { auth: owner.auth }),
      "attendees",
      "attendee",
    );
    const bobXml = attendees.find((attendee) => textOf(attendee, "name") === "Bob High") as XmlNode;
    assert.equal(textOf(bobXml, "muted"), "true");
    const mutedAt = Date.now();
    // Long enough a stretch of the call with Bob muted to tell it from the end of the call.
    await new Promise((resolve) => setTimeout(resolve, 3000));

    // Room settings from the page reach the API.
    await page.getByRole("button", { name: "Lock dial-in" }).click();
    await page.getByRole("button", { name: "Unlock dial-in" }).waitFor();
    await page.getByRole("button", { name: "Start recording" }).click();
    await page.getByRole("link", { name: "Download the recording (WAV)" }).waitFor();
    const settings = (await api.request("GET", path, { auth: owner.auth })).xml.conference as XmlNode;
    assert.equal(textOf(settings, "dial-in-locked"), "true");
    assert.equal(textOf(settings, "record-audio"), "true");

    // Hanging up from the page removes Ann from the conference.
    await page.getByRole("button", { name: "Hang up Ann Low" }).click();
    await ann.waitForEvent("CALL_CLOSED", 15_000);
    await row("Ann Low").waitFor({ state: "detached" });

    // End it, after the confirm step: every phone hangs up and the page says ended.
    // The confirm step takes the focus, so Enter confirms.
    await page.getByRole("button", { name: "End conference" }).click();
    await page.getByRole("button", { name: "End for everyone" }).waitFor();
    await page.waitForFunction(() => document.activeElement?.textContent?.trim() === "End for everyone");
    await page.keyboard.press("Enter");
    const outcome = page.getByText(/^(Conference ended\.|Could not end the conference.*)$/);
    await outcome.waitFor();
    assert.equal(await outcome.textContent(), "Conference ended.");
    await Promise.all([
      // The room takes the request on its next refresh, then announces the end for 2.5 s.
      moderatorPhone.waitForEvent("CALL_CLOSED", 20_000),
      until("Bob's second call to close", async () =>
        bob.events.filter((event) => event.type === "CALL_CLOSED").length === 2 ? true : undefined,
      ),
    ]);
    await page.locator("dl.facts .state-ended").waitFor();
    await row("Bob High").getByText("disconnected", { exact: true }).waitFor();
    // Every call is over and recorded: Ann's outlives her removal (named by the number called).
    const calls = callsTable(page).getByRole("row");
    await calls
      .filter({ hasText: "+16045550151" })
      .getByText("Hung up by the service: the attendee was deleted")
      .waitFor();
    await calls
      .filter({ hasText: "Test User" })
      .getByText(/^Hung up by the service: the conference ended/)
      .waitFor();
    await until("both of Bob's calls to be listed", async () =>
      (await bobsCalls.count()) === 2 ? true : undefined,
    );
    const ended = (await api.request("GET", path, { auth: owner.auth })).xml.conference as XmlNode;
    assert.equal(textOf(ended, "state"), "ended");
    assert.equal(
      await page.evaluate(() => (window as unknown as { unreloaded?: boolean }).unreloaded),
      true,
      "the page was never reloaded",
    );
    assert.deepEqual(problems, []);

    // What Ann heard (her phone writes it out when the call ends): Bob's 880 Hz until the mute, then
    // only the moderator's 660 Hz. The recording runs on decoded frames, not the wall clock, so the
    // mute is found in it and checked to lie near where the wall clock puts it.
    const annHeard = ann.heard();
    const lastBob = lastSampleHeard(annHeard, 880);
    const expected = ((mutedAt - annJoinedAt) / 1000) * SAMPLE_RATE;
    assert.ok(
      Math.abs(lastBob - expected) < 1.5 * SAMPLE_RATE,
      `Bob last heard at ${lastBob / SAMPLE_RATE} s of Ann's call, muted at about ${expected / SAMPLE_RATE} s`,
    );
    assert.ok(
      heardDb(annHeard, lastBob - 1.2 * SAMPLE_RATE, lastBob - 0.2 * SAMPLE_RATE, 880) > -20,
      "Ann heard Bob",
    );
    const afterMute = lastBob + 0.3 * SAMPLE_RATE;
    assert.ok(annHeard.length - afterMute > 2.5 * SAMPLE_RATE, "the call went on for seconds after the mute");
    assert.ok(heardDb(annHeard, afterMute, annHeard.length, 880) < -40, "muted, Bob reached no one");
    assert.ok(
      heardDb(annHeard, afterMute, annHeard.length - 0.3 * SAMPLE_RATE, 660) > -20,
      "Ann still heard the moderator",
    );
  });

  test("a past conference lists its calls with outcome and quality, and downloads them as CSV", async () => {
    const api = await startTestService();
    cleanups.push(() => api.close());
    const owner = await createUser(api, "<time-zone>Pacific Time (US &amp; Canada)</time-zone>");
    const created = await api.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: "<conference><name>Quarterly review</name><scheduled-to-start-at>2026-11-03T18:00:00Z</scheduled-to-start-at></conference>",
    });
    assert.equal(created.status, 201, created.text);
    const conferenceId = Number(textOf(created.xml.conference as XmlNode, "id"));
    const attendeeIds: number[] = [];
    for (const [name, number] of [
      ["Ann Low", "604-555-0111"],
      ["Bob High", "604-555-0122"],
    ]) {
      const added = await api.request("POST", `/users/${owner.id}/conferences/${conferenceId}/attendees`, {
        auth: owner.auth,
        body: `<attendee><name>${name}</name><phone-number>${number}</phone-number></attendee>`,
      });
      assert.equal(added.status, 201, added.text);
      attendeeIds.push(Number(textOf(added.xml.attendee as XmlNode, "id")));
    }
    // Two calls as the room records them (store/call-records.ts), then the conference over.
    const answered: NewCallRecord = {
      attendeeId: attendeeIds[0] as number,
      direction: "outbound",
      number: "+16045550111",
      route: "sip:carrier.example;transport=tls",
      instance: "bridgeline-a",
      invitedAt: "2026-11-03T18:00:00.250Z",
      answeredAt: "2026-11-03T18:00:04.750Z",
      endedAt: "2026-11-03T18:02:05.100Z",
      sipStatus: 200,
      sipReason: "OK",
      cause: { protocol: "Q.850", cause: 16, text: "Normal call clearing" },
      hungUpBy: "attendee",
      endReason: "hung up",
      codec: "G722",
      srtp: true,
      tls: true,
      callerVerification: null,
      quality: {
        packetsSent: 6000,
        packetsReceived: 5820,
        lossShare: 0.03,
        remoteLossShare: 0.0291234,
        jitterMs: 21.34,
        remoteJitterMs: 18,
        roundTripMs: 42.5,
        concealmentShare: 0.031,
        mos: 3.912,
      },
    };
    const busy: NewCallRecord = {
      ...answered,
      attendeeId: attendeeIds[1] as number,
      number: "+16045550122",
      answeredAt: null,
      endedAt: "2026-11-03T18:00:03.000Z",
      sipStatus: 486,
      sipReason: "Busy Here",
      cause: { protocol: "Q.850", cause: 17, text: "User busy" },
      hungUpBy: null,
      endReason: "486 Busy Here",
      codec: null,
      srtp: false,
      tls: false,
      quality: null,
    };
    await api.inspect(async (db) => {
      const store = { db, dialect: "sqlite" as const, close: async () => {} };
      for (const record of [answered, busy])
        await recordCall(store, { userId: owner.id, conferenceId }, record, new Date());
      await db
        .updateTable("conferences")
        .set({ state: "ended", started_at: "2026-11-03T18:00:00.000Z", ended_at: "2026-11-03T18:30:00.000Z" })
        .where("id", "=", conferenceId)
        .execute();
    });

    const { page, problems, close } = await openPage(browser, api.httpsUrl);
    cleanups.push(close);
    page.setDefaultTimeout(15_000);
    await signIn(page, owner.auth);
    await page.getByRole("region", { name: /^Past/ }).getByRole("link", { name: "Quarterly review" }).click();
    await page.getByRole("heading", { level: 2, name: "Calls (2)" }).waitFor();
    const rows = callsTable(page).getByRole("row");
    /** A call's cells by their column, as shown (an outcome's lines, one a line). */
    const cells = async (name: string) => {
      const tds = rows.filter({ has: page.getByRole("rowheader", { name }) }).locator("td");
      const labels = await tds.evaluateAll((all) => all.map((td) => (td as HTMLElement).dataset.label));
      const texts = await tds.allInnerTexts();
      return Object.fromEntries(labels.map((label, index) => [label, texts[index]])) as Record<
        string,
        string
      >;
    };
    // The answered call: its outcome line by line, MOS to one decimal, loss both ways, in the owner's zone.
    const { Started: annStarted, ...ann } = await cells("Ann Low");
    assert.match(annStarted ?? "", /^Tue, Nov 3, 2026, 10:00\sAM PST$/);
    assert.deepEqual(ann, {
      Direction: "Outbound",
      Duration: "2:00",
      Outcome: "200 OK\nQ.850 16: Normal call clearing\nHung up by the attendee",
      Codec: "G722, SRTP",
      MOS: "3.9",
      "Loss in / out": "3.0% / 2.9%",
      Jitter: "21 ms",
      "Round trip": "43 ms",
    });
    // The busy one: no answer, no media, nothing measured.
    const { Started: bobStarted, ...bob } = await cells("Bob High");
    assert.match(bobStarted ?? "", /^Tue, Nov 3, 2026, 10:00\sAM PST$/);
    assert.deepEqual(bob, {
      Direction: "Outbound",
      Duration: "—",
      Outcome: "486 Busy Here\nQ.850 17: User busy",
      Codec: "—",
      MOS: "—",
      "Loss in / out": "—",
      Jitter: "—",
      "Round trip": "—",
    });
    assert.deepEqual(await callsTable(page).getByRole("columnheader").allTextContents(), [
      "Attendee",
      "Direction",
      "Started",
      "Duration",
      "Outcome",
      "Codec",
      "MOS",
      "Loss in / out",
      "Jitter",
      "Round trip",
    ]);

    await page.screenshot({ path: join(screenshots, "console-calls-desktop.png"), fullPage: true });
    await page.setViewportSize({ width: 375, height: 812 });
    await callsTable(page).scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(screenshots, "console-calls-phone.png") });
    await page.setViewportSize({ width: 1280, height: 900 });

    // The CSV, from the keyboard: the link sends the session cookie, and the browser's Accept admits CSV.
    const link = page.getByRole("link", { name: "Download the calls (CSV)" });
    await link.focus();
    const [download] = await Promise.all([page.waitForEvent("download"), page.keyboard.press("Enter")]);
    assert.equal(download.suggestedFilename(), `conference-${conferenceId}-calls.csv`);
    const csv = readFileSync(await download.path(), "utf8");
    const records = parse(csv, { columns: true }) as Record<string, string>[];
    assert.deepEqual(
      records.map((record) => [record.attendee_id, record.sip_status, record.invited_at, record.mos]),
      [
        [String(attendeeIds[0]), "200", "2026-11-03T18:00:00.250Z", "3.912"],
        [String(attendeeIds[1]), "486", "2026-11-03T18:00:00.250Z", ""],
      ],
    );
    assert.equal(records[1]?.cause_text, "User busy");
    assert.deepEqual(problems, []);
  });

  test("a new user signs up, keeps contacts, schedules a conference read in their zone, and it runs, ends and is looked back on", {
    skip: skipWithout("sipp"),
  }, async () => {
    // The carrier: SIPp answers the three attendees' calls and holds each until the service hangs up.
    const carrier = await Sipp.start({ scenario: "uas-answer-until-bye.xml", calls: 3, timeoutSeconds: 60 });
    cleanups.push(() => carrier.stop());
    const api = await startService([{ prefix: "+1604555017", trunk: carrier.uri() }]);
    const { page, problems, close } = await openPage(browser, api.httpsUrl);
    cleanups.push(close);
    page.setDefaultTimeout(15_000);
    /** axe-core on the view as it stands: no serious or critical violation. */
    const accessible = async (view: string) =>
      assert.deepEqual(await seriousViolations(page), [], `axe-core on ${view}`);
    const heading = (name: string) => page.getByRole("heading", { level: 1, name }).waitFor();
    const notice = (text: string) => page.getByRole("status").filter({ hasText: text }).waitFor();
    // What the page asks of the API (its generated client): every answer should be JSON.
    const apiAnswers: string[] = [];
    page.on("response", (response) => {
      const { pathname } = new URL(response.url());
      // Event streams and the recording (asked with HEAD: no body) are of other types.
      if (
        /^\/(users|current|billing-packages|access-numbers)\b/.test(pathname) &&
        !/\/(events|recording)$/.test(pathname)
      )
        apiAnswers.push(
          `${response.request().method()} ${pathname} ${response.headers()["content-type"] ?? ""}`,
        );
    });

    // A browser in Vancouver, a zone the API does not list by that name: sign-up offers the listed
    // zone on the same offsets, Pacific Time.
    const devTools = await page.context().newCDPSession(page);
    await devTools.send("Emulation.setTimezoneOverride", { timezoneId: "America/Vancouver" });
    // Sign-up from the sign-in page; the API's own refusal shows on the form.
    await page.goto("/console/");
    await heading("Bridgeline console");
    await accessible("the sign-in page");
    await page.getByRole("link", { name: "Create an account" }).click();
    await heading("Create an account");
    const email = `planner-${process.pid}@example.com`;
    await page.getByLabel("Name").fill("Pat Planner");
    await page.getByLabel("E-mail address").fill(email);
    await page.getByLabel("Password", { exact: true }).fill("correct horse");
    await page.getByLabel("Password again").fill("correct horse");
    assert.equal(await page.getByLabel("Time zone").inputValue(), "Pacific Time (US & Canada)");
    await page.getByLabel("Billing package").selectOption({ label: "Professional" });
    await accessible("the sign-up page");
    await page.getByRole("button", { name: "Create the account" }).click();
    await page.getByRole("alert").getByText("terms-of-service must be accepted").waitFor();
    await page.getByLabel("I accept the terms of service").check();
    await page.getByRole("button", { name: "Create the account" }).click();
    await heading("Conferences");
    const user = (await api.request("GET", "/current", { auth: [email, "correct horse"] })).xml
      .user as XmlNode;
    const userId = Number(textOf(user, "id"));
    assert.equal(textOf(user, "time-zone"), "Pacific Time (US & Canada)");
    await accessible("the conference list");

    // Contacts: two kept, one mistyped and corrected, one added and deleted.
    await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Contacts" }).click();
    await heading("Contacts");
    const addContact = async (name: string, number: string) => {
      await page.getByLabel("Name").fill(name);
      await page.getByLabel("Phone number").fill(number);
      await page.getByRole("button", { name: "Add contact" }).click();
      await notice(`Added ${name}.`);
    };
    await addContact("Ann Low", "+1 604 555 0171");
    await addContact("Bob Hihg", "604-555-0172");
    await addContact("Old Friend", "604-555-0199");
    await page.getByRole("button", { name: "Edit Bob Hihg" }).click();
    await page.getByRole("heading", { level: 2, name: "Edit Bob Hihg" }).waitFor();
    await page.getByLabel("Name").fill("Bob High");
    // Meanwhile changed elsewhere (through the API): the save is refused rather than made over it
    // unseen, the list shows the change, and saving again saves what was typed over it, keeping
    // the change where nothing was typed.
    const bobHihg = itemsOf(
      await api.request("GET", `/users/${userId}/contacts`, { auth: [email, "correct horse"] }),
      "contacts",
      "contact",
    ).find((contact) => textOf(contact, "name") === "Bob Hihg") as XmlNode;
    const elsewhere = await api.request("PUT", `/users/${userId}/contacts/${textOf(bobHihg, "id")}`, {
      auth: [email, "correct horse"],
      body: "<contact><email>bob@example.com</email></contact>",
    });
    assert.equal(elsewhere.status, 200, elsewhere.text);
    await page.getByRole("button", { name: "Save contact" }).click();
    await page
      .getByRole("alert")
      .getByText("Bob Hihg was changed elsewhere meanwhile", { exact: false })
      .waitFor();
    await page.getByRole("row").filter({ hasText: "bob@example.com" }).waitFor();
    await page.getByRole("button", { name: "Save contact" }).click();
    await notice("Saved Bob High.");
    // The edit form gave way to the add form: the focus is on what says so, not lost.
    await page.waitForFunction(() => document.activeElement?.textContent === "Saved Bob High.");
    await page.getByRole("button", { name: "Delete Old Friend" }).click();
    await notice("Deleted Old Friend.");
    await page.getByRole("row").filter({ hasText: "Old Friend" }).waitFor({ state: "detached" });
    await accessible("the contacts");
    const contacts = itemsOf(
      await api.request("GET", `/users/${userId}/contacts`, { auth: [email, "correct horse"] }),
      "contacts",
      "contact",
    );
    assert.deepEqual(
      contacts.map((contact) => [
        textOf(contact, "name"),
        textOf(contact, "phone-number"),
        textOf(contact, "email"),
      ]),
      [
        ["Ann Low", "+1 604 555 0171", null],
        // The name typed here, and the e-mail given elsewhere meanwhile: saving again kept it.
        ["Bob High", "604-555-0172", "bob@example.com"],
      ],
    );

    // A new conference: the start time read as typed, by the service, in the owner's zone.
    await page.getByRole("link", { name: "Conferences" }).first().click();
    await page.getByRole("link", { name: "New conference" }).click();
    await heading("New conference");
    // From the keyboard: the view's heading takes the focus, and Tab goes through the form in order.
    await page.waitForFunction(() => document.activeElement?.textContent === "New conference");
    await page.keyboard.press("Tab");
    await page.keyboard.type("Planning");
    await page.keyboard.press("Tab");
    await page.keyboard.type("next blursday");
    const start = page.getByRole("textbox", { name: "Start time" });
    const preview = page.locator("#new-conference-start-preview");
    await preview
      .getByText('scheduled-to-start-at is not a time that can be read: "next blursday"')
      .waitFor();
    const before = DateTime.now().setZone("America/Los_Angeles");
    await start.fill("next Tuesday at 3pm");
    await preview.locator("time").waitFor();
    const after = DateTime.now().setZone("America/Los_Angeles");
    // The Tuesday after today in Los Angeles (never today), at 15:00 there.
    const expected = [before, after].map((now) =>
      now
        .plus({ days: (2 - now.weekday + 7) % 7 || 7 })
        .set({ hour: 15, minute: 0, second: 0, millisecond: 0 }),
    );
    const read = String(await preview.locator("time").getAttribute("datetime"));
    const tuesday = expected.find((candidate) => candidate.toUTC().toISO() === read);
    assert.ok(tuesday, `read as ${read}, expected ${expected.map((candidate) => candidate.toUTC().toISO())}`);
    // Shown in the owner's zone (Chromium may put a narrow no-break space before PM).
    assert.equal(
      String(await preview.locator("time").textContent()).replace(/\s+/g, " "),
      tuesday.toFormat("ccc, LLL d, yyyy, h:mm a ZZZZ", { locale: "en-US" }),
    );
    assert.match(String(await preview.textContent()), /\(America\/Los_Angeles\)$/);
    for (const option of ["Direct dial", "Record the conference"]) {
      await page.keyboard.press("Tab");
      await page.keyboard.press("Space");
      assert.equal(await page.getByLabel(option).isChecked(), true, option);
    }
    await accessible("the new conference form");
    await page.screenshot({ path: join(screenshots, "console-new-conference.png"), fullPage: true });
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await heading("Planning");
    const conferenceId = Number(/#\/conferences\/(\d+)$/.exec(page.url())?.[1]);
    const path = `/users/${userId}/conferences/${conferenceId}`;
    const facts = page.locator("dl.facts").first();
    assert.match(
      String(await facts.textContent()),
      new RegExp(
        `Scheduled${tuesday.toFormat("ccc, LLL d, yyyy, h:mm a", { locale: "en-US" }).replace(/ /g, "\\s")}\\sP[SD]T`,
      ),
    );

    // Its schedule shows the start on the owner's wall clock, which reads back as the same instant.
    assert.equal(
      await page.getByRole("textbox", { name: "Start time" }).inputValue(),
      tuesday.toFormat("yyyy-MM-dd HH:mm"),
    );
    await page.locator("#schedule-start-preview time").waitFor();
    assert.equal(await page.locator("#schedule-start-preview time").getAttribute("datetime"), read);

    // Attendees: two from the contacts, one by number; a refused number gets the API's own words.
    const addFromContacts = async (label: string) => {
      await page.getByLabel("Contact", { exact: true }).selectOption({ label });
      await page.getByRole("button", { name: "Add contact" }).click();
    };
    await addFromContacts("Ann Low (+1 604 555 0171)");
    await notice("Added Ann Low.");
    await addFromContacts("Bob High (604-555-0172)");
    await notice("Added Bob High.");
    await page.getByLabel("Name", { exact: true }).fill("Cleo Typed");
    await page.getByLabel("Phone number").fill("1-900-555-0123");
    await page.getByRole("button", { name: "Add", exact: true }).click();
    await page
      .getByRole("alert")
      .getByText(
        'phone-number "1-900-555-0123" cannot be called: premium-rate numbers (900, 976) are not called',
      )
      .waitFor();
    await page.getByLabel("Phone number").fill("604-555-0173");
    // Clicked twice in a row: added once.
    await page.getByRole("button", { name: "Add", exact: true }).dblclick();
    await notice("Added Cleo Typed.");
    const row = (name: string) => attendeeRow(page, name);
    for (const name of ["Ann Low", "Bob High", "Cleo Typed"]) await row(name).waitFor();
    assert.match(String(await row("Bob High").textContent()), /\+1 604-555-0172/);
    // The moderator and the three: neither the refused number nor the second click added anyone.
    const listed = async () =>
      itemsOf(
        await api.request("GET", `${path}/attendees`, { auth: [email, "correct horse"] }),
        "attendees",
        "attendee",
      ).map((attendee) => textOf(attendee, "name"));
    assert.deepEqual((await listed()).sort(), ["Ann Low", "Bob High", "Cleo Typed", "Pat Planner"]);
    await accessible("a planned conference");
    await page.screenshot({ path: join(screenshots, "console-schedule.png"), fullPage: true });

    // The name saved alone: the start stays as read. Saved again unchanged, nothing is sent.
    await page.getByLabel("Conference name").fill("Planning meeting");
    await page.getByRole("button", { name: "Save name and start time" }).click();
    await notice("Saved the name and start time.");
    await heading("Planning meeting");
    const renamed = (await api.request("GET", path, { auth: [email, "correct horse"] })).xml
      .conference as XmlNode;
    assert.equal(textOf(renamed, "name"), "Planning meeting");
    assert.equal(Date.parse(String(textOf(renamed, "scheduled-to-start-at"))), Date.parse(read));
    await page.getByRole("button", { name: "Save name and start time" }).click();
    await notice("Nothing to save: the name and start time are as they were.");

    // Set pending from the keyboard (its button goes, the notice takes the focus); then the start
    // moved to now, and it runs.
    await page.getByRole("button", { name: "Set pending" }).focus();
    await page.keyboard.press("Enter");
    await page.locator("dl.facts .state-pending").waitFor();
    await page.waitForFunction(
      () =>
        document.activeElement?.textContent === "Set pending: the attendees are called at the start time.",
    );
    await page.getByRole("textbox", { name: "Start time" }).fill("now");
    await page.getByRole("button", { name: "Save name and start time" }).click();
    await page.locator("dl.facts .state-started").waitFor();
    for (const name of ["Ann Low", "Bob High", "Cleo Typed"])
      await row(name).getByText("connected", { exact: true }).waitFor();
    // Seconds on the call, counted by the page between reads.
    const cleosTime = row("Cleo Typed").locator('td[data-label="Time on call"]');
    const cleoFirstSeen = String(await cleosTime.textContent());
    await until("Cleo's time on the call to tick", async () => {
      const shown = String(await cleosTime.textContent());
      return /^\d+:\d\d$/.test(shown) && shown !== cleoFirstSeen ? true : undefined;
    });
    await accessible("the live view");

    await page.getByRole("button", { name: "End conference" }).click();
    await page.getByRole("button", { name: "End for everyone" }).click();
    await page.locator("dl.facts .state-ended").waitFor({ timeout: 20_000 });
    // SIPp's exit says each call was answered and hung up by the service.
    await carrier.expectSuccess(20_000);

    // Past conferences: it is there with how long it lasted, and its page has the durations.
    await page.getByRole("link", { name: "← All conferences" }).click();
    const past = page
      .getByRole("region", { name: /^Past/ })
      .getByRole("listitem")
      .filter({ hasText: "Planning" });
    await past.waitFor();
    assert.match(String(await past.textContent()), /Ended .*P[SD]T, lasted 0:\d\d$/);
    await past.getByRole("link", { name: "Planning" }).click();
    await heading("Planning");
    await page.getByRole("heading", { level: 2, name: "Calls (3)" }).waitFor();
    const ended = (await api.request("GET", path, { auth: [email, "correct horse"] })).xml
      .conference as XmlNode;
    const lasted =
      (Date.parse(String(textOf(ended, "ended-at"))) - Date.parse(String(textOf(ended, "started-at")))) /
      1000;
    assert.equal(
      await page.locator("dl.facts").first().locator("dt:text('Lasted') + dd").textContent(),
      `0:${String(lasted).padStart(2, "0")}`,
    );
    const attendees = itemsOf(
      await api.request("GET", `${path}/attendees`, { auth: [email, "correct horse"] }),
      "attendees",
      "attendee",
    );
    for (const name of ["Ann Low", "Bob High", "Cleo Typed"]) {
      const seconds = Number(
        textOf(attendees.find((one) => textOf(one, "name") === name) as XmlNode, "duration"),
      );
      assert.ok(seconds >= 1, `${name} was on the call ${seconds} s`);
      assert.equal(
        await row(name).locator('td[data-label="Time on call"]').textContent(),
        `0:${String(seconds).padStart(2, "0")}`,
      );
      const call = callsTable(page).getByRole("row").filter({ hasText: name });
      assert.match(
        String(await call.locator('td[data-label="Duration"]').textContent()),
        /^0:0[1-9]|^0:[1-5]\d/,
      );
      assert.match(String(await call.locator('td[data-label="Outcome"]').textContent()), /^200 OK/);
    }
    await page.getByLabel("Conference recording").waitFor();
    await accessible("a past conference");
    await page.screenshot({ path: join(screenshots, "console-past.png"), fullPage: true });

    // Settings: another zone, and every time follows it; the PINs are the account's.
    await page.getByRole("link", { name: "Settings" }).click();
    await heading("Settings");
    await page.getByText(String(textOf(user, "member-pin")), { exact: true }).waitFor();
    await page.getByText(String(textOf(user, "moderator-pin")), { exact: true }).waitFor();
    await page.getByRole("combobox", { name: "Time zone" }).selectOption("Eastern Time (US & Canada)");
    await page.getByRole("button", { name: "Save time zone" }).click();
    await notice("Saved: times are read and shown in Eastern Time (US & Canada).");
    await accessible("the settings");
    const changed = (await api.request("GET", "/current", { auth: [email, "correct horse"] })).xml
      .user as XmlNode;
    assert.equal(textOf(changed, "time-zone"), "Eastern Time (US & Canada)");
    await page.getByRole("link", { name: "Conferences" }).first().click();
    await page
      .getByRole("region", { name: /^Past/ })
      .getByText(/Ended .*E[SD]T/)
      .waitFor();

    // Deleted, after the confirmation (which takes the focus).
    await page.getByRole("link", { name: "Planning" }).click();
    await page.getByRole("button", { name: "Delete conference" }).click();
    await page.waitForFunction(() => document.activeElement?.textContent?.trim() === "Delete for good");
    await page.keyboard.press("Enter");
    await heading("Conferences");
    await page.getByRole("heading", { level: 2, name: "Past (0)" }).waitFor();
    assert.equal((await api.request("GET", path, { auth: [email, "correct horse"] })).status, 404);
    assert.deepEqual(problems, []);
    assert.ok(apiAnswers.length > 20, apiAnswers.join("\n"));
    assert.deepEqual(
      apiAnswers.filter((answer) => !/ application\/json|^DELETE .* $/.test(answer)),
      [],
      "the console reads the API in JSON",
    );
  });

  test("says plainly when the event stream drops and when it is back, without a reload", async () => {
    // A service that can come back on the same address and data: its own directory (SQLite).
    const dataDir = mkdtempSync(join(tmpdir(), "bridgeline-console-"));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const first = await startTestService({ dataDir });
    const owner = await createUser(first);
    const { page, problems, close } = await openPage(browser, first.httpsUrl);
    cleanups.push(close);
    await signIn(page, owner.auth);
    const state = (text: string) => page.getByRole("status").filter({ hasText: text });
    await state("Live").waitFor();
    await page.evaluate(() => {
      (window as unknown as { unreloaded: boolean }).unreloaded = true;
    });

    await first.close();
    await state("Connection lost — reconnecting…").waitFor();
    const second = await startTestService({ dataDir, httpsPort: first.service.httpsPort });
    cleanups.push(() => second.close());
    await state("Reconnected").waitFor({ timeout: 15_000 });
    await state("Live").waitFor({ timeout: 15_000 });
    assert.equal(await page.evaluate(() => (window as unknown as { unreloaded?: boolean }).unreloaded), true);
    await page.getByRole("heading", { level: 1, name: "Conferences" }).waitFor();
    assert.deepEqual(problems, []);
  });

  test(
    "says who took the conference over when its instance stopped, and that it calls the phone back",
    postgresOnly,
    async () => {
      // Two instances on one database; the first runs the conference, the page watches from the second.
      const database = await createTestDatabase();
      cleanups.push(() => database.drop());
      const ann = await phone("+16045550161", 440);
      const instance = () =>
        startTestService({
          databaseUrl: database.url,
          sip: {
            ...loadConfig({}).sip,
            bindAddress: "127.0.0.1",
            port: 0,
            routes: [{ prefix: "+16045550161", trunk: ann.trunk }],
            rtpPorts: rtpPortRange(),
          },
        });
      // Alone, the first claims the conference.
      const first = await instance();
      let firstRunning = true;
      cleanups.push(async () => (firstRunning ? first.close() : undefined));
      const owner = await createUser(first);
      const path = await startConference(first, owner, "Handed over", [
        { name: "Ann Low", number: "604-555-0161" },
      ]);
      await ann.waitForEvent("CALL_ESTABLISHED");
      const second = await instance();
      cleanups.push(() => second.close());
      // The first hands over only to an instance it has seen alive (with its lease renewals).
      await until("the first instance to see the second", async () =>
        first.logs.some((line) => line.includes("other instances' addresses are trusted")) ? true : undefined,
      );

      const { page, problems, close } = await openPage(browser, second.httpsUrl);
      cleanups.push(close);
      page.setDefaultTimeout(15_000);
      await signIn(page, owner.auth);
      await page.getByRole("heading", { level: 1, name: "Conferences" }).waitFor();
      await page.goto(`/console/#/conferences/${path.split("/").pop()}`);
      await page.getByRole("heading", { level: 1, name: "Handed over" }).waitFor();
      await page
        .getByRole("status")
        .filter({ hasText: /^Live$/ })
        .waitFor();
      const annRow = attendeeRow(page, "Ann Low");
      await annRow.getByText("connected", { exact: true }).waitFor();

      // SIGTERM's way out: the first hands its conference over, and the second calls Ann back.
      firstRunning = false;
      await first.close();
      const notice = page.getByRole("status").filter({ hasText: /^Taken over by / });
      await notice.waitFor().catch((error: Error) => {
        // What the instances said of the conference, for the failure's message.
        const lines = [...first.logs, ...second.logs].filter((line) =>
          /"component":"(scheduler|conferences)"/.test(line),
        );
        throw new Error(`${error.message}\n${lines.join("\n")}`);
      });
      const text = String(await notice.textContent());
      const said =
        /^Taken over by (.+) after ([\d.]+) s \((.+) handed it over as it stopped\); calling back 1 attendee\. Callers who dialled in call again\.$/.exec(
          text,
        );
      assert.ok(said, text);
      assert.equal(said[1], `test:${second.dataDir}`);
      assert.equal(said[3], `test:${first.dataDir}`);
      // Handed over: taken at the second's next renewal, without waiting the lease (6 s) out.
      assert.ok(Number(said[2]) < 6, `taken over ${said[2]} s after the hand-over`);
      await until("Ann's phone to answer the call back", async () =>
        ann.events.filter((event) => event.type === "CALL_ESTABLISHED").length === 2 ? true : undefined,
      );
      const conference = (await second.request("GET", path, { auth: owner.auth })).xml.conference as XmlNode;
      assert.equal(textOf(conference, "state"), "started");
      await until("Ann connected again", async () => {
        const attendees = itemsOf(
          await second.request("GET", `${path}/attendees`, { auth: owner.auth }),
          "attendees",
          "attendee",
        );
        const annXml = attendees.find((attendee) => textOf(attendee, "name") === "Ann Low");
        return annXml !== undefined && textOf(annXml, "state") === "connected" ? true : undefined;
      });
      assert.deepEqual(problems, []);
    },
  );

  test("sign-in: a wrong password is refused on the page; the cookie is HttpOnly, Secure, SameSite=Strict; changes need the CSRF token", async () => {
    const api = await startService();
    const owner = await createUser(api);
    const { page, close } = await openPage(browser, api.httpsUrl, { width: 375, height: 812 });
    cleanups.push(close);
    await signIn(page, owner.auth, "not the password");
    await page.getByRole("alert").filter({ hasText: "Wrong e-mail address or password." }).waitFor();
    await signIn(page, owner.auth);
    await page.getByRole("heading", { level: 1, name: "Conferences" }).waitFor();
    const [cookie] = await page.context().cookies();
    assert.equal(cookie?.name, "bridgeline_session");
    assert.equal(cookie?.httpOnly, true);
    assert.equal(cookie?.secure, true);
    assert.equal(cookie?.sameSite, "Strict");

    // Encrypted calls only, from the page of a conference: the API says so.
    const planned = await api.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: "<conference><name>Board</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at></conference>",
    });
    assert.equal(planned.status, 201, planned.text);
    const plannedPath = new URL(String(planned.headers.location), "http://localhost").pathname;
    await page.goto(`/console/#/conferences/${plannedPath.split("/").pop()}`);
    await page.getByRole("button", { name: "Take encrypted calls only" }).click();
    await page.getByRole("button", { name: "Allow unencrypted calls" }).waitFor();
    await page.getByText("Encrypted calls only: on (calls not over TLS with SRTP are refused)").waitFor();
    const board = (await api.request("GET", plannedPath, { auth: owner.auth })).xml.conference as XmlNode;
    assert.equal(textOf(board, "encrypted-only"), "true");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("E-mail address").waitFor();
    assert.deepEqual(await page.context().cookies(), [], "signing out clears the cookie");

    const json = { accept: "application/json", "content-type": "application/json" };
    const session = await api.request("POST", "/console/session", {
      https: true,
      headers: json,
      body: JSON.stringify({ email: owner.auth[0], password: owner.auth[1] }),
    });
    assert.equal(session.status, 200, session.text);
    const setCookie = String(session.headers["set-cookie"]);
    for (const attribute of ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"]) {
      assert.ok(setCookie.includes(attribute), `${attribute} in ${setCookie}`);
    }
    const { csrfToken, user } = JSON.parse(session.text) as { csrfToken: string; user: { id: number } };
    assert.equal(user.id, owner.id);
    const cookieHeader = setCookie.split(";")[0] as string;

    const conference = await api.request("POST", `/users/${owner.id}/conferences`, {
      https: true,
      headers: { cookie: cookieHeader, "x-csrf-token": csrfToken },
      body: "<conference><name>Planning</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at></conference>",
    });
    assert.equal(conference.status, 201, conference.text);
    const path = new URL(String(conference.headers.location), "http://localhost").pathname;
    const rename = "<conference><name>Renamed</name></conference>";
    const withoutToken = await api.request("PUT", path, {
      https: true,
      headers: { cookie: cookieHeader },
      body: rename,
    });
    assert.equal(withoutToken.status, 403, withoutToken.text);
    const wrongToken = await api.request("PUT", path, {
      https: true,
      headers: { cookie: cookieHeader, "x-csrf-token": `${csrfToken}x` },
      body: rename,
    });
    assert.equal(wrongToken.status, 403, wrongToken.text);
    const read = await api.request("GET", path, { https: true, headers: { cookie: cookieHeader } });
    assert.equal(textOf(read.xml.conference as XmlNode, "name"), "Planning");

    const signedOut = await api.request("DELETE", "/console/session", {
      https: true,
      headers: { accept: "application/json", cookie: cookieHeader, "x-csrf-token": csrfToken },
    });
    assert.equal(signedOut.status, 204, signedOut.text);
    const afterSignOut = await api.request("GET", "/console/session", {
      https: true,
      headers: { ...json, cookie: cookieHeader },
    });
    assert.equal(afterSignOut.status, 401);
  });

  test("the API reference at /docs renders from /openapi.json, every request to this service", async () => {
    const api = await startService();
    const { page, problems, close } = await openPage(browser, api.httpsUrl);
    cleanups.push(close);
    const requested: string[] = [];
    page.on("request", (sent) => requested.push(sent.url()));
    await page.goto("/docs");
    await page.getByRole("heading", { name: "Schedule a conference" }).waitFor();
    // The search index is built in a worker (the CSP's blob: exception).
    await page.getByPlaceholder("Search...").fill("recording");
    await page
      .locator("[data-role='search:results']")
      .getByRole("menuitem", { name: /The conference's recording/ })
      .waitFor();
    assert.deepEqual(problems, []);
    const origin = new URL(api.httpsUrl).origin;
    assert.ok(requested.includes(`${origin}/openapi.json`), "the page read /openapi.json");
    // A blob: URL's origin is the page's that made it (the search worker's).
    assert.deepEqual(
      requested.filter((address) => new URL(address).origin !== origin),
      [],
    );
  });
});
