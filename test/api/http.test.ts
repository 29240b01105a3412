import assert from "node:assert/strict";
import https from "node:https";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import {
  createUser,
  signupXml,
  startTestService,
  type TestResponse,
  type TestService,
} from "../helpers/service.js";
import { type Auth, assertErrorMatches, errorMessages, itemsOf } from "../helpers/xml.js";

/** Signs of a stack trace or source location leaking into a body: frames, file paths. */
const STACK_TRACE = /(^|\n)\s*at\s|\.(ts|js|mjs):\d+|node_modules|file:\/\/|\/work\/|\bError:/;

/** The response is an XML error document with the status, a matching message and no stack trace. */
function assertError(response: TestResponse, status: number, pattern?: RegExp): void {
  assert.equal(response.status, status, response.text);
  assert.match(String(response.headers["content-type"]), /^application\/xml/);
  const messages = errorMessages(response);
  assert.ok(messages.length > 0 && messages.every((message) => message.trim() !== ""), response.text);
  if (pattern) assertErrorMatches(response, pattern);
  assert.doesNotMatch(response.text, STACK_TRACE);
}

function allowed(response: TestResponse): string[] {
  return String(response.headers.allow ?? "")
    .split(",")
    .map((method) => method.trim())
    .filter(Boolean)
    .sort();
}

const conferenceXml = (name: string) =>
  `<conference><name>${name}</name><scheduled-to-start-at>2030-01-15T10:00:00Z</scheduled-to-start-at></conference>`;

