/**
 * Limits count a client by its address, an IPv6 address by its /64 (what one subscriber gets) and an
 * IPv4-mapped IPv6 address as the IPv4 address: failed logins from such addresses add up, however
 * often each was seen before (clientSource remembers what it normalized).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createUser, type InProcessTestApi, startTestApi } from "../helpers/service.js";

const LIMIT = 2;

describe("client addresses as limits count them", () => {
  let api: InProcessTestApi;
  let auth: [string, string];

  before(async () => {
    // Requests stand for clients at other addresses with X-Forwarded-For.
    api = await startTestApi({ failedLoginLimit: LIMIT, trustedProxies: "127.0.0.1" });
    ({ auth } = await createUser(api));
  });
  after(() => api?.close());

  const current = (address: string, password = auth[1]) =>
    api.request("GET", "/current", { auth: [auth[0], password], headers: { "x-forwarded-for": address } });

  it("counts the addresses of one IPv6 /64 as one client, and another /64 apart", async () => {
    for (const address of ["2001:db8:1:2::1", "2001:db8:1:2::1"])
      assert.equal((await current(address)).status, 200, "right password, before any failure");
    assert.equal((await current("2001:db8:1:2::1", "wrong")).status, 401);
    assert.equal((await current("2001:db8:1:2:ffff::9", "wrong")).status, 401);
    assert.equal((await current("2001:db8:1:2::1")).status, 429, "the /64 has no failed logins left");
    assert.equal((await current("2001:db8:1:2:aaaa::7")).status, 429, "nor any address in it");
    assert.equal((await current("2001:db8:1:3::1")).status, 200, "another /64 is another client");
  });

  it("counts an IPv4-mapped IPv6 address as the IPv4 address", async () => {
    assert.equal((await current("198.51.100.30", "wrong")).status, 401);
    assert.equal((await current("::ffff:198.51.100.30", "wrong")).status, 401);
    assert.equal((await current("198.51.100.30")).status, 429);
    assert.equal((await current("::ffff:198.51.100.30")).status, 429);
    assert.equal((await current("198.51.100.31")).status, 200);
  });
});
