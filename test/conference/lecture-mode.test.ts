import assert from "node:assert/strict";
import { test } from "node:test";
import { lectureModeMuting, mayMuteThemselves } from "../../src/domain/conference.js";

test("lecture mode mutes members while on, unmutes them when off, and leaves the moderator alone", () => {
  assert.equal(lectureModeMuting(true, false), true);
  assert.equal(lectureModeMuting(false, false), false);
  assert.equal(lectureModeMuting(true, true), undefined);
  assert.equal(lectureModeMuting(false, true), undefined);
});

test("in lecture mode only the moderator may mute or unmute themselves", () => {
  assert.equal(mayMuteThemselves(true, false), false);
  assert.equal(mayMuteThemselves(true, true), true);
  assert.equal(mayMuteThemselves(false, false), true);
  assert.equal(mayMuteThemselves(false, true), true);
});
