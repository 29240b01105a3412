import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import ICAL from "ical.js";
import { simpleParser } from "mailparser";
import type { Config } from "../../src/config.js";
import { createTestDatabase, postgresOnly } from "../helpers/databases.js";
import { claimableFromNowOn } from "../helpers/outbox.js";
import { createUser, startTestService, type TestService } from "../helpers/service.js";
import { Mailbox, type ReceivedMail } from "../helpers/smtp.js";
import { until } from "../helpers/until.js";

const START = "2027-04-01T16:00:00Z";
const ACCESS_NUMBERS = ["+16045550199", "+12125550188"];
const SUPPORT = "help@bridgeline.example";
const PUBLIC_URL = "https://conference.bridgeline.example";
const CREDENTIALS = { user: "mailer", pass: "s3cret word" };

type Auth = [string, string];

function mailConfig(smtpUrl: string | null, overrides: Partial<Config["mail"]> = {}): Partial<Config> {
  return {
    mail: {
      smtpUrl,
      from: "Bridgeline <conferences@bridgeline.example>",
      supportEmail: SUPPORT,
      supportPhone: "+1 604 555 0111",
      retrySeconds: 1,
      ...overrides,
    },
  };
}

/** An owner in Pacific time with a phone (so the owner is the called moderator). */
async function owner(api: TestService): Promise<{ id: number; auth: Auth; email: string }> {
  const { id, auth } = await createUser(
    api,
    `<time-zone>Pacific Time (US &amp; Canada)</time-zone>
     <phone-numbers type="array"><phone-number><country-code type="integer">1</country-code>
       <subscriber-number>604-555-0100</subscriber-number></phone-number></phone-numbers>`,
  );
  return { id, auth, email: auth[0] };
}

async function ok(
  response: Promise<{ status: number; text: string; headers: Record<string, unknown> }>,
  status: number,
) {
  const result = await response;
  assert.equal(result.status, status, result.text);
  return result;
}

async function createConference(
  api: TestService,
  userId: number,
  auth: Auth,
  name = "Weekly sync",
  notify = true,
) {
  const response = await ok(
    api.request("POST", `/users/${userId}/conferences`, {
      auth,
      body: `<conference><name>${name}</name><scheduled-to-start-at>${START}</scheduled-to-start-at>
        <send-notification-emails type="boolean">${notify}</send-notification-emails></conference>`,
    }),
    201,
  );
  return String(response.headers.location).replace(/^https?:\/\/[^/]+/, "");
}

async function addAttendee(api: TestService, conference: string, auth: Auth, fields: string) {
  const response = await ok(
    api.request("POST", `${conference}/attendees`, { auth, body: `<attendee>${fields}</attendee>` }),
    201,
  );
  return String(response.headers.location).replace(/^https?:\/\/[^/]+/, "");
}

const ALICE =
  "<name>Alice Archer</name><email>alice@example.com</email><phone-number>212-555-0142</phone-number>";
const BOB = '<name>Bob Baker</name><email>bob@example.com</email><dial-in type="boolean">true</dial-in>';
const CAROL = '<name>Carol Cho</name><email>carol@example.org</email><dial-in type="boolean">true</dial-in>';

/** Owner plus Alice (the owner's contact, Eastern), Bob (no zone known) and Carol (a user in London). */
async function threeAttendeeConference(api: TestService, notify = true) {
  const who = await owner(api);
  await ok(
    api.request("POST", `/users/${who.id}/contacts`, {
      auth: who.auth,
      body: `<contact><name>Alice</name><email>Alice@Example.com</email><phone-number>2125550142</phone-number>
        <time-zone>Eastern Time (US &amp; Canada)</time-zone></contact>`,
    }),
    201,
  );
  const carol = await api.request("POST", "/users", {
    body: `<user><name>Carol Cho</name><email>carol@example.org</email><password>correct horse</password>
      <password-confirmation>correct horse</password-confirmation><terms-of-service type="boolean">true</terms-of-service>
      <billing-package><id type="integer">1</id></billing-package><time-zone>London</time-zone></user>`,
  });
  assert.ok(carol.status === 201 || carol.status === 422, carol.text);
  const conference = await createConference(api, who.id, who.auth, "Weekly sync", notify);
  for (const fields of [ALICE, BOB, CAROL]) await addAttendee(api, conference, who.auth, fields);
  return { ...who, conference };
}

