import assert from "node:assert/strict";
import { test } from "node:test";
import { CallMenu, MAX_UNREAD_KEYS } from "../../src/conference/call-menu.js";
import { FakeCall } from "./fakes.js";

test("keys pressed while nothing reads them are kept up to MAX_UNREAD_KEYS, the rest dropped", async () => {
  const call = new FakeCall("inbound", "+16045550199", "+16045550111");
  call.state = "answered";
  const menu = new CallMenu(call);
  call.press("1".repeat(MAX_UNREAD_KEYS));
  call.press("2".repeat(1000));
  const kept = await menu.collect({ maxKeys: 10_000, timeoutMs: 0 });
  assert.equal(kept, "1".repeat(MAX_UNREAD_KEYS));
  call.press("3#");
  assert.equal(
    await menu.collect({ terminator: "#", maxKeys: 12, timeoutMs: 0 }),
    "3",
    "read keys make room",
  );
});
