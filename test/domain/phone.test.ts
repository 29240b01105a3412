import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  callsWithinLimits,
  normalizeNanpNumber,
  OPEN_CALLING_POLICY,
  whyNotCallable,
  whyOverCallLimits,
} from "../../src/domain/phone.js";

describe("normalizeNanpNumber", () => {
  const accepted: Array<[string, string]> = [
    ["604-555-0100", "6045550100"],
    ["(604) 555 0100", "6045550100"],
    ["+1 604 555 0100", "6045550100"],
    ["1-604-555-0100", "6045550100"],
    ["6045550100", "6045550100"],
    ["604.555.0100", "6045550100"],
    ["212-555-0199", "2125550199"],
    ["+1 809 555 0100", "8095550100"],
    ["800-555-0100", "8005550100"],
  ];
  for (const [input, subscriberNumber] of accepted) {
    it(`accepts ${JSON.stringify(input)}`, () => {
      assert.deepEqual(normalizeNanpNumber(input), { countryCode: "1", subscriberNumber });
    });
  }

  const rejected = [
    "+44 20 7946 0958",
    "123",
    "555-0100",
    "(011) 555 0100",
    "(111) 555 0100",
    "604-155-0100",
    "604-555-01000",
    "999-555-0100",
    "604-555-0100 ext 12",
    "call 604-555-0100",
    "abc",
    "",
  ];
  for (const input of rejected) {
    it(`rejects ${JSON.stringify(input)}`, () => assert.equal(normalizeNanpNumber(input), null));
  }
});

describe("whyNotCallable (toll fraud)", () => {
  const policy = { ...OPEN_CALLING_POLICY, deniedPrefixes: ["+1876", "+1604555019"] };
  const cases: Array<[string, string | undefined]> = [
    ["6045550123", undefined],
    ["8005550100", undefined],
    ["9005550123", "premium-rate numbers (900, 976) are not called"],
    ["6049760123", "premium-rate numbers (900, 976) are not called"],
    ["6044110123", "service codes (N11) are not called"],
    ["6045551212", "directory assistance (555-1212) is not called"],
    ["6045551213", undefined],
    ["8765550123", "numbers starting +1876 are not called here"],
    ["6045550199", "numbers starting +1604555019 are not called here"],
    ["6045550200", undefined],
  ];
  for (const [number, reason] of cases) {
    it(`${number}: ${reason ?? "callable"}`, () => {
      assert.equal(whyNotCallable(number, policy), reason);
    });
  }
  it("without a deny list, only the fixed rules", () => {
    assert.equal(whyNotCallable("8765550123", OPEN_CALLING_POLICY), undefined);
  });
});

describe("whyOverCallLimits (toll fraud)", () => {
  const policy = { ...OPEN_CALLING_POLICY, maxCallsInProgressPerUser: 3, maxCallsPerHourPerUser: 10 };
  it("under both limits: another call may be placed", () => {
    assert.equal(whyOverCallLimits({ inProgress: 2, lastHour: 9 }, policy), undefined);
  });
  it("at the calls in progress: refused", () => {
    assert.equal(
      whyOverCallLimits({ inProgress: 3, lastHour: 3 }, policy),
      "the account has 3 calls in progress, the most it may have at once",
    );
  });
  it("at the calls an hour: refused, though none is in progress", () => {
    assert.equal(
      whyOverCallLimits({ inProgress: 0, lastHour: 10 }, policy),
      "the account has placed 10 calls in the last hour, the most it may place in an hour",
    );
  });
});

describe("callsWithinLimits (toll fraud)", () => {
  const policy = { ...OPEN_CALLING_POLICY, maxCallsInProgressPerUser: 3, maxCallsPerHourPerUser: 10 };
  it("all of them while under both limits", () => {
    assert.deepEqual(callsWithinLimits({ inProgress: 0, lastHour: 0 }, 3, policy), {
      allowed: 3,
      refusal: undefined,
    });
  });
  it("the first up to the calls in progress, the rest refused with the reason", () => {
    assert.deepEqual(callsWithinLimits({ inProgress: 1, lastHour: 1 }, 5, policy), {
      allowed: 2,
      refusal: "the account has 3 calls in progress, the most it may have at once",
    });
  });
  it("the hourly limit when it is the nearer", () => {
    assert.deepEqual(callsWithinLimits({ inProgress: 0, lastHour: 9 }, 2, policy), {
      allowed: 1,
      refusal: "the account has placed 10 calls in the last hour, the most it may place in an hour",
    });
  });
  it("none past a limit already passed", () => {
    assert.equal(callsWithinLimits({ inProgress: 4, lastHour: 4 }, 1, policy).allowed, 0);
  });
  it("without limits, every call", () => {
    assert.equal(
      callsWithinLimits({ inProgress: 500, lastHour: 5000 }, 250, OPEN_CALLING_POLICY).allowed,
      250,
    );
  });
});