function setPending(api: TestService, conference: string, auth: Auth) {
  return ok(
    api.request("PUT", conference, { auth, body: "<conference><state>pending</state></conference>" }),
    200,
  );
}

function byRecipient(mails: ReceivedMail[]): Map<string, ReceivedMail> {
  const map = new Map<string, ReceivedMail>();
  for (const mail of mails) {
    assert.equal(mail.envelope.to.length, 1, "one recipient per message");
    const to = (mail.envelope.to[0] as string).toLowerCase();
    assert.ok(!map.has(to), `a second message to ${to}`);
    map.set(to, mail);
  }
  return map;
}

interface CalendarEvent {
  method: string;
  uid: string;
  sequence: number;
  start: string;
  status: string;
  summary: string;
  location: string;
}

/** Parses the message's text/calendar part with ical.js (a calendar parser nobody here wrote). */
function calendarOf(mail: ReceivedMail): CalendarEvent {
  const part = mail.parsed.attachments.find((a) => a.contentType.startsWith("text/calendar"));
  const source = part
    ? part.content.toString("utf8")
    : /BEGIN:VCALENDAR[\s\S]*END:VCALENDAR/.exec(mail.raw)?.[0];
  assert.ok(source, "the message carries a calendar");
  const calendar = new ICAL.Component(ICAL.parse(source));
  const event = calendar.getFirstSubcomponent("vevent");
  assert.ok(event, "the calendar holds an event");
  const vevent = new ICAL.Event(event);
  return {
    method: String(calendar.getFirstPropertyValue("method")),
    uid: vevent.uid,
    sequence: vevent.sequence,
    start: vevent.startDate.toJSDate().toISOString(),
    status: String(event.getFirstPropertyValue("status")),
    summary: vevent.summary,
    location: vevent.location,
  };
}

function textAndHtml(mail: ReceivedMail): string {
  return `${mail.parsed.text ?? ""}\n${mail.parsed.html || ""}`;
}

/**
 * Checks that the message carries the conference's join link beside the access numbers: a line of
 * its text, a link of its HTML, and the calendar event's location.
 */
function assertJoinLink(mail: ReceivedMail, conference: string, to: string): void {
  const link = `${PUBLIC_URL}/join?conference=${conference.split("/").pop()}`;
  const text = mail.parsed.text ?? "";
  assert.ok(text.includes(`\nJoin from a browser: ${link}\n`), `${to}: the join link, a line of the text`);
  assert.ok(
    text.indexOf("Access numbers:") < text.indexOf("Join from a browser:"),
    `${to}: after the access numbers`,
  );
  assert.ok(
    (mail.parsed.html || "").includes(`Join from a browser: <a href="${link}">${link}</a>`),
    `${to}: the join link, a link of the HTML`,
  );
  assert.ok(calendarOf(mail).location.endsWith(`browser ${link}`), `${to}: the calendar's location`);
}

async function pins(api: TestService, conference: string, auth: Auth) {
  const response = await ok(api.request("GET", conference, { auth }), 200);
  const read = (name: string) => new RegExp(`<${name}>(\\d+)</${name}>`).exec(response.text)?.[1] as string;
  return { member: read("member-pin"), moderator: read("moderator-pin") };
}

async function outbox(api: TestService) {
  return api.inspect((db) => db.selectFrom("notifications").selectAll().orderBy("id").execute());
}

/**
 * The outbox's messages (of one conference, when given) once each is settled for good (none waiting
 * nor claimed), after checking that the outbox's own claim gives a worker none of them, now or
 * later: no message of them will be attempted again, so what the mailbox holds then is all it gets
 * (a message counts as received before the server's 250, which its attempt waits for).
 */
async function settledForGood(api: TestService, conferenceId?: number, databaseUrl?: string) {
  const rows = await until("every message settled", async () => {
    const found = (await outbox(api)).filter(
      (row) => conferenceId === undefined || row.conference_id === conferenceId,
    );
    return found.every((row) => row.state !== "queued" && row.state !== "sending") ? found : undefined;
  });
  assert.deepEqual(await claimableFromNowOn("notifications", { dataDir: api.dataDir, databaseUrl }), []);
  return rows;
}

