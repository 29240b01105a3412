/**
 * The API's error registry (api/http-errors.ts): every code in it is answered by some request, with
 * the status the registry gives it, and every domain error class has a code of its own that the
 * registry maps. Requests go through buildApi().inject() over a migrated SQLite store; the code each
 * answer was chosen by is read from the error itself (the response bodies carry no code: the
 * contract is unchanged).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { InjectOptions } from "fastify";
import { EventFeed } from "../../src/api/event-feed.js";
import { API_ERRORS, type ApiErrorCode, MAX_BODY_BYTES } from "../../src/api/http-errors.js";
import { buildApi, describeError } from "../../src/api/server.js";
import {
  BadRequest,
  type DomainError,
  Forbidden,
  NotFound,
  StaleLockVersion,
  ValidationFailed,
} from "../../src/domain/errors.js";
import { createLogger } from "../../src/log.js";
import type { Store } from "../../src/store/database.js";
import { openSqliteStore } from "../../src/store/database.js";
import { signupXml } from "../helpers/service.js";

const dataDir = mkdtempSync(path.join(tmpdir(), "bridgeline-error-codes-"));
let store: Store;
let app: Awaited<ReturnType<typeof buildApi>>;
/** The code of the last error answered, as the API's error handler chose it. */
let answered: ApiErrorCode | string | undefined;

before(async () => {
  store = await openSqliteStore(dataDir);
  const logger = createLogger("silent");
  app = await buildApi({
    store,
    logger,
    failedLoginLimit: 2,
    signupLimit: 100,
    throttleWindowSeconds: 60,
    trustedProxies: null,
    dataDir,
    accessNumbers: [],
    // No event stream may open: the service's limit is reached at once.
    eventFeed: new EventFeed(store, logger, { maxStreams: 0 }),
  });
  app.addHook("onError", async (_request, _reply, error) => {
    answered = describeError(error).code;
  });
  await app.ready();
});

after(async () => {
  await app?.close();
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const XML = { "content-type": "application/xml" };

function basic(email: string, password = "correct horse"): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}` };
}

/** Sends `request`; the code its error answer was chosen by, checked against the registry's status. */
async function codeOf(request: InjectOptions): Promise<string | undefined> {
  answered = undefined;
  const response = await app.inject(request);
  assert.ok(response.statusCode >= 400, `${request.method} ${request.url}: ${response.statusCode}`);
  assert.ok(answered !== undefined, `${request.method} ${request.url} answered without an error`);
  const entry = API_ERRORS[answered as ApiErrorCode];
  assert.ok(entry !== undefined, `${answered} is not in the registry`);
  assert.equal(response.statusCode, entry.status, `${answered}: ${response.body}`);
  for (const [name, value] of Object.entries("headers" in entry ? entry.headers : {}))
    assert.equal(response.headers[name], value, `${answered}'s ${name}`);
  return answered;
}

async function signUp(email: string): Promise<number> {
  const response = await app.inject({
    method: "POST",
    url: "/users",
    headers: XML,
    payload: signupXml(email),
  });
  assert.equal(response.statusCode, 201, response.body);
  return Number(/<id type="integer">(\d+)<\/id>/.exec(response.body)?.[1]);
}

