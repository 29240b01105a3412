import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalizeNanpNumber } from "../../src/domain/phone.js";

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
