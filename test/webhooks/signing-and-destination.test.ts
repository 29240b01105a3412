/**
 * Standard Webhooks signing against the project's published test vector and a verification written
 * from the specification; and the destination check: resolving, refusing, and pinning the connection
 * to the addresses checked.
 */
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { newMessageId } from "../../src/domain/webhook.js";
import { checkDestination, pinnedLookup, type Resolver } from "../../src/webhooks/destination.js";
import { postJson } from "../../src/webhooks/post.js";
import { newSecret, signature, signedHeaders } from "../../src/webhooks/signature.js";
import { verifyStandardWebhook } from "../helpers/webhook-receiver.js";

describe("Standard Webhooks signature", () => {
  it("matches the specification's test vector", () => {
    // libraries/javascript/src/webhook.test.ts of github.com/standard-webhooks/standard-webhooks.
    assert.equal(
      signature(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        '{"test": 2432232314}',
      ),
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
  });

  it("makes secrets of 24 random bytes and ids without dots", () => {
    const secret = newSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.equal(Buffer.from(secret.slice(6), "base64").length, 24);
    assert.notEqual(newSecret(), secret);
    assert.match(newMessageId(), /^msg_[A-Za-z0-9_-]{22}$/);
  });

  it("signs headers a receiver verifies (id, Unix seconds, v1 signature)", () => {
    const secret = newSecret();
    const body = '{"type":"attendee-added"}';
    const at = new Date("2030-01-01T00:00:05.900Z");
    const headers = signedHeaders(secret, "msg_abc", at, body);
    assert.equal(headers["webhook-timestamp"], String(Date.parse("2030-01-01T00:00:05Z") / 1000));
    assert.equal(verifyStandardWebhook(secret, headers, body, at.getTime()), undefined);
    assert.equal(verifyStandardWebhook(secret, headers, `${body} `, at.getTime()), "no signature matches");
    assert.equal(verifyStandardWebhook(newSecret(), headers, body, at.getTime()), "no signature matches");
    assert.match(
      verifyStandardWebhook(secret, headers, body, at.getTime() + 301_000) ?? "",
      /not within five minutes/,
    );
  });
});

describe("webhook destinations", () => {
  const resolving =
    (answers: Record<string, string[]>): Resolver =>
    async (host) => {
      const addresses = answers[host];
      if (addresses === undefined) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    };
  const policy = {
    allowPrivate: false,
    resolve: resolving({
      "hooks.example.com": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
      "sneaky.example.com": ["93.184.215.14", "10.0.0.8"],
      localhost: ["127.0.0.1", "::1"],
    }),
  };

  it("resolves a host and keeps its addresses when every one is public", async () => {
    const destination = await checkDestination(new URL("https://hooks.example.com/in"), policy);
    assert.deepEqual(destination, {
      addresses: [
        { address: "93.184.215.14", family: 4 },
        { address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 },
      ],
    });
  });

  it("refuses a host with any private address, address literals, and hosts that do not resolve", async () => {
    const problem = async (url: string) => {
      const destination = await checkDestination(new URL(url), policy);
      return "problem" in destination ? destination.problem : undefined;
    };
    assert.equal(
      await problem("https://sneaky.example.com/"),
      "url leads to sneaky.example.com (10.0.0.8), a private address: webhooks may not call private, loopback or link-local networks",
    );
    assert.match(
      (await problem("http://localhost:8080/")) ?? "",
      /localhost \(127\.0\.0\.1\), a loopback address/,
    );
    assert.match((await problem("http://[::1]/")) ?? "", /leads to ::1, a loopback address/);
    assert.match((await problem("http://0x7f.1/")) ?? "", /leads to 127\.0\.0\.1, a loopback address/);
    assert.match((await problem("http://169.254.169.254/latest/meta-data/")) ?? "", /link-local/);
    assert.equal(
      await problem("https://nowhere.example.com/"),
      "url: the host nowhere.example.com cannot be resolved (ENOTFOUND)",
    );
    assert.equal(await problem("https://93.184.215.14/"), undefined);
  });

  it("resolves nothing when private destinations are allowed", async () => {
    const destination = await checkDestination(new URL("http://localhost/"), {
      allowPrivate: true,
      resolve: policy.resolve,
    });
    assert.deepEqual(destination, { addresses: [] });
  });

  it("connects to the checked address, whatever DNS would say to the request", async () => {
    const server = http.createServer((_request, response) => response.writeHead(204).end());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      // This name does not exist in DNS: only the pinned lookup can take the request anywhere.
      const url = new URL(`http://receiver.invalid:${port}/hook`);
      const pinned = await postJson(url, {
        headers: {},
        body: "{}",
        timeoutMs: 2000,
        lookup: pinnedLookup([{ address: "127.0.0.1", family: 4 }]),
      });
      assert.deepEqual(pinned.outcome, { status: 204 });
      const unpinned = await postJson(url, { headers: {}, body: "{}", timeoutMs: 2000 });
      assert.ok("error" in unpinned.outcome, JSON.stringify(unpinned.outcome));
    } finally {
      server.close();
    }
  });
});
