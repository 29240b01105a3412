/**
 * The join page's routes (/join): the page and its assets, the ICE servers, a join's body checks,
 * each refusal of the conferences' answered with its status, name and Retry-After, the answer and
 * token of a join, the room's state and event stream for a token, leaving, and the per-address limit.
 * The conferences' side (BrowserJoins) is an in-test one that records what it is given: the real one
 * needs media threads and a browser, and has its own end-to-end test in Chromium.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import type {
  BrowserJoined,
  BrowserJoinRefusal,
  BrowserJoinRequest,
  BrowserJoins,
  BrowserParticipant,
} from "../../src/api/browser-joins.js";
import { MAX_STREAMS_PER_USER } from "../../src/api/event-feed.js";
import { CONSOLE_DIST } from "../../src/api/routes/console.js";
import type { IceServer } from "../../src/api/routes/join.js";
import { buildApi } from "../../src/api/server.js";
import type { NewConferenceEvent } from "../../src/domain/event.js";
import { createLogger } from "../../src/log.js";
import { openStore, type Store } from "../../src/store/database.js";
import { appendEvents } from "../../src/store/events.js";
import { flag } from "../../src/store/values.js";
import { fillDataDir } from "../helpers/databases.js";
import { EventStream } from "../helpers/event-stream.js";
import { signupXml, startTestApi } from "../helpers/service.js";
import { until } from "../helpers/until.js";

const OFFER = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n";
const JOINS_PER_MINUTE = 5;

/** The conferences' side as the routes see it: answers what the test says, and records every call. */
class RecordingJoins implements BrowserJoins {
  readonly requests: BrowserJoinRequest[] = [];
  readonly left: string[] = [];
  readonly calls = new Map<string, BrowserParticipant>();
  /** What the next join answers. */
  answer: (request: BrowserJoinRequest) => Promise<BrowserJoined | BrowserJoinRefusal> = async () => ({
    refused: "wrong-pin",
  });
  #tokens = 0;

  async join(request: BrowserJoinRequest): Promise<BrowserJoined | BrowserJoinRefusal> {
    this.requests.push(request);
    return this.answer(request);
  }

  participant(token: string): BrowserParticipant | undefined {
    return this.calls.get(token);
  }

  leave(token: string): boolean {
    this.left.push(token);
    return this.calls.delete(token);
  }

  /** A call in progress of `participant`'s, and what join answers for it. */
  admit(participant: BrowserParticipant): BrowserJoined {
    this.#tokens += 1;
    const token = `page-token_${this.#tokens}`;
    this.calls.set(token, participant);
    return { ...participant, token, answer: `v=0\r\no=- answer ${this.#tokens}\r\n` };
  }
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown>;
}

