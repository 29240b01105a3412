import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isValidEmail } from "../../src/domain/email.js";

describe("isValidEmail", () => {
  const cases: Array<[string, boolean]> = [
    ["alice@example.com", true],
    ["Alice.Smith+conf@mail.example.co.uk", true],
    ["o'brien@my-host.example.org", true],
    [`${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(57)}.com`, true],
    [`${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(58)}.com`, false],
    ["alice@localhost", false],
    ["alice@example", false],
    ["alice@example.c", false],
    ["alice@example.123", false],
    ["alice@-example.com", false],
    ["alice@example-.com", false],
    ["alice@example..com", false],
    ["alice@.example.com", false],
    ["alice example@example.com", false],
    ["alice@exa mple.com", false],
    ["alice@@example.com", false],
    ["alice@bob@example.com", false],
    ["@example.com", false],
    ["alice@", false],
    ["alice", false],
    ["", false],
  ];
  for (const [input, expected] of cases) {
    it(`${input.length > 40 ? `${input.length}-char address` : JSON.stringify(input)} -> ${expected}`, () => {
      assert.equal(isValidEmail(input), expected);
    });
  }
});