describe("HTTP conventions", () => {
  let api: TestService;
  let alice: { id: number; auth: Auth };
  let bob: { id: number; auth: Auth };

  before(async () => {
    api = await startTestService();
    [alice, bob] = await Promise.all([createUser(api), createUser(api)]);
  });
  after(() => api.close());

  /** Creates a resource as `auth` and returns the id at the end of its Location. */
  async function create(urlPath: string, auth: Auth, body: string): Promise<number> {
    const response = await api.request("POST", urlPath, { auth, body });
    assert.equal(response.status, 201, response.text);
    return Number(String(response.headers.location).split("/").pop());
  }

  /** Users signed up with an e-mail address starting `prefix`: none when every attempt was refused. */
  const signedUp = (prefix: string) =>
    api.inspect((db) => db.selectFrom("users").select("id").where("email", "like", `${prefix}%`).execute());

  describe("400 Bad Request", () => {
    it("answers malformed XML", async () => {
      for (const body of [
        "<user><name>Unclosed</user>",
        "not xml at all",
        "<user><name>a</name></user><user/>",
      ]) {
        assertError(await api.request("POST", "/users", { body }), 400);
      }
      const put = await api.request("PUT", `/users/${alice.id}`, {
        auth: alice.auth,
        body: "<user><name>x</nam></user>",
      });
      assertError(put, 400, /malformed XML/);
    });

    it("answers a document with the wrong root element", async () => {
      const wrongRoot = signupXml("wrong-root@example.com").replace(/<(\/?)user>/g, "<$1person>");
      assertError(await api.request("POST", "/users", { body: wrongRoot }), 400, /<user>/);
      const put = await api.request("PUT", `/users/${alice.id}`, {
        auth: alice.auth,
        body: "<contact><name>x</name></contact>",
      });
      assertError(put, 400, /<user>/);
    });

    it("quotes the input in an error only in part: 30 KB of unclosed tags gets a short error", async () => {
      for (const body of [`<user>${"<x>".repeat(10_000)}`, `<user><${"n".repeat(30_000)}></user>`]) {
        const response = await api.request("POST", "/users", { body });
        assertError(response, 400, /malformed XML/);
        assert.ok(response.text.length < 1_500, `a ${response.text.length}-character error`);
        assertErrorMatches(response, /… \(\d+ more characters\)$/);
      }
      const longPath = await api.request("GET", `/${"p".repeat(10_000)}`);
      assertError(longPath, 404);
      assert.ok(longPath.text.length < 1_500, `a ${longPath.text.length}-character error`);
    });

    it("answers an empty body", async () => {
      assertError(await api.request("POST", "/users", { body: "" }), 400, /<user>/);
    });

    it("answers a character XML 1.0 forbids in text, an attribute, a password or a reference, storing nothing", async () => {
      const forbidden = [
        "\u0000",
        "\u0001",
        "\u0008",
        "\u000B",
        "\u000C",
        "\u000E",
        "\u001F",
        "\uFFFE",
        "\uFFFF",
      ];
      const bodies = forbidden.flatMap((character, index) => {
        const email = `forbidden-${index}-${process.pid}@example.com`;
        const hex = (character.codePointAt(0) as number).toString(16);
        return [
          signupXml(email).replace("Test User", `Test${character}User`),
          signupXml(email).replace("<name>", `<name lang="x${character}">`),
          signupXml(email, `correct${character}horse`),
          signupXml(email).replace("Test User", `Test&#x${hex};User`),
        ];
      });
      for (const body of bodies)
        assertError(await api.request("POST", "/users", { body }), 400, /XML 1\.0 does not allow/);
      assert.deepEqual(await signedUp("forbidden-"), []);
      assertError(
        await api.request("PUT", `/users/${alice.id}`, {
          auth: alice.auth,
          body: "<user><name>A\u0000</name></user>",
        }),
        400,
        /U\+0000/,
      );
      const after = await api.request("GET", `/users/${alice.id}`, { auth: alice.auth });
      assert.equal(after.status, 200);
      assert.ok(!after.text.includes("\u0000"), after.text);
    });

    it("answers a query parameter holding a character XML 1.0 forbids (PostgreSQL answered 500)", async () => {
      for (const query of ["name_contains=%00", "name=a%01", "representation=%00", "%00=x"]) {
        const response = await api.request("GET", `/users/${alice.id}/conferences?${query}`, {
          auth: alice.auth,
        });
        assertError(
          response,
          400,
          /query parameter.* holds U\+000[01] at position \d+, which XML 1\.0 does not allow/,
        );
      }
    });

    it("answers bytes that are not UTF-8 rather than storing U+FFFD, storing nothing", async () => {
      const notUtf8 = [
        [0xc3, 0x28], // a lead byte without its continuation
        [0xff, 0xfe], // never in UTF-8 (a UTF-16 byte-order mark)
        [0xc0, 0xaf], // overlong "/"
        [0xed, 0xa0, 0x80], // a surrogate, U+D800
        [0x80], // a stray continuation byte
        [0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
      ];
      for (const [index, bytes] of notUtf8.entries()) {
        const [before, after] = signupXml(`not-utf8-${index}-${process.pid}@example.com`).split("Test User");
        const body = Buffer.concat([
          Buffer.from(`${before}Test`),
          Buffer.from(bytes),
          Buffer.from(`User${after}`),
        ]);
        assertError(await api.request("POST", "/users", { body }), 400, /not valid UTF-8/);
      }
      assert.deepEqual(await signedUp("not-utf8-"), []);
    });
  });

  describe("401 Unauthorized", () => {
    const assertChallenge = (response: TestResponse) => {
      assertError(response, 401);
      assert.match(String(response.headers["www-authenticate"]), /^Basic realm="Bridgeline"/);
    };

    it("answers requests without credentials, before revealing whether a user exists", async () => {
      for (const urlPath of [
        `/users/${alice.id}`,
        "/users/999999",
        "/current",
        `/users/${alice.id}/conferences`,
      ]) {
        assertChallenge(await api.request("GET", urlPath));
      }
    });

    it("answers a wrong password, an unknown user and a malformed Authorization header", async () => {
      assertChallenge(await api.request("GET", "/current", { auth: [alice.auth[0], "wrong password"] }));
      assertChallenge(await api.request("GET", "/current", { auth: ["nobody@example.com", alice.auth[1]] }));
      assertChallenge(await api.request("GET", "/current", { headers: { authorization: "Bearer abc" } }));
      assertChallenge(await api.request("GET", "/current", { headers: { authorization: "Basic !!!" } }));
      assert.equal((await api.request("GET", "/current", { auth: alice.auth })).status, 200);
    });
  });

  describe("403 Forbidden", () => {
    it("answers any request into another user's tree", async () => {
      const bobConference = await create(
        `/users/${bob.id}/conferences`,
        bob.auth,
        conferenceXml("Bob's call"),
      );
      const requests: Array<[string, string, string?]> = [
        ["GET", `/users/${bob.id}`],
        ["PUT", `/users/${bob.id}`, "<user><name>Hijacked</name></user>"],
        ["GET", `/users/${bob.id}/contacts`],
        ["POST", `/users/${bob.id}/contacts`, "<contact><name>Planted</name></contact>"],
        ["GET", `/users/${bob.id}/conferences`],
        ["GET", `/users/${bob.id}/conferences/${bobConference}`],
        ["DELETE", `/users/${bob.id}/conferences/${bobConference}`],
        ["GET", `/users/${bob.id}/conferences/${bobConference}/attendees`],
      ];
      for (const [method, urlPath, body] of requests) {
        assertError(await api.request(method, urlPath, { auth: alice.auth, body }), 403);
      }
      const bobsView = await api.request("GET", `/users/${bob.id}/conferences/${bobConference}`, {
        auth: bob.auth,
      });
      assert.equal(bobsView.status, 200, "the refused DELETE must not have removed it");
      const bobsUser = await api.request("GET", `/users/${bob.id}`, { auth: bob.auth });
      assert.doesNotMatch(bobsUser.text, /Hijacked/);
    });
  });

  describe("404 Not Found", () => {
    it("answers an unknown user id", async () => {
      for (const urlPath of ["/users/999999", "/users/999999/conferences", "/users/abc"]) {
        assertError(await api.request("GET", urlPath, { auth: alice.auth }), 404);
      }
    });

    it("answers an unknown path", async () => {
      for (const urlPath of ["/nothing-here", "/users/1/unknown", "/billing-packages/1/x", "/"]) {
        assertError(await api.request("GET", urlPath, { auth: alice.auth }), 404);
      }
    });

    it("answers a child id that exists under another parent", async () => {
      const bobConference = await create(`/users/${bob.id}/conferences`, bob.auth, conferenceXml("Bob's"));
      const bobContact = await create(
        `/users/${bob.id}/contacts`,
        bob.auth,
        "<contact><name>Bob's friend</name></contact>",
      );
      const [first, second] = [
        await create(`/users/${alice.id}/conferences`, alice.auth, conferenceXml("First")),
        await create(`/users/${alice.id}/conferences`, alice.auth, conferenceXml("Second")),
      ];
      const attendee = await create(
        `/users/${alice.id}/conferences/${second}/attendees`,
        alice.auth,
        '<attendee><dial-in type="boolean">true</dial-in></attendee>',
      );
      const misplaced = [
        `/users/${alice.id}/conferences/${bobConference}`,
        `/users/${alice.id}/conferences/${bobConference}/attendees`,
        `/users/${alice.id}/contacts/${bobContact}`,
        `/users/${alice.id}/conferences/${first}/attendees/${attendee}`,
      ];
      for (const urlPath of misplaced) {
        assertError(await api.request("GET", urlPath, { auth: alice.auth }), 404);
      }
      const ownAttendee = `/users/${alice.id}/conferences/${second}/attendees/${attendee}`;
      assert.equal((await api.request("GET", ownAttendee, { auth: alice.auth })).status, 200);
    });
  });

  describe("405 Method Not Allowed", () => {
    it("answers a method the path does not offer, with Allow", async () => {
      const cases: Array<[string, string, string[]]> = [
        ["DELETE", `/users/${alice.id}`, ["GET", "HEAD", "PUT"]],
        ["PATCH", `/users/${alice.id}`, ["GET", "HEAD", "PUT"]],
        ["DELETE", `/users/${alice.id}.xml`, ["GET", "HEAD", "PUT"]],
        ["GET", "/users", ["POST"]],
        ["DELETE", "/current", ["GET", "HEAD"]],
        ["DELETE", "/billing-packages", ["GET", "HEAD"]],
      ];
      for (const [method, urlPath, allow] of cases) {
        const response = await api.request(method, urlPath, {
          auth: alice.auth,
          ...(method === "PATCH" && { body: "<user><name>Patched</name></user>" }),
        });
        assertError(response, 405);
        assert.deepEqual(allowed(response), allow, `${method} ${urlPath}`);
      }
      const user = await api.request("GET", `/users/${alice.id}`, { auth: alice.auth });
      assert.equal(user.status, 200, "DELETE must not have removed the user");
      assert.doesNotMatch(user.text, /Patched/);
    });
  });

  describe("406 Not Acceptable", () => {
    it("answers an Accept header that admits neither XML nor JSON", async () => {
      for (const accept of ["text/html", "application/xml;q=0", "application/json;q=0, text/xml;q=0"]) {
        const response = await api.request("GET", "/billing-packages", { headers: { accept } });
        assertError(response, 406);
      }
    });

    it("serves XML to */*, text/xml and a list that prefers XML or ties; JSON to a list that prefers it", async () => {
      for (const accept of [
        "*/*",
        "text/xml",
        "application/json;q=0.4, application/xml;q=0.5",
        "application/json, application/xml",
      ]) {
        const response = await api.request("GET", "/billing-packages", { headers: { accept } });
        assert.equal(response.status, 200, `${accept}: ${response.text}`);
        assert.match(String(response.headers["content-type"]), /^application\/xml/, accept);
      }
      for (const accept of [
        "application/json",
        "application/json, application/xml;q=0.5",
        "application/*;q=0.1, application/json",
      ]) {
        const response = await api.request("GET", "/billing-packages", { headers: { accept } });
        assert.equal(response.status, 200, `${accept}: ${response.text}`);
        assert.match(String(response.headers["content-type"]), /^application\/json/, accept);
      }
    });
  });

  describe("413 Payload Too Large", () => {
    it("answers a body over 64 KiB and reads one just under it", async () => {
      const huge = `<user><name>${"x".repeat(70 * 1024)}</name></user>`;
      assertError(await api.request("POST", "/users", { body: huge }), 413);
      const put = await api.request("PUT", `/users/${alice.id}`, { auth: alice.auth, body: huge });
      assertError(put, 413);
      const justUnder = `<user><name>${"x".repeat(63 * 1024)}</name></user>`;
      assertError(await api.request("POST", "/users", { body: justUnder }), 422, /^name is too long/);
    });
  });

  describe("413 before 100 Continue", () => {
    /**
     * A POST sent as curl and browsers send a large one: headers with `Expect: 100-continue`, the body
     * only once the server says 100 Continue. What the client saw: the status, and whether it was asked.
     */
    const expectContinue = (contentLength: number, body?: Buffer) =>
      new Promise<{ status: number; text: string; askedToContinue: boolean }>((resolve, reject) => {
        let askedToContinue = false;
        const request = https.request(`${api.httpsUrl}/users`, {
          method: "POST",
          rejectUnauthorized: false,
          headers: {
            accept: "application/xml",
            "content-type": "application/xml",
            "content-length": contentLength,
            expect: "100-continue",
          },
        });
        request.on("continue", () => {
          askedToContinue = true;
          if (body !== undefined) request.write(body);
          else {
            // The announced length of filler, in 64 KiB pieces.
            const piece = Buffer.alloc(64 * 1024, 0x20);
            for (let sent = 0; sent < contentLength; sent += piece.length)
              request.write(piece.subarray(0, contentLength - sent));
          }
          request.end();
        });
        request.on("response", (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              text: Buffer.concat(chunks).toString(),
              askedToContinue,
            }),
          );
        });
        request.on("error", reject);
        request.flushHeaders();
      });

    it("answers a 50 MB body announced with Expect: 100-continue with 413 over HTTPS, never asking for it", async () => {
      const refused = await expectContinue(50 * 1024 * 1024);
      assert.equal(refused.status, 413, refused.text);
      assert.equal(refused.askedToContinue, false, "100 Continue was sent for a body that is refused");
      assert.match(refused.text, /<error>Request body is larger than 65536 bytes<\/error>/);
    });

    it("asks for a body within the limit and reads it", async () => {
      const body = Buffer.from(signupXml(`continued-${process.pid}@example.com`));
      const created = await expectContinue(body.length, body);
      assert.equal(created.status, 201, created.text);
      assert.equal(created.askedToContinue, true);
    });
  });

  describe("415 Unsupported Media Type", () => {
    it("answers a form body and a body of no declared type", async () => {
      const form = await api.request("POST", "/users", {
        body: "name=Form",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      assertError(form, 415);
      const plain = await api.request("PUT", `/users/${alice.id}`, {
        auth: alice.auth,
        body: "<user><name>Plain</name></user>",
        headers: { "content-type": "text/plain" },
      });
      assertError(plain, 415);
      assertError(await api.request("POST", "/users"), 415);
      // The helper always declares XML bodies, so this request is made by hand.
      const untyped = await request(`${api.httpUrl}/users`, {
        method: "POST",
        headers: { accept: "application/xml" },
        body: signupXml("untyped@example.com"),
      });
      const text = await untyped.body.text();
      assert.equal(untyped.statusCode, 415, text);
      assert.match(text, /<errors>/);
    });

    it("answers a charset other than UTF-8, in Content-Type or in the XML declaration", async () => {
      const email = `latin1-${process.pid}@example.com`;
      for (const charset of ["ISO-8859-1", "us-ascii", "utf-16", "windows-1252", '"latin1"', "nonsense"]) {
        const response = await api.request("POST", "/users", {
          body: signupXml(email),
          headers: { "content-type": `application/xml; charset=${charset}` },
        });
        assertError(response, 415, /must be UTF-8/);
      }
      for (const encoding of ["ISO-8859-1", "UTF-16", "us-ascii"]) {
        const body = signupXml(email).replace('encoding="UTF-8"', `encoding="${encoding}"`);
        assertError(await api.request("POST", "/users", { body }), 415, /must be UTF-8/);
      }
      assert.deepEqual(await signedUp("latin1-"), []);
    });

    it("accepts text/xml and application/xml with a charset", async () => {
      for (const contentType of ["text/xml", "application/xml; charset=utf-8", 'text/xml; Charset="UTF-8"']) {
        const response = await api.request("POST", "/users", {
          body: signupXml(`typed-${contentType.length}-${process.pid}@example.com`),
          headers: { "content-type": contentType },
        });
        assert.equal(response.status, 201, `${contentType}: ${response.text}`);
      }
    });
  });

  describe("public billing packages", () => {
    it("lists the packages without credentials", async () => {
      for (const urlPath of ["/billing-packages", "/billing-packages.xml"]) {
        const response = await api.request("GET", urlPath);
        const packages = itemsOf(response, "billing-packages", "billing-package").map((item) => ({
          id: item.id,
          name: item.name,
        }));
        assert.deepEqual(packages, [
          { id: { "@_type": "integer", "#text": "1" }, name: "Basic" },
          { id: { "@_type": "integer", "#text": "2" }, name: "Professional" },
          { id: { "@_type": "integer", "#text": "3" }, name: "Enterprise" },
        ]);
      }
    });
  });
});

