/**
 * The console's session: sign-in with e-mail and password (JSON), the cookie's attributes, the whole
 * XML API and the events stream reachable with the cookie, the CSRF token required on every change
 * made with it, sign-out, the 12-hour idle expiry, throttling, and the console's pages with their
 * security headers.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, describe, it } from "node:test";
import { gunzipSync } from "node:zlib";
import { request } from "undici";
import { CONSOLE_DIST } from "../../src/api/routes/console.js";
import { EventStream } from "../helpers/event-stream.js";
import { createUser, startTestService, type TestService } from "../helpers/service.js";
import { type Auth, assertErrorMatches, textOf, type XmlNode } from "../helpers/xml.js";

interface JsonResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

describe("console session", () => {
  let api: TestService;
  let alice: { id: number; auth: Auth };

  before(async () => {
    api = await startTestService({ failedLoginLimit: 3 });
    alice = await createUser(api, "<time-zone>Pacific Time (US &amp; Canada)</time-zone>");
  });
  after(() => api.close());

  async function json(
    method: string,
    path: string,
    options: { body?: unknown; cookie?: string; csrf?: string; forwardedFor?: string } = {},
  ): Promise<JsonResponse> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    if (options.cookie) headers.cookie = options.cookie;
    if (options.csrf) headers["x-csrf-token"] = options.csrf;
    const response = await request(`${api.httpUrl}${path}`, {
      method: method as "GET",
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await response.body.text();
    return { status: response.statusCode, headers: response.headers, body: text ? JSON.parse(text) : {} };
  }

  async function signIn(): Promise<{ cookie: string; csrf: string; response: JsonResponse }> {
    const response = await json("POST", "/console/session", {
      body: { email: alice.auth[0], password: alice.auth[1] },
    });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    const setCookie = String(response.headers["set-cookie"]);
    const cookie = setCookie.split(";")[0] as string;
    return { cookie, csrf: String(response.body.csrfToken), response };
  }

  it("signs in with e-mail and password: the user, a CSRF token and a strict session cookie", async () => {
    const { response, cookie, csrf } = await signIn();
    assert.deepEqual(response.body.user, {
      id: alice.id,
      name: "Test User",
      email: alice.auth[0],
      timeZone: "America/Los_Angeles",
    });
    assert.ok(csrf.length >= 32);
    const setCookie = String(response.headers["set-cookie"]);
    assert.match(setCookie, /^bridgeline_session=[A-Za-z0-9_-]{40,};/);
    for (const attribute of [/; Path=\//, /; HttpOnly/, /; Secure/, /; SameSite=Strict/])
      assert.match(setCookie, attribute);
    const stored = await api.inspect((db) => db.selectFrom("console_sessions").selectAll().execute());
    assert.ok(
      stored.every((row) => !cookie.includes(row.token_hash)),
      "only a hash of the token is stored",
    );

    const current = await json("GET", "/console/session", { cookie });
    assert.equal(current.status, 200);
    assert.deepEqual(current.body, response.body);
  });

  it("opens the XML API and the events stream with the cookie; changes need the CSRF token", async () => {
    const own = await startTestService();
    try {
      const user = await createUser(own);
      const signIn = await request(`${own.httpUrl}/console/session`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ email: user.auth[0], password: user.auth[1] }),
      });
      const session = (await signIn.body.json()) as { csrfToken: string };
      const cookie = String(signIn.headers["set-cookie"]).split(";")[0] as string;

      const current = await own.request("GET", "/current", { headers: { cookie } });
      assert.equal(current.status, 200, current.text);
      const body = `<conference><name>Console</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at></conference>`;
      const forged = await own.request("POST", `/users/${user.id}/conferences`, {
        headers: { cookie },
        body,
      });
      assert.equal(forged.status, 403, forged.text);
      assertErrorMatches(forged, /X-CSRF-Token/);
      const wrong = await own.request("POST", `/users/${user.id}/conferences`, {
        headers: { cookie, "x-csrf-token": `${session.csrfToken.slice(1)}x` },
        body,
      });
      assert.equal(wrong.status, 403, wrong.text);
      const created = await own.request("POST", `/users/${user.id}/conferences`, {
        headers: { cookie, "x-csrf-token": session.csrfToken },
        body,
      });
      assert.equal(created.status, 201, created.text);
      const conferenceId = Number(textOf(created.xml.conference as XmlNode, "id"));

      const stream = await EventStream.open(
        `${own.httpUrl}/users/${user.id}/conferences/${conferenceId}/events`,
        {
          cookie,
        },
      );
      assert.equal(stream.status, 200);
      stream.close();
      // Basic keeps working beside the cookie.
      const basic = await own.request("GET", `/users/${user.id}/conferences/${conferenceId}`, {
        auth: user.auth,
      });
      assert.equal(basic.status, 200);

      const signOutForged = await request(`${own.httpUrl}/console/session`, {
        method: "DELETE",
        headers: { cookie, accept: "application/json" },
      });
      assert.equal(signOutForged.statusCode, 403);
      await signOutForged.body.text();
      const signOut = await request(`${own.httpUrl}/console/session`, {
        method: "DELETE",
        headers: { cookie, accept: "application/json", "x-csrf-token": session.csrfToken },
      });
      assert.equal(signOut.statusCode, 204);
      assert.match(String(signOut.headers["set-cookie"]), /^bridgeline_session=;.*Expires=Thu, 01 Jan 1970/);
      const after = await own.request("GET", "/current", { headers: { cookie } });
      assert.equal(after.status, 401);
      assert.equal(after.headers["www-authenticate"], undefined, "no browser password dialog");
    } finally {
      await own.close();
    }
  });

  it("signs every console session out when the password changes", async () => {
    const user = await createUser(api);
    const opened = await json("POST", "/console/session", {
      body: { email: user.auth[0], password: user.auth[1] },
    });
    assert.equal(opened.status, 200);
    const cookie = String(opened.headers["set-cookie"]).split(";")[0] as string;
    assert.equal((await json("GET", "/console/session", { cookie })).status, 200);
    const changed = await api.request("PUT", `/users/${user.id}`, {
      auth: user.auth,
      body: "<user><password>a brand new secret</password><password-confirmation>a brand new secret</password-confirmation></user>",
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal((await json("GET", "/console/session", { cookie })).status, 401);
  });

  it("ends a session after 12 hours without a request", async () => {
    const { cookie } = await signIn();
    assert.equal((await json("GET", "/console/session", { cookie })).status, 200);
    const thirteenHoursAgo = new Date(Date.now() - 13 * 60 * 60 * 1000).toISOString();
    await api.inspect((db) =>
      db.updateTable("console_sessions").set({ last_seen_at: thirteenHoursAgo }).execute(),
    );
    assert.equal((await json("GET", "/console/session", { cookie })).status, 401);
  });

  it("refuses JSON whose strings XML 1.0 forbids, bytes that are not UTF-8 and other charsets", async () => {
    const send = async (body: string | Buffer, contentType = "application/json") => {
      const response = await request(`${api.httpUrl}/console/session`, {
        method: "POST",
        headers: { accept: "application/json", "content-type": contentType },
        body,
      });
      return { status: response.statusCode, body: (await response.body.json()) as { error: string } };
    };
    const password = JSON.stringify(alice.auth[1]).slice(1, -1);
    for (const escaped of ["\\u0000", "\\u001f", "\\ud800", "\\uffff"]) {
      const body = `{"email": "${alice.auth[0]}", "password": "${password}${escaped}"}`;
      const refused = await send(body);
      assert.equal(refused.status, 400, `${escaped}: ${JSON.stringify(refused.body)}`);
      assert.match(refused.body.error, /XML 1\.0 does not allow/);
    }
    const notUtf8 = Buffer.concat([
      Buffer.from(`{"email": "${alice.auth[0]}", "password": "`),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    assert.deepEqual(await send(notUtf8), {
      status: 400,
      body: { error: "The body is not valid UTF-8", code: "BL_ERR_MALFORMED_INPUT" },
    });
    const latin1 = await send(
      JSON.stringify({ email: alice.auth[0], password: alice.auth[1] }),
      "application/json; charset=iso-8859-1",
    );
    assert.equal(latin1.status, 415);
    assert.equal((latin1.body as { code?: string }).code, "BL_ERR_UNSUPPORTED_MEDIA_TYPE");
  });

  it("refuses wrong credentials with 401 JSON and no Basic challenge, then throttles with 429", async () => {
    const refused = await json("POST", "/console/session", {
      body: { email: alice.auth[0], password: "wrong" },
    });
    assert.equal(refused.status, 401);
    assert.match(String(refused.body.error), /Invalid e-mail or password/);
    assert.equal(
      refused.body.code,
      "BL_ERR_NOT_SIGNED_IN",
      "the code of the error registry (api/http-errors.ts)",
    );
    assert.equal(refused.headers["www-authenticate"], undefined);
    const malformed = await json("POST", "/console/session", { body: { email: alice.auth[0] } });
    assert.equal(malformed.status, 400);
    const nobody = await json("GET", "/console/session");
    assert.equal(nobody.status, 401);
    assert.ok(nobody.body.error);
    // The limit is 3 failures per address in this service.
    await json("POST", "/console/session", { body: { email: alice.auth[0], password: "wrong" } });
    await json("POST", "/console/session", { body: { email: alice.auth[0], password: "wrong" } });
    const throttled = await json("POST", "/console/session", {
      body: { email: alice.auth[0], password: alice.auth[1] },
    });
    assert.equal(throttled.status, 429);
    assert.ok(Number(throttled.headers["retry-after"]) > 0);
  });

  it("serves the console's pages from console/dist with no-cache, ETags, gzip and strict security headers", async () => {
    const built = fs.existsSync(`${CONSOLE_DIST}index.html`);
    const page = await request(`${api.httpUrl}/console`, { headers: { accept: "text/html" } });
    const html = await page.body.text();
    assert.equal(page.headers["x-content-type-options"], "nosniff");
    assert.equal(page.headers["referrer-policy"], "same-origin");
    assert.match(String(page.headers["content-security-policy"]), /default-src 'self'/);
    assert.doesNotMatch(String(page.headers["content-security-policy"]), /unsafe-inline/);
    if (!built) {
      assert.equal(page.statusCode, 503);
      assert.equal(html, "console not built: run npm install");
      return;
    }
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers["content-type"]), /^text\/html/);
    assert.equal(page.headers["cache-control"], "no-cache");
    assert.match(html, /\/console\/assets\/console\.js/);
    const slash = await request(`${api.httpUrl}/console/`);
    assert.equal(slash.statusCode, 200);
    await slash.body.text();

    const script = await request(`${api.httpUrl}/console/assets/console.js`, { headers: { accept: "*/*" } });
    assert.equal(script.statusCode, 200);
    assert.match(String(script.headers["content-type"]), /^text\/javascript/);
    const etag = String(script.headers.etag);
    await script.body.text();
    const again = await request(`${api.httpUrl}/console/assets/console.js`, {
      headers: { "if-none-match": etag },
    });
    assert.equal(again.statusCode, 304);
    await again.body.text();
    const style = await request(`${api.httpUrl}/console/assets/console.css`, {
      headers: { accept: "text/css,*/*;q=0.1" },
    });
    assert.equal(style.statusCode, 200);
    assert.match(String(style.headers["content-type"]), /^text\/css/);
    await style.body.text();
    const plain = await (await request(`${api.httpUrl}/console/assets/console.js`)).body.arrayBuffer();
    for (const path of ["/console/assets/console.js", "/docs/assets/redoc.standalone.js"]) {
      const gzipped = await request(`${api.httpUrl}${path}`, { headers: { "accept-encoding": "gzip, br" } });
      assert.equal(gzipped.statusCode, 200, path);
      assert.equal(gzipped.headers["content-encoding"], "gzip", path);
      assert.equal(gzipped.headers.vary, "accept-encoding", path);
      const body = Buffer.from(await gzipped.body.arrayBuffer());
      const unzipped = gunzipSync(body);
      assert.ok(body.length < unzipped.length / 2, `${path}: ${body.length} of ${unzipped.length} bytes`);
      if (path === "/console/assets/console.js") {
        assert.deepEqual(unzipped, Buffer.from(plain));
        assert.notEqual(gzipped.headers.etag, etag, "each encoding its own ETag");
      }
    }
    const refusedGzip = await request(`${api.httpUrl}/console/assets/console.js`, {
      headers: { "accept-encoding": "gzip;q=0, identity" },
    });
    assert.equal(refusedGzip.headers["content-encoding"], undefined);
    assert.deepEqual(Buffer.from(await refusedGzip.body.arrayBuffer()), Buffer.from(plain));
    for (const path of [
      "/console/assets/..%2Fpackage.json",
      "/console/assets/missing.js",
      "/console/assets/.hidden.js",
    ]) {
      const refused = await request(`${api.httpUrl}${path}`);
      assert.equal(refused.statusCode, 404, path);
      await refused.body.text();
    }
  });
});
