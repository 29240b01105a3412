import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { describe, it } from "node:test";
import { browserIceServers } from "../../src/api/ice-servers.js";

const SECRET = "north-shore-turn-secret";
const URLS = ["stun:turn.example.com", "turn:turn.example.com:3478?transport=udp"];
const NOW = new Date("2026-01-01T00:00:00.500Z");

describe("browserIceServers", () => {
  it("gives one entry with every URL and a credential that expires ttlSeconds from now", () => {
    const [server, ...more] = browserIceServers({ urls: URLS, secret: SECRET, ttlSeconds: 3600 }, NOW);
    assert.deepEqual(more, [], "one entry: the URLs share the credentials");
    assert.deepEqual(server?.urls, URLS);
    const [expiry, user] = (server?.username ?? "").split(":");
    assert.equal(Number(expiry), Math.floor(NOW.getTime() / 1000) + 3600, "the expiry, in Unix seconds");
    assert.equal(user, "bridgeline");
    // What a TURN server with the same static-auth-secret computes from the username.
    assert.equal(
      server?.credential,
      createHmac("sha1", SECRET)
        .update(server?.username ?? "")
        .digest("base64"),
      "the credential verifies under the secret",
    );
    assert.notEqual(
      server?.credential,
      createHmac("sha1", "another-secret")
        .update(server?.username ?? "")
        .digest("base64"),
    );
  });

  it("matches a credential computed by another implementation (openssl dgst -sha1 -hmac)", () => {
    // printf '%s' 1767229200:bridgeline | openssl dgst -sha1 -hmac north-shore-turn-secret -binary | base64
    assert.deepEqual(browserIceServers({ urls: URLS, secret: SECRET, ttlSeconds: 3600 }, NOW), [
      { urls: URLS, username: "1767229200:bridgeline", credential: "EVMYnKJohP+qPqcW613Xei+h2e0=" },
    ]);
  });

  it("gives the URLs without credentials when no secret is set", () => {
    assert.deepEqual(
      browserIceServers({ urls: ["stun:stun.example.com:3478"], secret: null, ttlSeconds: 3600 }, NOW),
      [{ urls: ["stun:stun.example.com:3478"] }],
    );
  });

  it("gives no entry when no URL is configured", () => {
    assert.deepEqual(browserIceServers({ urls: [], secret: null, ttlSeconds: 3600 }, NOW), []);
  });

  it("does not hand out the caller's own array", () => {
    const urls = [...URLS];
    const [server] = browserIceServers({ urls, secret: SECRET, ttlSeconds: 60 }, NOW);
    server?.urls.push("stun:elsewhere.example");
    assert.deepEqual(urls, URLS);
  });
});
