import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { KEYPAD, KeypadReader } from "../../src/domain/keypad.js";

describe("keypad commands", () => {
  it("reads * and one key as a command, ignoring stray keys", () => {
    const member = new KeypadReader(() => false);
    assert.deepEqual(
      ["1", "*", "6", "7", "*", "7", "*", "*"].map((key) => member.press(key)),
      [undefined, undefined, "toggle-mute", undefined, undefined, "toggle-hand", undefined, "help"],
    );
  });

  it("gives moderator commands to the moderator only", () => {
    assert.equal(["*", "9"].map((key) => new KeypadReader(() => false).press(key)).at(-1), undefined);
    const moderator = new KeypadReader(() => true);
    moderator.press("*");
    assert.equal(moderator.press("9"), "end-conference");
  });

  it("is documented in docs/keypad.md, every command with its keys", () => {
    const doc = readFileSync(new URL("../../docs/keypad.md", import.meta.url), "utf8");
    for (const entry of KEYPAD) {
      const row = doc.split("\n").find((line) => line.startsWith(`| \`${entry.keys}\``));
      assert.ok(row, `${entry.keys} is in the table`);
      assert.ok(row.includes(entry.description), `${entry.keys}: ${entry.description}`);
      assert.ok(row.includes(entry.moderatorOnly ? "moderator" : "everyone"));
    }
  });
});
