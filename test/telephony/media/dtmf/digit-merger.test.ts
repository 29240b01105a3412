import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DigitMerger, type DigitSource } from "../../../../src/telephony/media/dtmf/digit-merger.js";

/** A merger on a clock the test sets, and the digits it passed on as "key:source". */
function merger(windowMs?: number) {
  const clock = { now: 0 };
  const passed: string[] = [];
  const options = windowMs === undefined ? { now: () => clock.now } : { windowMs, now: () => clock.now };
  const digits = new DigitMerger(
    (key: string, source: DigitSource) => passed.push(`${key}:${source}`),
    options,
  );
  return { clock, passed, digits };
}

describe("DigitMerger", () => {
  it("passes on only the telephone-event when the tone of the same press follows", () => {
    const { clock, passed, digits } = merger();
    digits.fromTelephoneEvent("5");
    clock.now = 60;
    digits.fromInband("5");
    assert.deepEqual(passed, ["5:rfc4733"]);
  });

  it("passes on only the tone when the telephone-event of the same press follows", () => {
    const { clock, passed, digits } = merger();
    clock.now = 1000;
    digits.fromInband("#");
    clock.now = 1200;
    digits.fromTelephoneEvent("#");
    assert.deepEqual(passed, ["#:inband"]);
  });

  it("passes on the same key from the other path once the 200 ms window has passed", () => {
    const { clock, passed, digits } = merger();
    digits.fromTelephoneEvent("5");
    clock.now = 201;
    digits.fromInband("5");
    assert.deepEqual(passed, ["5:rfc4733", "5:inband"]);
  });

  it("passes on different keys from the two paths within the window", () => {
    const { clock, passed, digits } = merger();
    digits.fromTelephoneEvent("1");
    clock.now = 50;
    digits.fromInband("2");
    assert.deepEqual(passed, ["1:rfc4733", "2:inband"]);
  });

  it("passes on a key repeated on one path: each path reports a press once", () => {
    const { clock, passed, digits } = merger();
    digits.fromTelephoneEvent("7");
    clock.now = 120;
    digits.fromTelephoneEvent("7");
    clock.now = 150;
    digits.fromInband("9");
    clock.now = 180;
    digits.fromInband("9");
    assert.deepEqual(passed, ["7:rfc4733", "7:rfc4733", "9:inband", "9:inband"]);
  });

  it("drops one echo per press: two quick presses arriving on both paths give two digits", () => {
    const { clock, passed, digits } = merger();
    digits.fromTelephoneEvent("3");
    clock.now = 40;
    digits.fromInband("3");
    clock.now = 150;
    digits.fromTelephoneEvent("3");
    clock.now = 190;
    digits.fromInband("3");
    assert.deepEqual(passed, ["3:rfc4733", "3:rfc4733"]);
  });

  it("pairs the reports of interleaved presses in order", () => {
    const { clock, passed, digits } = merger();
    digits.fromTelephoneEvent("1");
    clock.now = 90;
    digits.fromTelephoneEvent("2");
    clock.now = 100;
    digits.fromInband("1");
    clock.now = 190;
    digits.fromInband("2");
    clock.now = 250;
    digits.fromInband("1");
    assert.deepEqual(passed, ["1:rfc4733", "2:rfc4733", "1:inband"]);
  });

  it("pairs a late echo with the oldest press still in the window", () => {
    const { clock, passed, digits } = merger();
    digits.fromTelephoneEvent("4");
    clock.now = 100;
    digits.fromTelephoneEvent("4");
    clock.now = 180;
    digits.fromInband("4");
    clock.now = 290;
    digits.fromInband("4");
    clock.now = 400;
    digits.fromInband("4");
    assert.deepEqual(passed, ["4:rfc4733", "4:rfc4733", "4:inband"]);
  });

  it("takes its window from the options", () => {
    const { clock, passed, digits } = merger(50);
    digits.fromInband("0");
    clock.now = 51;
    digits.fromTelephoneEvent("0");
    clock.now = 80;
    digits.fromInband("0");
    assert.deepEqual(passed, ["0:inband", "0:rfc4733"]);
  });

  it("uses the monotonic clock when none is given", () => {
    const passed: string[] = [];
    const digits = new DigitMerger((key, source) => passed.push(`${key}:${source}`));
    digits.fromTelephoneEvent("A");
    digits.fromInband("A");
    digits.fromInband("B");
    assert.deepEqual(passed, ["A:rfc4733", "B:inband"]);
  });
});
