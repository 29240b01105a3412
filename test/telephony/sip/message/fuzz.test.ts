/** Property: parseMessage returns a result, and never throws, on random and mutated input. */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import { seededRandom as random } from "../../../helpers/seeded-random.js";

const TORTURE_DIR = new URL("../../../../../shared/sip-torture/", import.meta.url);
const seeds = readdirSync(TORTURE_DIR)
  .filter((file) => file.endsWith(".sip"))
  .map((file) => readFileSync(new URL(file, TORTURE_DIR)));

const ALPHABET = Buffer.from('INVITE SIP/2.0 sip:a@b;<>"\\,:=%\r\n\t 0123456789Via To From CSeq l: v:');

function randomBytes(next: () => number): Buffer {
  const bytes = Buffer.alloc(Math.floor(next() * 600));
  const sipish = next() < 0.5;
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = sipish ? (ALPHABET[Math.floor(next() * ALPHABET.length)] as number) : Math.floor(next() * 256);
  }
  return bytes;
}

function mutate(seed: Buffer, next: () => number): Buffer {
  switch (Math.floor(next() * 3)) {
    case 0: {
      const bytes = Buffer.from(seed);
      for (let flips = 1 + Math.floor(next() * 8); flips > 0; flips--) {
        bytes[Math.floor(next() * bytes.length)] = Math.floor(next() * 256);
      }
      return bytes;
    }
    case 1:
      return seed.subarray(0, Math.floor(next() * seed.length));
    default: {
      const lines = seed.toString("latin1").split("\r\n");
      const line = Math.floor(next() * lines.length);
      lines.splice(line, 0, lines[line] as string);
      return Buffer.from(lines.join("\r\n"), "latin1");
    }
  }
}

function assertResult(bytes: Buffer): void {
  for (const stream of [false, true]) {
    const result = parseMessage(bytes, { stream });
    assert.equal(typeof result.ok, "boolean");
    if (result.ok) assert.ok(result.consumed > 0 && result.consumed <= bytes.length);
    // the parser's last-resort catch must never be what produced a refusal
    else if (!result.incomplete) assert.doesNotMatch(result.error, /^internal error/);
  }
}

describe("parseMessage under fuzzing", () => {
  it("handles 20,000 random byte strings in both modes", () => {
    const next = random(4475);
    const started = performance.now();
    for (let n = 0; n < 20_000; n++) assertResult(randomBytes(next));
    assert.ok(performance.now() - started < 5_000);
  });

  it("handles 20,000 mutations of the torture messages in both modes", () => {
    const next = random(3261);
    const started = performance.now();
    for (let n = 0; n < 20_000; n++) assertResult(mutate(seeds[n % seeds.length] as Buffer, next));
    assert.ok(performance.now() - started < 5_000);
  });
});
