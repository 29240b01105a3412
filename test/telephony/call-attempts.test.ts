/**
 * A placed call's attempts as pure decisions: the trunks a number is tried through and in what
 * order, which failures move the call to the next trunk, and which 3xx responses are followed.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { failsOverTrunk, redirectOf } from "../../src/telephony/call-attempts.js";
import { dialPlanOf, trunkCandidates } from "../../src/telephony/dial-plan.js";

describe("the trunks a number is tried through", () => {
  const a = { uri: "sip:a.example" };
  const b = { uri: "sip:b.example" };
  const c = { uri: "sip:c.example" };
  const plan = dialPlanOf(c, [
    { prefix: "+1604", trunk: a },
    { prefix: "+1604555", trunk: b },
  ]);

  it("the matching routes, longest prefix first, then the default trunk", () => {
    assert.deepEqual(trunkCandidates(plan, "+16045550100"), [b, a, c]);
    assert.deepEqual(trunkCandidates(plan, "+16041230100"), [a, c]);
    assert.deepEqual(trunkCandidates(plan, "+17785550100"), [c]);
  });

  it("each trunk once, however many routes and the default name it", () => {
    const twice = dialPlanOf(a, [
      { prefix: "+1604", trunk: a },
      { prefix: "+1604555", trunk: b },
      { prefix: "+16045", trunk: b },
    ]);
    assert.deepEqual(trunkCandidates(twice, "+16045550100"), [b, a]);
  });

  it("trunks found down last, in their order", () => {
    assert.deepEqual(trunkCandidates(plan, "+16045550100", new Set([b])), [a, c, b]);
    assert.deepEqual(trunkCandidates(plan, "+16045550100", new Set([b, a])), [c, b, a]);
    assert.deepEqual(trunkCandidates(plan, "+16045550100", new Set([a, b, c])), [b, a, c]);
  });

  it("none without a default trunk or a matching route", () => {
    assert.deepEqual(
      trunkCandidates(dialPlanOf(undefined, [{ prefix: "+1604", trunk: a }]), "+17785550100"),
      [],
    );
  });
});

describe("which failures move a call to the next trunk", () => {
  it("no server answered or reached: our 408 (Timer B, the server timeout) and 503 (transport, lookup)", () => {
    assert.equal(failsOverTrunk(408, false), true);
    assert.equal(failsOverTrunk(503, false), true);
  });

  it("our other failures do not: a 2xx we could not take (502), our own CANCEL (487)", () => {
    assert.equal(failsOverTrunk(502, false), false);
    assert.equal(failsOverTrunk(487, false), false);
  });

  it("a trunk's 5xx, but 501 and 505, which every trunk would answer alike", () => {
    for (const status of [500, 502, 503, 504, 580])
      assert.equal(failsOverTrunk(status, true), true, `${status}`);
    for (const status of [501, 505]) assert.equal(failsOverTrunk(status, true), false, `${status}`);
  });

  it("the callee's answer ends the call: 4xx (a trunk's 408 too), 487, 6xx, 3xx", () => {
    for (const status of [302, 404, 408, 480, 484, 486, 487, 488, 600, 603, 604])
      assert.equal(failsOverTrunk(status, true), false, `${status}`);
  });
});

describe("which 3xx responses are followed", () => {
  const rules = {
    follow: true,
    allow: () => true,
    redirectedFrom: undefined,
    calling: "+16045550123",
  };

  it("a 301 or 302 to a sip: or tel: number, as +1NPANXXXXXX, the host never taken", () => {
    assert.deepEqual(redirectOf(302, "sip:+16045550199@evil.example", rules), { number: "+16045550199" });
    assert.deepEqual(redirectOf(301, "sip:16045550199@evil.example;user=phone", rules), {
      number: "+16045550199",
    });
    assert.deepEqual(redirectOf(302, "tel:+1-604-555-0199", rules), { number: "+16045550199" });
    assert.deepEqual(redirectOf(302, "sip:6045550199@192.0.2.1:5080", rules), { number: "+16045550199" });
  });

  it("not a 3xx: not a redirect", () => {
    assert.equal(redirectOf(486, "sip:+16045550199@evil.example", rules), undefined);
    assert.equal(redirectOf(200, undefined, rules), undefined);
  });

  it("refuses 305 Use Proxy, 300 and 380", () => {
    assert.match(refused(redirectOf(305, "sip:proxy.example", rules)), /305 Use Proxy is not followed/);
    assert.match(refused(redirectOf(300, "sip:+16045550199@a.example", rules)), /only 301 and 302/);
    assert.match(refused(redirectOf(380, "sip:+16045550199@a.example", rules)), /only 301 and 302/);
  });

  it("refuses a trunk that does not follow, a caller that allows none, a second redirect", () => {
    const contact = "sip:+16045550199@a.example";
    assert.match(refused(redirectOf(302, contact, { ...rules, follow: false })), /follow-redirects/);
    assert.match(refused(redirectOf(302, contact, { ...rules, allow: undefined })), /allows no redirect/);
    assert.match(
      refused(redirectOf(302, contact, { ...rules, redirectedFrom: "+16045550100" })),
      /redirected once already/,
    );
  });

  it("asks the caller about the number, and refuses what it does not allow", () => {
    const asked: string[] = [];
    const allow = (e164: string) => {
      asked.push(e164);
      return e164 !== "+18765550199";
    };
    assert.deepEqual(redirectOf(302, "sip:+16045550199@a.example", { ...rules, allow }), {
      number: "+16045550199",
    });
    assert.match(
      refused(redirectOf(302, "sip:+18765550199@a.example", { ...rules, allow })),
      /does not allow calls to \+18765550199/,
    );
    assert.deepEqual(asked, ["+16045550199", "+18765550199"]);
  });

  it("refuses a Contact that is no North American number, or the number called (a loop)", () => {
    for (const contact of [
      undefined,
      "sip:alice@a.example",
      "sip:a.example",
      "sip:+442079460000@a.example",
      "sip:+16045550199;ext=12@a.example",
      "http://a.example/+16045550199",
      "sip:+1604555@a.example",
    ])
      assert.match(
        refused(redirectOf(302, contact, rules)),
        /names no North American number/,
        String(contact),
      );
    assert.match(refused(redirectOf(302, "sip:+16045550123@a.example", rules)), /names the number called/);
  });
});

function refused(redirect: ReturnType<typeof redirectOf>): string {
  assert.ok(redirect !== undefined && "refused" in redirect, JSON.stringify(redirect));
  return redirect.refused;
}
