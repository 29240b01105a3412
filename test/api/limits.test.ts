/**
 * The API's bounds on what grows with outside input (docs/limits.md, "HTTP API"): event streams per
 * user and in all, console sessions per user, open connections. Each is reached here and answered
 * as documented, and room is made again once something is let go.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import { MAX_STREAMS_PER_USER } from "../../src/api/event-feed.js";
import { MAX_SESSIONS_PER_USER } from "../../src/store/console-sessions.js";
import { EventStream } from "../helpers/event-stream.js";
import { createUser, startTestService, type TestService } from "../helpers/service.js";

type User = Awaited<ReturnType<typeof createUser>>;

describe("event streams", () => {
  const MAX_EVENT_STREAMS = MAX_STREAMS_PER_USER + 2;
  let api: TestService;
  const streams: EventStream[] = [];

  before(async () => {
    api = await startTestService({ maxEventStreams: MAX_EVENT_STREAMS });
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await api.close();
  });

  const open = async (user: User) => {
    const stream = await EventStream.open(`${api.httpUrl}/users/${user.id}/events`, { auth: user.auth });
    streams.push(stream);
    return stream;
  };

  it(`takes ${MAX_STREAMS_PER_USER} streams of one user and answers the next 429; one closed makes room`, async () => {
    const alice = await createUser(api);
    const opened = [];
    for (let i = 0; i < MAX_STREAMS_PER_USER; i++) opened.push(await open(alice));
    assert.deepEqual(
      opened.map((stream) => stream.status),
      opened.map(() => 200),
    );
    const refused = await open(alice);
    assert.equal(refused.status, 429);
    opened[0]?.close();
    // The service notices the closed stream when its socket closes; the next open is then taken.
    let again = await open(alice);
    for (let tries = 0; again.status !== 200 && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      again = await open(alice);
    }
    assert.equal(again.status, 200, "a stream closed leaves room for another");
  });

  it(`takes ${MAX_EVENT_STREAMS} streams in all and answers the next 503 with Retry-After`, async () => {
    // Alice holds MAX_STREAMS_PER_USER streams from the test above.
    const bob = await createUser(api);
    for (let i = 0; i < MAX_EVENT_STREAMS - MAX_STREAMS_PER_USER; i++)
      assert.equal((await open(bob)).status, 200);
    const carol = await createUser(api);
    const refused = await open(carol);
    assert.equal(refused.status, 503);
    assert.ok(Number(refused.headers["retry-after"]) > 0);
  });
});

describe("failed logins at once", () => {
  const LIMIT = 5;
  let api: TestService;
  before(async () => {
    api = await startTestService({ failedLoginLimit: LIMIT });
  });
  after(() => api.close());

  it(`checks only ${LIMIT} of 40 wrong passwords sent together from one address; the rest get 429`, async () => {
    const alice = await createUser(api);
    const responses = await Promise.all(
      Array.from({ length: 40 }, () => api.request("GET", "/current", { auth: [alice.auth[0], "guess"] })),
    );
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 401).length, LIMIT, statuses.join(" "));
    assert.equal(statuses.filter((status) => status === 429).length, 40 - LIMIT);
    assert.equal((await api.request("GET", "/current", { auth: alice.auth })).status, 429);
  });
});

describe("console sessions", () => {
  let api: TestService;
  before(async () => {
    api = await startTestService();
  });
  after(() => api.close());

  it(`keeps ${MAX_SESSIONS_PER_USER} sessions per user: signing in again ends the least recently used`, async () => {
    const alice = await createUser(api);
    const signIn = async () => {
      const response = await request(`${api.httpUrl}/console/session`, {
        method: "POST",
        headers: { accept: "application/json", "content-type": "application/json" },
        body: JSON.stringify({ email: alice.auth[0], password: alice.auth[1] }),
      });
      await response.body.text();
      assert.equal(response.statusCode, 200);
      return String(response.headers["set-cookie"]).split(";")[0] as string;
    };
    const sessionStatus = async (cookie: string) => {
      const response = await request(`${api.httpUrl}/console/session`, {
        headers: { accept: "application/json", cookie },
      });
      await response.body.text();
      return response.statusCode;
    };
    const cookies: string[] = [];
    for (let i = 0; i <= MAX_SESSIONS_PER_USER; i++) cookies.push(await signIn());
    const sessions = await api.inspect((db) =>
      db.selectFrom("console_sessions").select("token_hash").where("user_id", "=", alice.id).execute(),
    );
    assert.equal(sessions.length, MAX_SESSIONS_PER_USER);
    assert.equal(await sessionStatus(cookies[0] as string), 401, "the oldest session was ended");
    assert.equal(await sessionStatus(cookies[1] as string), 200);
    assert.equal(await sessionStatus(cookies.at(-1) as string), 200, "the new session is kept");
  });
});

describe("open connections", () => {
  const MAX_CONNECTIONS = 3;
  let api: TestService;
  const sockets: net.Socket[] = [];
  before(async () => {
    api = await startTestService({ maxConnections: MAX_CONNECTIONS });
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await api.close();
  });

  const connect = async () => {
    const socket = net.connect(Number(new URL(api.httpUrl).port), "127.0.0.1");
    sockets.push(socket);
    await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    return socket;
  };
  /** What the service answers on `socket` to a GET of /billing-packages; "" when it closes unanswered. */
  const answer = (socket: net.Socket) =>
    new Promise<string>((resolve) => {
      let received = "";
      socket.on("data", (chunk) => {
        received += String(chunk);
        if (received.includes("\r\n\r\n")) resolve(received.split("\r\n")[0] as string);
      });
      socket.once("close", () => resolve(received.split("\r\n")[0] ?? ""));
      socket.write("GET /billing-packages HTTP/1.1\r\nHost: localhost\r\nAccept: application/xml\r\n\r\n");
    });

  it(`holds ${MAX_CONNECTIONS} connections and closes more unanswered, until one ends`, async () => {
    const held = [];
    for (let i = 0; i < MAX_CONNECTIONS; i++) held.push(await connect());
    assert.equal(await answer(held[0] as net.Socket), "HTTP/1.1 200 OK", "under the limit");
    assert.equal(await answer(await connect()), "", "over the limit: closed unanswered");
    held[1]?.destroy();
    let status = "";
    for (let tries = 0; status === "" && tries < 50; tries++) {
      status = await answer(await connect());
      if (status === "") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(status, "HTTP/1.1 200 OK", "a connection ended leaves room for another");
  });
});
