import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cardBrand, isExpired, luhnValid, normalizeCardNumber } from "../../src/domain/credit-card.js";

describe("luhnValid", () => {
  const cases: Array<[string, boolean]> = [
    ["4111111111111111", true],
    ["4111111111111112", false],
    ["378282246310005", true],
    ["5555555555554444", true],
    ["79927398713", true],
    ["79927398710", false],
    ["0", true],
    ["", false],
    ["4111 1111 1111 1111", false],
    ["abc", false],
  ];
  for (const [digits, expected] of cases) {
    it(`${JSON.stringify(digits)} -> ${expected}`, () => assert.equal(luhnValid(digits), expected));
  }
});

describe("cardBrand", () => {
  const cases: Array<[string, string]> = [
    ["4111111111111111", "visa"],
    ["5105105105105100", "mastercard"],
    ["5555555555554444", "mastercard"],
    ["2221000000000009", "mastercard"],
    ["2720990000000007", "mastercard"],
    ["2721000000000000", "unknown"],
    ["378282246310005", "amex"],
    ["341111111111111", "amex"],
    ["6011111111111117", "discover"],
    ["6445644564456445", "discover"],
    ["6500000000000002", "discover"],
    ["6221260000000000", "discover"],
    ["6229250000000000", "discover"],
    ["6229260000000000", "unknown"],
    ["30569309025904", "diners"],
    ["36227206271667", "diners"],
    ["38520000023237", "diners"],
    ["3530111333300000", "jcb"],
    ["3589000000000000", "jcb"],
    ["3590000000000000", "unknown"],
    ["1234567890123", "unknown"],
  ];
  for (const [digits, expected] of cases) {
    it(`${digits} -> ${expected}`, () => assert.equal(cardBrand(digits), expected));
  }
});

describe("normalizeCardNumber", () => {
  const cases: Array<[string, string | null]> = [
    ["4111 1111 1111 1111", "4111111111111111"],
    ["4111-1111-1111-1111", "4111111111111111"],
    ["4111111111111111", "4111111111111111"],
    ["123456789012", "123456789012"],
    ["1234567890123456789", "1234567890123456789"],
    ["12345678901", null],
    ["12345678901234567890", null],
    ["4111.1111.1111.1111", null],
    ["4111 1111 1111 111x", null],
    ["", null],
  ];
  for (const [input, expected] of cases) {
    it(`${JSON.stringify(input)} -> ${expected}`, () => assert.equal(normalizeCardNumber(input), expected));
  }
});

describe("isExpired", () => {
  const cases: Array<[number, number, string, boolean]> = [
    [3, 2025, "2025-03-31T23:59:59.999Z", false],
    [3, 2025, "2025-04-01T00:00:00.000Z", true],
    [3, 2025, "2025-03-01T00:00:00.000Z", false],
    [12, 2025, "2025-12-31T23:59:59.999Z", false],
    [12, 2025, "2026-01-01T00:00:00.000Z", true],
    [1, 2030, "2025-06-15T12:00:00.000Z", false],
    [6, 2024, "2025-06-15T12:00:00.000Z", true],
  ];
  for (const [month, year, now, expected] of cases) {
    it(`${month}/${year} at ${now} -> ${expected}`, () => {
      assert.equal(isExpired(month, year, new Date(now)), expected);
    });
  }
});