describe("error codes", () => {
  it("gives each domain error class a code of its own, mapped to a client-error status", () => {
    const errors: DomainError[] = [
      new BadRequest(["x"]),
      new ValidationFailed(["x"]),
      new NotFound("x"),
      new Forbidden(),
      new StaleLockVersion("x"),
    ];
    const codes = errors.map((error) => error.code);
    assert.equal(new Set(codes).size, codes.length, "no two classes share a code");
    for (const error of errors) {
      const answer = describeError(error);
      assert.equal(answer.code, error.code);
      assert.equal(answer.status, API_ERRORS[error.code].status);
      assert.ok(answer.status >= 400 && answer.status < 500, `${error.code}: ${answer.status}`);
      assert.deepEqual(answer.messages, error.messages);
    }
  });

  it("answers every registered code to some request, with the registry's status", async () => {
    const reached = new Set<string>();
    const expect = async (code: ApiErrorCode, request: InjectOptions) => {
      assert.equal(await codeOf(request), code, `${request.method} ${request.url}`);
      reached.add(code);
    };
    const owner = "owner@example.com";
    const ownerId = await signUp(owner);
    const otherId = await signUp("other@example.com");
    const auth = basic(owner);

    await expect("BL_ERR_NO_ROUTE", { method: "GET", url: "/nowhere" });
    await expect("BL_ERR_METHOD_NOT_ALLOWED", { method: "DELETE", url: "/users" });
    await expect("BL_ERR_NOT_ACCEPTABLE", { method: "GET", url: "/users", headers: { accept: "text/html" } });
    await expect("BL_ERR_UNSUPPORTED_MEDIA_TYPE", {
      method: "POST",
      url: "/users",
      headers: { "content-type": "text/plain" },
      payload: "hello",
    });
    await expect("BL_ERR_BODY_TOO_LARGE", {
      method: "POST",
      url: "/users",
      headers: XML,
      payload: `<user>${" ".repeat(MAX_BODY_BYTES)}</user>`,
    });
    await expect("BL_ERR_MALFORMED_INPUT", {
      method: "GET",
      url: `/users/${ownerId}?name=%01`,
      headers: auth,
    });
    await expect("BL_ERR_BAD_REQUEST", { method: "POST", url: "/users", headers: XML, payload: "<nope/>" });
    await expect("BL_ERR_VALIDATION_FAILED", {
      method: "POST",
      url: "/users",
      headers: XML,
      payload: "<user><email>not an address</email></user>",
    });
    await expect("BL_ERR_AUTHENTICATION_REQUIRED", { method: "GET", url: `/users/${ownerId}` });
    await expect("BL_ERR_NOT_FOUND", { method: "GET", url: "/users/999999", headers: auth });
    await expect("BL_ERR_FORBIDDEN", { method: "GET", url: `/users/${otherId}`, headers: auth });
    await expect("BL_ERR_STALE_LOCK_VERSION", {
      method: "PUT",
      url: `/users/${ownerId}`,
      headers: { ...XML, ...auth },
      payload: '<user><name>Renamed</name><lock-version type="integer">99</lock-version></user>',
    });
    const created = await app.inject({
      method: "POST",
      url: `/users/${ownerId}/conferences`,
      headers: { ...XML, ...auth },
      payload: `<conference><name>Weekly</name><scheduled-to-start-at>${new Date(Date.now() + 3_600_000).toISOString()}</scheduled-to-start-at></conference>`,
    });
    assert.equal(created.statusCode, 201, created.body);
    const conference = String(created.headers.location);
    await expect("BL_ERR_CONFLICT", {
      method: "POST",
      url: `${new URL(conference, "http://localhost").pathname}/end`,
      headers: { ...XML, ...auth },
    });
    await expect("BL_ERR_SERVICE_BUSY", {
      method: "GET",
      url: `/users/${ownerId}/events`,
      headers: { ...auth, accept: "text/event-stream" },
    });

    await expect("BL_ERR_NOT_SIGNED_IN", { method: "GET", url: "/console/session" });
    await expect("BL_ERR_NO_SUCH_FILE", { method: "GET", url: "/console/assets/nothing.unknown" });
    const session = await app.inject({
      method: "POST",
      url: "/console/session",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ email: owner, password: "correct horse" }),
    });
    assert.equal(session.statusCode, 200, session.body);
    const cookie = String(session.headers["set-cookie"]).split(";")[0] as string;
    await expect("BL_ERR_CSRF_TOKEN", {
      method: "PUT",
      url: `/users/${ownerId}`,
      headers: { ...XML, cookie },
      payload: "<user><name>Renamed</name></user>",
    });

    // The failed-login limit (2), reached from this address.
    for (const attempt of [1, 2]) {
      const refused = await codeOf({
        method: "GET",
        url: `/users/${ownerId}`,
        headers: basic(owner, "wrong"),
      });
      assert.equal(refused, "BL_ERR_AUTHENTICATION_REQUIRED", `attempt ${attempt}`);
    }
    await expect("BL_ERR_TOO_MANY_REQUESTS", { method: "GET", url: `/users/${ownerId}`, headers: auth });

    // A fault of the service's own (its database gone from under it): 500, without detail.
    await store.close();
    await expect("BL_ERR_INTERNAL", { method: "GET", url: "/users/1/contacts", headers: auth });

    // PostgreSQL unreachable (restarting, silent) is answered in test/faults/postgres-restart.test.ts
    // and postgres-silent.test.ts, against a real server.
    const elsewhere: ApiErrorCode[] = ["BL_ERR_DATABASE_UNAVAILABLE"];
    assert.deepEqual(
      [...reached, ...elsewhere].sort(),
      Object.keys(API_ERRORS).sort(),
      "every registered code is answered",
    );
  });
});