async function defaultSip(): Promise<Config["sip"]> {
  const { loadConfig } = await import("../../src/config.js");
  return { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0 };
}

// The three share nothing (each its own services, data, mailboxes) and mostly wait on the outbox
// worker's polls and the mail server: they run at once.
describe("notifications", { concurrency: true }, () => {
  // One service and mailbox for the messages' content: one test after another, each counting what arrives.
  describe("notification e-mails through a real SMTP server", { concurrency: false }, () => {
    let mailbox: Mailbox;
    let api: TestService;

    before(async () => {
      mailbox = await Mailbox.start({ auth: CREDENTIALS });
      api = await startTestService({
        ...mailConfig(mailbox.url(CREDENTIALS)),
        publicUrl: PUBLIC_URL,
        sip: { ...(await defaultSip()), accessNumbers: ACCESS_NUMBERS },
      });
    });
    after(async () => {
      await api.close();
      await mailbox.close();
    });

    it("sends four correct invitations, exactly once, when a conference with three e-mail attendees becomes pending", async () => {
      const { conference, auth, email: ownerEmail } = await threeAttendeeConference(api);
      assert.equal((await outbox(api)).length, 0, "nothing is queued while the conference is new");
      const before = mailbox.received.length;
      await setPending(api, conference, auth);
      const mails = byRecipient((await mailbox.waitFor(before + 4)).slice(before));
      assert.deepEqual(
        [...mails.keys()].sort(),
        ["alice@example.com", "bob@example.com", "carol@example.org", ownerEmail].sort(),
      );
      const { member, moderator } = await pins(api, conference, auth);

      for (const [to, mail] of mails) {
        assert.match(mail.parsed.subject ?? "", /^Invitation: Weekly sync \(/);
        assert.equal(mail.parsed.from?.value[0]?.address, "conferences@bridgeline.example");
        const body = textAndHtml(mail);
        assert.ok(body.includes(`Member PIN: ${member}`), `${to} gets the member PIN`);
        for (const number of ["+1 604 555 0199", "+1 212 555 0188"])
          assert.ok(body.includes(number), `${to}: access number`);
        assert.ok(body.includes(SUPPORT) && body.includes("+1 604 555 0111"), `${to}: support details`);
        assert.ok(body.includes("*6") && body.includes("mute or unmute yourself"), `${to}: keypad map`);
        assertJoinLink(mail, conference, to);
        const event = calendarOf(mail);
        assert.equal(event.method, "REQUEST");
        assert.equal(event.start, new Date(START).toISOString());
        assert.equal(event.summary, "Weekly sync");
        assert.equal(event.sequence, 0);
      }
      const uids = new Set([...mails.values()].map((mail) => calendarOf(mail).uid));
      assert.equal(uids.size, 1, "one calendar UID for the conference");

      const ownerMail = mails.get(ownerEmail) as ReceivedMail;
      assert.ok(
        textAndHtml(ownerMail).includes(`Moderator PIN: ${moderator}`),
        "the owner sees the moderator PIN",
      );
      assert.ok(textAndHtml(ownerMail).includes("*9"), "the owner sees the moderator's keys");
      assert.ok(textAndHtml(ownerMail).includes("We will call you at +1 604 555 0100"));
      for (const to of ["alice@example.com", "bob@example.com", "carol@example.org"]) {
        const mail = mails.get(to) as ReceivedMail;
        assert.ok(!mail.raw.includes(moderator), `${to} never sees the moderator PIN, in any part`);
        assert.ok(!textAndHtml(mail).includes("*9"), `${to} is not shown the moderator's keys`);
      }
      // 16:00 UTC read in each recipient's zone, the zone named.
      assert.match(ownerMail.parsed.text ?? "", /9:00 AM PDT \(Pacific Time \(US & Canada\)\)/);
      assert.match(
        mails.get("alice@example.com")?.parsed.text ?? "",
        /12:00 PM EDT \(Eastern Time \(US & Canada\)\)/,
      );
      assert.match(mails.get("bob@example.com")?.parsed.text ?? "", /9:00 AM PDT \(Pacific Time/);
      assert.match(mails.get("carol@example.org")?.parsed.text ?? "", /5:00 PM GMT\+1 \(London\)/);
      assert.match(mails.get("alice@example.com")?.parsed.text ?? "", /We will call you at \+1 212 555 0142/);
      assert.match(
        mails.get("bob@example.com")?.parsed.text ?? "",
        /Dial in: call one of the access numbers/,
      );

      const rows = await settledForGood(api);
      assert.equal(rows.filter((row) => row.state === "sent").length, 4);
      // Nothing more arrives: each message was sent once.
      assert.equal(mailbox.received.length, before + 4);
    });

    it("updates the same calendar event on a change, invites and cancels single attendees, and cancels with a higher SEQUENCE", async () => {
      const { conference, auth, email: ownerEmail } = await threeAttendeeConference(api);
      const invitations = byRecipient(await mailbox.receiving(4, () => setPending(api, conference, auth)));
      const uid = calendarOf(invitations.get(ownerEmail) as ReceivedMail).uid;

      const updates = byRecipient(
        await mailbox.receiving(4, () =>
          ok(
            api.request("PUT", conference, {
              auth,
              body: "<conference><scheduled-to-start-at>2027-04-02T17:30:00Z</scheduled-to-start-at></conference>",
            }),
            200,
          ),
        ),
      );
      for (const [to, mail] of updates) {
        assert.match(mail.parsed.subject ?? "", /^Updated: Weekly sync/);
        assertJoinLink(mail, conference, to);
        const event = calendarOf(mail);
        assert.deepEqual(
          [event.method, event.uid, event.sequence, event.start],
          ["REQUEST", uid, 1, "2027-04-02T17:30:00.000Z"],
        );
      }
      assert.match(updates.get(ownerEmail)?.parsed.text ?? "", /10:30 AM PDT/);

      let dave = "";
      const [daveInvitation] = await mailbox.receiving(1, async () => {
        dave = await addAttendee(
          api,
          conference,
          auth,
          "<name>Dave</name><email>dave@example.net</email><phone-number>6045550177</phone-number>",
        );
      });
      assert.deepEqual(daveInvitation?.envelope.to, ["dave@example.net"]);
      assert.match(daveInvitation?.parsed.subject ?? "", /^Invitation: Weekly sync/);
      assert.deepEqual(
        [calendarOf(daveInvitation as ReceivedMail).uid, calendarOf(daveInvitation as ReceivedMail).sequence],
        [uid, 2],
      );

      const [daveCancel] = await mailbox.receiving(1, () => ok(api.request("DELETE", dave, { auth }), 204));
      assert.deepEqual(daveCancel?.envelope.to, ["dave@example.net"]);
      assert.equal(calendarOf(daveCancel as ReceivedMail).method, "CANCEL");

      const cancellations = byRecipient(
        await mailbox.receiving(4, () => ok(api.request("DELETE", conference, { auth }), 204)),
      );
      assert.equal(cancellations.size, 4);
      for (const mail of cancellations.values()) {
        assert.match(mail.parsed.subject ?? "", /^Cancelled: Weekly sync/);
        const event = calendarOf(mail);
        assert.deepEqual([event.method, event.uid, event.status], ["CANCEL", uid, "CANCELLED"]);
        assert.equal(event.sequence, 4);
      }
    });

    it("sends nothing at all when send-notification-emails is false", async () => {
      const seen = mailbox.received.length;
      const queuedBefore = (await outbox(api)).length;
      const { conference, auth } = await threeAttendeeConference(api, false);
      await setPending(api, conference, auth);
      await addAttendee(
        api,
        conference,
        auth,
        '<name>Eve</name><email>eve@example.com</email><dial-in type="boolean">true</dial-in>',
      );
      await ok(api.request("DELETE", conference, { auth }), 204);
      // Messages are queued in the change's own transaction: none queued means none will be sent.
      assert.equal((await outbox(api)).length, queuedBefore);
      assert.equal(mailbox.received.length, seen);
    });

    it("shows a separate moderator the moderator PIN, and tells one attendee when how they join changes", async () => {
      const who = await owner(api);
      const response = await ok(
        api.request("POST", `/users/${who.id}/conferences`, {
          auth: who.auth,
          body: `<conference><name>Board</name><scheduled-to-start-at>${START}</scheduled-to-start-at>
            <send-notification-emails type="boolean">true</send-notification-emails>
            <no-moderator type="boolean">true</no-moderator></conference>`,
        }),
        201,
      );
      const conference = String(response.headers.location).replace(/^https?:\/\/[^/]+/, "");
      await addAttendee(
        api,
        conference,
        who.auth,
        '<name>Mo</name><email>mo@example.com</email><dial-in type="boolean">true</dial-in><moderator type="boolean">true</moderator>',
      );
      const member = await addAttendee(
        api,
        conference,
        who.auth,
        "<name>Max</name><email>max@example.com</email><phone-number>6045550188</phone-number>",
      );
      const mails = byRecipient(await mailbox.receiving(3, () => setPending(api, conference, who.auth)));
      const { moderator } = await pins(api, conference, who.auth);
      assert.ok(
        textAndHtml(mails.get("mo@example.com") as ReceivedMail).includes(`Moderator PIN: ${moderator}`),
      );
      assert.ok(!(mails.get("max@example.com") as ReceivedMail).raw.includes(moderator));
      // Without a moderator entry of the owner's, the owner dials in.
      assert.match(mails.get(who.email)?.parsed.text ?? "", /Dial in: call one of the access numbers/);

      const [update] = await mailbox.receiving(1, () =>
        ok(
          api.request("PUT", member, {
            auth: who.auth,
            body: '<attendee><dial-in type="boolean">true</dial-in></attendee>',
          }),
          200,
        ),
      );
      assert.deepEqual(update?.envelope.to, ["max@example.com"]);
      assert.match(update?.parsed.subject ?? "", /^Updated: Board/);
      assert.match(update?.parsed.text ?? "", /Dial in: call one of the access numbers/);
    });

    it("refuses an attendee e-mail that is not an address with 422 and queues nothing", async () => {
      const who = await owner(api);
      const conference = await createConference(api, who.id, who.auth);
      await mailbox.receiving(1, () => setPending(api, conference, who.auth));
      const queued = (await outbox(api)).length;
      const response = await api.request("POST", `${conference}/attendees`, {
        auth: who.auth,
        body: '<attendee><name>Mallory</name><email>mallory@example.com&#13;&#10;Bcc: x@evil.example</email><dial-in type="boolean">true</dial-in></attendee>',
      });
      assert.equal(response.status, 422, response.text);
      assert.match(response.text, /email is not a valid e-mail address/);
      assert.equal((await outbox(api)).length, queued);
      const attendees = await ok(api.request("GET", `${conference}/attendees`, { auth: who.auth }), 200);
      assert.ok(!attendees.text.includes("Mallory"));
    });

    it("keeps injected header lines out of the SMTP headers", async () => {
      const who = await owner(api);
      const conference = await createConference(
        api,
        who.id,
        who.auth,
        "Sync&#13;&#10;Bcc: victim@evil.example&#13;&#10;X-Injected: yes",
      );
      await addAttendee(
        api,
        conference,
        who.auth,
        '<name>Frank&#13;&#10;Bcc: victim2@evil.example</name><email>frank@example.com</email><dial-in type="boolean">true</dial-in>',
      );
      const mails = byRecipient(await mailbox.receiving(2, () => setPending(api, conference, who.auth)));
      assert.deepEqual([...mails.keys()].sort(), ["frank@example.com", who.email].sort());
      for (const mail of mails.values()) {
        assert.equal(mail.parsed.headers.has("bcc"), false);
        assert.equal(mail.parsed.headers.has("x-injected"), false);
        assert.ok(!mail.envelope.to.some((to) => to.includes("evil")));
        assert.match(
          mail.parsed.subject ?? "",
          /^Invitation: Sync Bcc: victim@evil\.example X-Injected: yes \(/,
        );
      }
      const frank = mails.get("frank@example.com") as ReceivedMail;
      assert.equal(frank.parsed.to && !Array.isArray(frank.parsed.to) ? frank.parsed.to.value.length : 0, 1);
    });
  });

  describe("notification delivery survives outages and restarts", { concurrency: false }, () => {
    const dataDirs: string[] = [];
    after(async () => {
      for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
    });

    /** A data directory that outlives the services of one test (so they can restart on it). */
    function dataDirectory(): string {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-mail-"));
      dataDirs.push(dir);
      return dir;
    }

    /** A loopback port where no SMTP server listens (one did a moment ago). */
    async function closedSmtpPort(): Promise<number> {
      const probe = await Mailbox.start();
      const port = probe.port;
      await probe.close();
      return port;
    }

    /** A service on a data directory that outlives it, so it can be restarted. */
    async function restartable(dataDir: string, smtpUrl: string | null) {
      return startTestService({ ...mailConfig(smtpUrl), dataDir });
    }

    it("retries while the SMTP server is down and delivers each message once when it is back", async () => {
      const dataDir = dataDirectory();
      const port = await closedSmtpPort();
      const api = await restartable(dataDir, `smtp://127.0.0.1:${port}`);
      let mailbox: Mailbox | undefined;
      try {
        const { conference, auth } = await threeAttendeeConference(api);
        await setPending(api, conference, auth);
        const failed = await until("a failed attempt recorded", async () => {
          const rows = (await outbox(api)).filter(
            (row) => row.conference_id === Number(conference.split("/").pop()),
          );
          return rows.length === 4 && rows.every((row) => row.attempts >= 1 && row.state === "queued")
            ? rows
            : undefined;
        });
        assert.ok(
          failed.every((row) => row.last_error !== null),
          "the failure is recorded",
        );
        assert.equal(
          fs.existsSync(path.join(dataDir, "mail")),
          false,
          "no .eml fallback when SMTP is configured",
        );
        mailbox = await Mailbox.start({ port });
        const mails = byRecipient(await mailbox.waitFor(4, 20_000));
        assert.equal(mails.size, 4);
        await settledForGood(api, Number(conference.split("/").pop()));
        assert.equal(mailbox.received.length, 4, "no message twice");
      } finally {
        await api.close();
        await mailbox?.close();
      }
    });

    it("sends nothing twice across a restart in the middle of sending, and resumes what was left", async () => {
      const dataDir = dataDirectory();
      const mailbox = await Mailbox.start({ dataDelayMs: 400 });
      let api = await restartable(dataDir, mailbox.url());
      try {
        const { conference, auth } = await threeAttendeeConference(api);
        const conferenceId = Number(conference.split("/").pop());
        await setPending(api, conference, auth);
        await mailbox.waitFor(1);
        await api.close();
        const rows = (await outbox(api)).filter((row) => row.conference_id === conferenceId);
        assert.ok(
          rows.some((row) => row.state !== "sent"),
          "the stop came in the middle of sending",
        );
        assert.ok(
          rows.every((row) => row.state !== "sending"),
          "a graceful stop leaves nothing claimed",
        );
        api = await restartable(dataDir, mailbox.url());
        const mails = byRecipient(await mailbox.waitFor(4, 20_000));
        assert.equal(mails.size, 4);
        await settledForGood(api, conferenceId);
        assert.equal(mailbox.received.length, 4, "no message twice");
      } finally {
        await api.close();
        await mailbox.close();
      }
    });

    it("queues again what this instance had claimed when it died, and sends it after the restart", async () => {
      const dataDir = dataDirectory();
      const port = await closedSmtpPort();
      let api = await restartable(dataDir, `smtp://127.0.0.1:${port}`);
      const mailbox = await Mailbox.start();
      try {
        const { conference, auth } = await threeAttendeeConference(api);
        const conferenceId = Number(conference.split("/").pop());
        await setPending(api, conference, auth);
        await api.close();
        // As a crash between claim and send leaves them: claimed by this instance, never settled.
        await api.inspect((db) =>
          db
            .updateTable("notifications")
            .set({ state: "sending", claimed_by: `test:${dataDir}`, claimed_at: new Date().toISOString() })
            .where("conference_id", "=", conferenceId)
            .execute(),
        );
        api = await restartable(dataDir, mailbox.url());
        const mails = byRecipient(await mailbox.waitFor(4, 20_000));
        assert.equal(mails.size, 4);
        assert.ok(api.logs.some((line) => line.includes("claimed before a restart are queued again")));
      } finally {
        await api.close();
        await mailbox.close();
      }
    });

    it("records an address the server refuses for good and does not retry it", async () => {
      const dataDir = dataDirectory();
      const mailbox = await Mailbox.start({ refuse: ["bob@example.com"] });
      const api = await restartable(dataDir, mailbox.url());
      try {
        const { conference, auth } = await threeAttendeeConference(api);
        const conferenceId = Number(conference.split("/").pop());
        await setPending(api, conference, auth);
        const mails = byRecipient(await mailbox.waitFor(3));
        assert.ok(!mails.has("bob@example.com"));
        const bob = await until("bob's message settled", async () =>
          (await outbox(api)).find(
            (row) =>
              row.conference_id === conferenceId &&
              row.recipient === "bob@example.com" &&
              row.state !== "sending" &&
              row.state !== "queued",
          ),
        );
        assert.equal(bob.state, "refused");
        assert.match(bob.last_error ?? "", /550/);
        // Not tried again, then or ever (the outbox hands a worker none of it): one attempt.
        const again = (await settledForGood(api, conferenceId)).find((row) => row.id === bob.id);
        assert.deepEqual([again?.state, again?.attempts], ["refused", 1]);
        assert.equal(mailbox.received.length, 3);
      } finally {
        await api.close();
        await mailbox.close();
      }
    });

    it("writes each message as an .eml file in the data directory's mail folder without BRIDGELINE_SMTP_URL", async () => {
      const dataDir = dataDirectory();
      const api = await restartable(dataDir, null);
      try {
        const { conference, auth, email } = await threeAttendeeConference(api);
        const conferenceId = Number(conference.split("/").pop());
        await setPending(api, conference, auth);
        const folder = path.join(dataDir, "mail");
        const files = await until("four .eml files", async () => {
          const rows = (await outbox(api)).filter(
            (row) => row.conference_id === conferenceId && row.state === "sent",
          );
          if (rows.length < 4) return undefined;
          return rows.map((row) => path.join(folder, `notification-${row.id}-invitation.eml`));
        });
        const recipients: string[] = [];
        for (const file of files) {
          const parsed = await simpleParser(fs.readFileSync(file));
          assert.match(parsed.subject ?? "", /^Invitation: Weekly sync/);
          const to = parsed.to && !Array.isArray(parsed.to) ? parsed.to.value[0]?.address : undefined;
          recipients.push(String(to).toLowerCase());
        }
        assert.deepEqual(
          recipients.sort(),
          ["alice@example.com", "bob@example.com", "carol@example.org", email].sort(),
        );
        assert.ok(!fs.readdirSync(folder).some((name) => name.endsWith(".partial")));
      } finally {
        await api.close();
      }
    });
  });

  describe("two instances on one PostgreSQL database", postgresOnly, () => {
    it("send every message exactly once between them", async () => {
      const database = await createTestDatabase();
      const mailbox = await Mailbox.start();
      const instances = [
        await startTestService({ ...mailConfig(mailbox.url()), databaseUrl: database.url }),
        await startTestService({ ...mailConfig(mailbox.url()), databaseUrl: database.url }),
      ];
      try {
        const [first] = instances as [TestService, TestService];
        const conferences = [];
        for (let i = 0; i < 6; i += 1) conferences.push(await threeAttendeeConference(first));
        await Promise.all(
          conferences.map((c, i) => setPending(instances[i % 2] as TestService, c.conference, c.auth)),
        );
        const mails = await mailbox.waitFor(24, 30_000);
        await settledForGood(first, undefined, database.url);
        assert.equal(mailbox.received.length, 24);
        const ids = new Set(mails.map((mail) => mail.parsed.messageId));
        assert.equal(ids.size, 24, "24 different messages, none twice");
        // Between them the two workers sent each message once (each logged after its message settled).
        const sendsLogged = () =>
          instances.flatMap((api) => api.logs.filter((line) => line.includes("notification e-mail sent")));
        const sends = await until("every send logged", async () =>
          sendsLogged().length >= 24 ? sendsLogged() : undefined,
        );
        assert.equal(sends.length, 24);
      } finally {
        for (const api of instances) await api.close();
        await mailbox.close();
        await database.drop();
      }
    });
  });
});
