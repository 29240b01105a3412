import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { recordingFileName } from "../../src/domain/recording.js";

describe("recordingFileName", () => {
  it("names the recording after the conference, with the start date and the id", () => {
    assert.equal(recordingFileName({ id: 42, name: "Quarterly Review" }), "Quarterly Review (42).wav");
    assert.equal(
      recordingFileName({ id: 42, name: "Quarterly Review", startedAt: "2027-03-01T23:59:59Z" }),
      "Quarterly Review 2027-03-01 (42).wav",
    );
    assert.equal(recordingFileName({ id: 7, name: "Équipe 東京", startedAt: null }), "Équipe 東京 (7).wav");
  });

  it("names a later part (a room that took the conference over) for its lease", () => {
    assert.equal(
      recordingFileName({ id: 42, name: "Quarterly Review", startedAt: "2027-03-01T10:00:00Z" }, 3),
      "Quarterly Review 2027-03-01 (42)-part3.wav",
    );
    assert.equal(recordingFileName({ id: 7, name: "../x" }, 12), "x (7)-part12.wav");
  });

  it("keeps path separators, reserved and control characters out", () => {
    assert.equal(recordingFileName({ id: 1, name: "../../etc/passwd" }), "etc passwd (1).wav");
    assert.equal(recordingFileName({ id: 2, name: 'a\\b:c*d?e"f<g>h|i' }), "a b c d e f g h i (2).wav");
    assert.equal(
      recordingFileName({ id: 3, name: "line\nbreak\ttab\u0000nul" }),
      "line break tab nul (3).wav",
    );
    // U+202E would show "evil(4).exe.wav" as "evil(4).wav.exe".
    assert.equal(recordingFileName({ id: 4, name: "evil\u202eexe.wav" }), "evil exe.wav (4).wav");
    assert.equal(recordingFileName({ id: 5, name: "lone \ud800 surrogate" }), "lone surrogate (5).wav");
  });

  it("never starts with a dot or ends the name with dots or spaces", () => {
    assert.equal(recordingFileName({ id: 1, name: ".hidden" }), "hidden (1).wav");
    assert.equal(recordingFileName({ id: 2, name: " . ..name. . " }), "name (2).wav");
    assert.equal(recordingFileName({ id: 3, name: "..." }), "Conference (3).wav");
    assert.equal(recordingFileName({ id: 4, name: "/\u0007/" }), "Conference (4).wav");
  });

  it("limits the name to 120 UTF-8 bytes without splitting a character", () => {
    const name = recordingFileName({ id: 123456789, name: "東".repeat(200) });
    assert.equal(name, `${"東".repeat(40)} (123456789).wav`);
    assert.ok(Buffer.byteLength(name) < 255);
    assert.equal(recordingFileName({ id: 9, name: "x".repeat(300) }), `${"x".repeat(120)} (9).wav`);
  });
});
