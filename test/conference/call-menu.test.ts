import assert from "node:assert/strict";
import { test } from "node:test";
import { CallMenu, MAX_UNREAD_KEYS } from "../../src/conference/call-menu.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { FakeCall, flush } from "./fakes.js";

/** An answered call in a menu, on a clock that stands still until moved. */
function menuOnCall(): { call: FakeCall; menu: CallMenu; clock: FakeClock } {
  const clock = new FakeClock();
  const call = new FakeCall("inbound", "+16045550199", "+16045550111", clock);
  call.state = "answered";
  return { call, menu: new CallMenu(call, clock), clock };
}

/** Whether a promise has settled, after what is pending has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await flush();
  return done;
}

test("keys pressed while nothing reads them are kept up to MAX_UNREAD_KEYS, the rest dropped", async () => {
  const { call, menu, clock } = menuOnCall();
  call.press("1".repeat(MAX_UNREAD_KEYS));
  call.press("2".repeat(1000));
  const kept = menu.collect({ maxKeys: 10_000, timeoutMs: 0 });
  // A wait of nothing still waits a moment for a key on its way.
  await clock.pass(20);
  assert.equal(await kept, "1".repeat(MAX_UNREAD_KEYS));
  call.press("3#");
  assert.equal(
    await menu.collect({ terminator: "#", maxKeys: 12, timeoutMs: 0 }),
    "3",
    "read keys make room",
  );
});

test("collect gives what was typed once no key came for timeoutMs, the wait starting again with each key", async () => {
  const { call, menu, clock } = menuOnCall();
  const pin = menu.collect({ terminator: "#", maxKeys: 12, timeoutMs: 10_000 });
  await clock.pass(9_999);
  call.press("4");
  await clock.pass(9_999);
  call.press("2");
  await clock.pass(9_999);
  assert.equal(await settled(pin), false, "each key gives another 10 s");
  await clock.pass(1);
  assert.equal(await pin, "42");
  assert.equal(clock.pending, 0, "no timer left behind");
});

test("collect returns at once on the terminator or at maxKeys, the keys after kept for the next read", async () => {
  const { call, menu, clock } = menuOnCall();
  call.press("12#34");
  assert.equal(await menu.collect({ terminator: "#", maxKeys: 12, timeoutMs: 10_000 }), "12");
  assert.equal(await menu.collect({ maxKeys: 1, timeoutMs: 6_000 }), "3");
  const last = menu.collect({ maxKeys: 1, timeoutMs: 6_000 });
  assert.equal(await last, "4");
  assert.equal(clock.pending, 0);
});

test("the call ending wakes a wait at once with what was typed; a menu detached wakes it too", async () => {
  const ended = menuOnCall();
  const waiting = ended.menu.collect({ terminator: "#", maxKeys: 12, timeoutMs: 10_000 });
  ended.call.press("7");
  await flush();
  ended.call.hangUpFarEnd();
  assert.equal(await waiting, "7");
  assert.equal(ended.clock.pending, 0, "its timer cleared");

  const detached = menuOnCall();
  const reading = detached.menu.collect({ maxKeys: 1, timeoutMs: 6_000 });
  await flush();
  detached.menu.detach();
  assert.equal(await reading, "");
  assert.equal(detached.clock.pending, 0);
});