describe("429 Too Many Requests", () => {
  let api: TestService;
  let user: { id: number; auth: Auth };

  before(async () => {
    api = await startTestService({ failedLoginLimit: 3, signupLimit: 2 });
    user = await createUser(api); // the first of the two sign-ups allowed
  });
  after(() => api.close());

  const assertThrottled = (response: TestResponse) => {
    assertError(response, 429);
    const retryAfter = Number(response.headers["retry-after"]);
    assert.ok(
      Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 900,
      `Retry-After ${retryAfter}`,
    );
  };

  it("answers failed logins beyond the limit, even with the right password then", async () => {
    const wrong: Auth = [user.auth[0], "wrong password"];
    assert.equal((await api.request("GET", "/current", { auth: wrong })).status, 401);
    assert.equal((await api.request("GET", "/current", { auth: ["nobody@example.com", "x"] })).status, 401);
    assert.equal((await api.request("GET", "/current", { auth: user.auth })).status, 200, "under the limit");
    assert.equal((await api.request("GET", "/current", { auth: wrong })).status, 401, "the third failure");
    assertThrottled(await api.request("GET", "/current", { auth: wrong }));
    assertThrottled(await api.request("GET", `/users/${user.id}`, { auth: user.auth }));
  });

  it("answers sign-ups beyond the limit, counting refused ones", async () => {
    const refused = await api.request("POST", "/users", { body: "<user><name>No e-mail</name></user>" });
    assertError(refused, 422);
    assertThrottled(await api.request("POST", "/users", { body: signupXml("late@example.com") }));
    assertThrottled(await api.request("POST", "/users/", { body: signupXml("later@example.com") }));
  });

  it("answers a sign-up body over the limit 413 even past the sign-up limit (reached above)", async () => {
    const huge = signupXml(`huge-${process.pid}@example.com`).replace("Test User", "x".repeat(70 * 1024));
    for (let attempt = 0; attempt < 3; attempt++)
      assertError(await api.request("POST", "/users", { body: huge }), 413);
  });
});

describe("X-Forwarded-For that names no address", () => {
  let api: TestService;
  let user: { id: number; auth: Auth };

  before(async () => {
    api = await startTestService({ failedLoginLimit: 2, trustedProxies: "127.0.0.1" });
    user = await createUser(api);
  });
  after(() => api.close());

  it("counts failed logins against the peer's address, not against what the header says", async () => {
    const wrong: Auth = [user.auth[0], "wrong password"];
    const from = (forwardedFor: string) => ({ auth: wrong, headers: { "x-forwarded-for": forwardedFor } });
    assert.equal((await api.request("GET", "/current", from("not-an-address"))).status, 401);
    assert.equal((await api.request("GET", "/current", from("999.1.1.1"))).status, 401);
    // A new "address" each time would make a new key each time: these are the peer's, over its limit.
    for (const forwardedFor of ["x1", "x2", "127.0.0.1:80, x3", ""])
      assert.equal((await api.request("GET", "/current", from(forwardedFor))).status, 429, forwardedFor);
    // A real address behind the trusted proxy is still a client of its own.
    const other = await api.request("GET", "/current", {
      auth: user.auth,
      headers: { "x-forwarded-for": "198.51.100.20" },
    });
    assert.equal(other.status, 200, other.text);
  });
});