describe("join routes", () => {
  const joins = new RecordingJoins();
  let iceServers: readonly IceServer[] = [];
  let dataDir: string;
  let store: Store;
  let app: Awaited<ReturnType<typeof buildApi>>;
  let url: string;
  let owner: { id: number; auth: string };
  let addressCounter = 0;
  const streams: EventStream[] = [];

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-join-"));
    await fillDataDir(dataDir);
    store = await openStore({ databaseUrl: null, dataDir });
    app = await buildApi({
      store,
      logger: createLogger("silent"),
      failedLoginLimit: 1000,
      signupLimit: 1000,
      throttleWindowSeconds: 900,
      // Each test is a client address of its own (X-Forwarded-For), for the per-address limit.
      trustedProxies: "127.0.0.1",
      dataDir,
      accessNumbers: [],
      passwordCost: 2 ** 10,
      browserJoins: joins,
      iceServers: () => iceServers,
      browserJoinsPerMinute: JOINS_PER_MINUTE,
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`;
    const email = "owner@example.com";
    const signedUp = await send("POST", "/users", {
      body: signupXml(email),
      headers: { "content-type": "application/xml", accept: "application/xml" },
    });
    assert.equal(signedUp.status, 201, signedUp.text);
    owner = {
      id: Number(/<id type="integer">(\d+)<\/id>/.exec(signedUp.text)?.[1]),
      auth: `Basic ${Buffer.from(`${email}:correct horse`).toString("base64")}`,
    };
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await app.close();
    await store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** A client address no other test uses (the join limit counts per address). */
  function newAddress(): string {
    addressCounter += 1;
    return `198.51.100.${addressCounter}`;
  }

  async function send(
    method: string,
    urlPath: string,
    options: { body?: string; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const response = await request(`${url}${urlPath}`, {
      method: method as "GET",
      headers: { accept: "application/json", ...options.headers },
      body: options.body,
    });
    const text = await response.body.text();
    let json: Record<string, unknown> = {};
    if (String(response.headers["content-type"]).startsWith("application/json"))
      json = JSON.parse(text) as Record<string, unknown>;
    return { status: response.statusCode, headers: response.headers, text, json };
  }

  function postJoin(body: unknown, address = newAddress()): Promise<Answer> {
    return send("POST", "/join/calls", {
      body: typeof body === "string" ? body : JSON.stringify(body),
      headers: { "content-type": "application/json", "x-forwarded-for": address },
    });
  }

  /** A conference of the owner's, and an attendee of it with a name: their ids. */
  async function conferenceWithAttendee(flags = ""): Promise<{ conferenceId: number; attendeeId: number }> {
    const created = await send("POST", `/users/${owner.id}/conferences`, {
      headers: { authorization: owner.auth, "content-type": "application/xml", accept: "application/xml" },
      body: `<conference><name>Weekly</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at><no-moderator type="boolean">true</no-moderator>${flags}</conference>`,
    });
    assert.equal(created.status, 201, created.text);
    const conferenceId = Number(String(created.headers.location).split("/").pop());
    const added = await send("POST", `/users/${owner.id}/conferences/${conferenceId}/attendees`, {
      headers: { authorization: owner.auth, "content-type": "application/xml", accept: "application/xml" },
      body: "<attendee><name>Carol</name><phone-number>6045550121</phone-number></attendee>",
    });
    assert.equal(added.status, 201, added.text);
    const attendeeId = Number(String(added.headers.location).split("/").pop());
    return { conferenceId, attendeeId };
  }

  function event(
    conferenceId: number,
    attendeeId: number | null,
    type: NewConferenceEvent["type"],
  ): NewConferenceEvent {
    return { userId: owner.id, conferenceId, attendeeId, type, reason: null, encryption: null };
  }

  it("serves the join page and its script and style, with the console's security headers", async () => {
    const built = fs.existsSync(`${CONSOLE_DIST}join.html`);
    const page = await send("GET", "/join?conference=12&pin=123456", { headers: { accept: "text/html" } });
    assert.match(String(page.headers["content-security-policy"]), /default-src 'self'/);
    assert.equal(page.headers["x-content-type-options"], "nosniff");
    if (!built) {
      assert.equal(page.status, 503);
      return;
    }
    assert.equal(page.status, 200);
    assert.match(String(page.headers["content-type"]), /^text\/html/);
    assert.match(page.text, /src="\/join\/assets\/join\.js"/);
    assert.match(page.text, /href="\/join\/assets\/join\.css"/);
    const script = await send("GET", "/join/assets/join.js", { headers: { accept: "*/*" } });
    assert.equal(script.status, 200);
    assert.match(String(script.headers["content-type"]), /^text\/javascript/);
    assert.match(script.text, /insertDTMF/);
    const style = await send("GET", "/join/assets/join.css", { headers: { accept: "text/css" } });
    assert.equal(style.status, 200);
    for (const file of ["console.js", "index.html", "join.html", "..%2Fpackage.json"]) {
      const refused = await send("GET", `/join/assets/${file}`, { headers: { accept: "*/*" } });
      assert.equal(refused.status, 404, file);
    }
  });

  it("gives the ICE servers the service has now, kept by no cache", async () => {
    iceServers = [{ urls: ["stun:stun.example.net:3478"] }];
    const first = await send("GET", "/join/ice-servers");
    assert.equal(first.status, 200);
    assert.deepEqual(first.json, { iceServers: [{ urls: ["stun:stun.example.net:3478"] }] });
    assert.equal(first.headers["cache-control"], "no-store");
    // TURN credentials expire: each page is given the ones of its moment.
    iceServers = [
      {
        urls: ["turn:turn.example.net:3478?transport=udp"],
        username: "1700000000:page",
        credential: "c2VjcmV0",
      },
    ];
    const second = await send("GET", "/join/ice-servers");
    assert.deepEqual(second.json, { iceServers });
  });

  it("refuses a body without a PIN of 1 to 12 digits or an SDP offer, before the conferences see it", async () => {
    const asked = joins.requests.length;
    const cases: [unknown, number, string][] = [
      [{ offer: OFFER }, 400, "bad-pin"],
      [{ pin: "", offer: OFFER }, 400, "bad-pin"],
      [{ pin: "12a4", offer: OFFER }, 400, "bad-pin"],
      [{ pin: "1234567890123", offer: OFFER }, 400, "bad-pin"],
      [{ pin: 123456, offer: OFFER }, 400, "bad-pin"],
      [{ pin: "123456" }, 400, "bad-offer"],
      [{ pin: "123456", offer: "o=- 1 1 IN IP4 0.0.0.0" }, 400, "bad-offer"],
      [{ pin: "123456", offer: ["v=0"] }, 400, "bad-offer"],
      [[], 400, "bad-pin"],
      ["{not json", 400, "malformed-input"],
      [{ pin: "123456", offer: `v=0\r\n${"a=x\r\n".repeat(14_000)}` }, 413, "body-too-large"],
    ];
    for (const [body, status, error] of cases) {
      const refused = await postJoin(body);
      assert.equal(refused.status, status, `${JSON.stringify(body).slice(0, 60)}: ${refused.text}`);
      assert.equal(refused.json.error, error);
      assert.equal(typeof refused.json.message, "string");
      assert.ok((refused.json.message as string).length > 0);
    }
    const xml = await send("POST", "/join/calls", {
      headers: { "content-type": "application/xml", "x-forwarded-for": newAddress() },
      body: "<join/>",
    });
    assert.equal(xml.status, 415);
    assert.match(xml.json.message as string, /JSON/);
    assert.equal(joins.requests.length, asked, "no bad body reached the conferences");
  });

  it("answers each refusal with its status, name, words and Retry-After", async () => {
    const refusals: [BrowserJoinRefusal, number, string | undefined][] = [
      [{ refused: "wrong-pin" }, 403, undefined],
      [{ refused: "too-many-wrong-pins", retryAfterSeconds: 840 }, 429, "840"],
      [{ refused: "service-wrong-pins", retryAfterSeconds: 12.2 }, 503, "13"],
      [{ refused: "not-started" }, 409, undefined],
      [{ refused: "locked" }, 409, undefined],
      [{ refused: "full" }, 409, undefined],
      [{ refused: "encrypted-only" }, 403, undefined],
      [{ refused: "bad-offer", reason: "no audio m-line with Opus" }, 400, undefined],
      [{ refused: "unavailable", retryAfterSeconds: 30 }, 503, "30"],
    ];
    for (const [refusal, status, retryAfter] of refusals) {
      joins.answer = async () => refusal;
      const address = newAddress();
      const refused = await postJoin({ pin: "0042", offer: OFFER }, address);
      assert.equal(refused.status, status, refusal.refused);
      assert.match(String(refused.headers["content-type"]), /^application\/json/);
      assert.equal(refused.json.error, refusal.refused);
      assert.ok((refused.json.message as string).length > 0, refusal.refused);
      assert.equal(refused.headers["retry-after"], retryAfter, refusal.refused);
      // Over plain HTTP here: the call's signalling is not TLS.
      assert.deepEqual(joins.requests.at(-1), {
        pin: "0042",
        offer: OFFER,
        source: address,
        signallingTls: false,
      });
    }
    joins.answer = async () => ({ refused: "bad-offer", reason: "no audio m-line with Opus" });
    const reason = await postJoin({ pin: "0042", offer: OFFER });
    assert.match(reason.json.message as string, /^The offer cannot be answered: no audio m-line with Opus$/);
  });

  it("answers a join 201 with the answer and the page's token", async () => {
    let joined: BrowserJoined | undefined;
    joins.answer = async () => {
      joined = joins.admit({ userId: owner.id, conferenceId: 7, attendeeId: 70, moderator: true });
      return joined;
    };
    const created = await postJoin({ pin: "123456", offer: OFFER });
    assert.equal(created.status, 201, created.text);
    assert.ok(joined);
    assert.deepEqual(created.json, {
      token: joined.token,
      answer: joined.answer,
      conferenceId: 7,
      attendeeId: 70,
      moderator: true,
    });
    assert.equal(created.headers.location, `/join/calls/${joined.token}`);
    assert.equal(created.headers["cache-control"], "no-store");
    assert.equal(joins.requests.at(-1)?.pin, "123456");
  });

  it("hangs up a call whose page went away while it was being joined", async () => {
    let joinAsked = () => {};
    const asked = new Promise<void>((resolve) => {
      joinAsked = resolve;
    });
    let finishJoin = () => {};
    let joined: BrowserJoined | undefined;
    joins.answer = () =>
      new Promise((resolve) => {
        joinAsked();
        finishJoin = () => {
          joined = joins.admit({ userId: owner.id, conferenceId: 8, attendeeId: 80, moderator: false });
          resolve(joined);
        };
      });
    const body = JSON.stringify({ pin: "123456", offer: OFFER });
    const accepted: net.Socket[] = [];
    const onConnection = (serverSide: net.Socket) => accepted.push(serverSide);
    app.server.on("connection", onConnection);
    const socket = net.connect(Number(new URL(url).port), "127.0.0.1");
    socket.write(
      `POST /join/calls HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nX-Forwarded-For: ${newAddress()}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await asked;
    app.server.off("connection", onConnection);
    const serverSide = accepted.find((candidate) => candidate.remotePort === socket.localPort);
    assert.ok(serverSide);
    const closed = new Promise((resolve) => serverSide.on("close", resolve));
    socket.destroy();
    // The server has seen the page go before the join is done.
    await closed;
    finishJoin();
    await until("the call hung up", async () =>
      joins.left.includes(joined?.token ?? "") ? true : undefined,
    );
    assert.ok(joined);
    assert.ok(joins.left.includes(joined.token), "the call nobody got the token of was hung up");
    assert.equal(joins.participant(joined.token), undefined);
  });

  it("limits joins per client address, each address on its own", async () => {
    joins.answer = async () => ({ refused: "wrong-pin" });
    const address = newAddress();
    for (let i = 0; i < JOINS_PER_MINUTE; i++)
      assert.equal((await postJoin({ pin: "1", offer: OFFER }, address)).status, 403);
    const asked = joins.requests.length;
    const limited = await postJoin({ pin: "1", offer: OFFER }, address);
    assert.equal(limited.status, 429, limited.text);
    assert.equal(limited.json.error, "too-many-requests");
    assert.ok(Number(limited.headers["retry-after"]) > 0 && Number(limited.headers["retry-after"]) <= 60);
    assert.equal(joins.requests.length, asked, "the limited join did not reach the conferences");
    assert.equal((await postJoin({ pin: "1", offer: OFFER }, newAddress())).status, 403);
  });

  it("gives a token's room: its attendees by name, who is muted, has a hand up or talks, and the controls", async () => {
    const { conferenceId, attendeeId } = await conferenceWithAttendee(
      '<lecture-mode type="boolean">true</lecture-mode><dial-in-locked type="boolean">true</dial-in-locked>',
    );
    await store.db
      .updateTable("attendees")
      .set({ hand_up: flag(true), muted: flag(true) })
      .where("id", "=", attendeeId)
      .execute();
    await appendEvents(store.db, [event(conferenceId, attendeeId, "talking-started")], new Date());
    const { token } = joins.admit({ userId: owner.id, conferenceId, attendeeId: 999, moderator: false });
    const room = await send("GET", `/join/calls/${token}`);
    assert.equal(room.status, 200, room.text);
    assert.equal(room.headers["cache-control"], "no-store");
    assert.deepEqual(room.json, {
      conferenceId,
      conferenceName: "Weekly",
      state: "new",
      attendeeId: 999,
      moderator: false,
      attendees: [
        {
          id: attendeeId,
          name: "Carol",
          moderator: false,
          state: "new",
          muted: true,
          handUp: true,
          talking: true,
        },
      ],
      controls: { dialInLocked: true, lectureMode: true, recording: false, encryptedOnly: false },
    });
    assert.doesNotMatch(room.text, /6045550121/, "members are not shown each other's numbers");
    await appendEvents(store.db, [event(conferenceId, attendeeId, "talking-stopped")], new Date());
    const after = await send("GET", `/join/calls/${token}`);
    assert.equal((after.json.attendees as { talking: boolean }[])[0]?.talking, false);
  });

  it("streams the token's conference's events, and ends the stream when its call ends", async () => {
    const { conferenceId, attendeeId } = await conferenceWithAttendee();
    const other = await conferenceWithAttendee();
    const { token } = joins.admit({ userId: owner.id, conferenceId, attendeeId: 500, moderator: false });
    const stream = await EventStream.open(`${url}/join/calls/${token}/events`);
    streams.push(stream);
    assert.equal(stream.status, 200);
    assert.match(String(stream.headers["content-type"]), /^text\/event-stream/);
    await appendEvents(
      store.db,
      [
        event(other.conferenceId, other.attendeeId, "hand-raised"),
        event(conferenceId, attendeeId, "hand-raised"),
      ],
      new Date(),
    );
    const raised = await stream.waitFor("the hand raised", (e) => e.type === "hand-raised");
    assert.deepEqual(
      { conferenceId: raised.data.conferenceId, attendeeId: raised.data.attendeeId },
      { conferenceId, attendeeId },
    );
    // Another attendee's leaving is news; the participant's own ends its stream.
    await appendEvents(store.db, [event(conferenceId, attendeeId, "attendee-disconnected")], new Date());
    await stream.waitFor("the other's leaving", (e) => e.type === "attendee-disconnected");
    assert.equal(stream.ended, false);
    await appendEvents(store.db, [event(conferenceId, 500, "attendee-disconnected")], new Date());
    await stream.waitFor("its own leaving", (e) => e.data.attendeeId === 500);
    await until("the stream's end", async () => (stream.ended ? true : undefined));
    assert.ok(stream.ended, "the stream ended with the participant's call");
    assert.ok(
      stream.events.every((e) => e.data.conferenceId === conferenceId),
      "only the token's conference",
    );
  });

  it("counts participants' streams against the service, not against the owner's own", async () => {
    const { conferenceId } = await conferenceWithAttendee();
    const opened: EventStream[] = [];
    for (let index = 0; index <= MAX_STREAMS_PER_USER; index++) {
      const { token } = joins.admit({
        userId: owner.id,
        conferenceId,
        attendeeId: 600 + index,
        moderator: false,
      });
      const participantStream = await EventStream.open(`${url}/join/calls/${token}/events`);
      streams.push(participantStream);
      opened.push(participantStream);
    }
    assert.deepEqual(
      opened.map((each) => each.status),
      opened.map(() => 200),
      "more participants' streams than a user may open",
    );
    const own = await EventStream.open(`${url}/users/${owner.id}/conferences/${conferenceId}/events`, {
      auth: ["owner@example.com", "correct horse"],
    });
    streams.push(own);
    assert.equal(own.status, 200, "the owner's console still gets its stream");
  });

  it("ends the participant's call on DELETE, and knows no unknown or ended token", async () => {
    const { token } = joins.admit({ userId: owner.id, conferenceId: 9, attendeeId: 90, moderator: false });
    const left = await send("DELETE", `/join/calls/${token}`);
    assert.equal(left.status, 204);
    assert.equal(joins.left.at(-1), token);
    for (const unknown of [token, "never-given", "bad.token"]) {
      for (const [method, where] of [
        ["GET", `/join/calls/${unknown}`],
        ["DELETE", `/join/calls/${unknown}`],
        ["GET", `/join/calls/${unknown}/events`],
      ] as const) {
        const refused = await send(method, where, {
          headers: { accept: where.endsWith("/events") ? "text/event-stream" : "application/json" },
        });
        assert.equal(refused.status, 404, `${method} ${where}`);
        assert.equal(refused.json.error, "no-such-call");
      }
    }
    assert.equal(joins.left.at(-1), token, "an unknown token hangs nothing up");
  });
});

describe("join routes without browser joins", () => {
  it("are not there: the API alone has no conferences to join", async () => {
    const api = await startTestApi();
    try {
      for (const [method, where] of [
        ["GET", "/join"],
        ["GET", "/join/ice-servers"],
        ["POST", "/join/calls"],
      ] as const) {
        const answer = await api.request(method, where, method === "POST" ? { body: "<join/>" } : {});
        assert.equal(answer.status, 404, where);
      }
    } finally {
      await api.close();
    }
  });
});
