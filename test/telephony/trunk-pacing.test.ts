/**
 * A trunk's gate on a fake clock: calls per second as exact spacing, channels taken and given back
 * in order, a call hung up while it waits, the queue's bound and close. Calls through a Telephony,
 * each way a call can end giving its channel back, are in trunk-pacing-calls.test.ts; INVITEs a
 * SIPp carrier received, in e2e/trunk-pacing.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MAX_QUEUED_CALLS,
  type PacingLimits,
  QUEUE_FULL,
  SHUTTING_DOWN,
  TrunkGate,
  TrunkPacing,
  type Turn,
} from "../../src/telephony/trunk-pacing.js";
import { FakeClock } from "../helpers/fake-clock.js";

/** A gate, and calls at it that note when each went (by name) and what each was told. */
function gateWith(limits: PacingLimits) {
  const clock = new FakeClock(10_000);
  const gate = new TrunkGate(clock, limits);
  const went: [string, number][] = [];
  const refused: [string, string][] = [];
  const turns = new Map<string, Turn>();
  const enter = (name: string): Turn => {
    const turn = gate.enter({
      go: () => went.push([name, clock.now() - 10_000]),
      refused: (reason) => refused.push([name, reason]),
    });
    if (turn.state.kind === "through") went.push([name, clock.now() - 10_000]);
    turns.set(name, turn);
    return turn;
  };
  const turn = (name: string): Turn => turns.get(name) ?? assert.fail(`no call ${name}`);
  return { clock, gate, went, refused, enter, turn };
}

describe("a trunk's gate", () => {
  it("at 2 calls a second, sends three calls placed together at 0, 500 and 1000 ms, the later two told they wait for calls-per-second", () => {
    const { clock, gate, went, enter } = gateWith({ callsPerSecond: 2 });
    assert.deepEqual(enter("a").state, { kind: "through" });
    assert.deepEqual(enter("b").state, { kind: "waiting", why: "calls-per-second" });
    assert.deepEqual(enter("c").state, { kind: "waiting", why: "calls-per-second" });
    assert.deepEqual([gate.channels, gate.queued], [1, 2]);
    clock.advance(499);
    assert.deepEqual(went, [["a", 0]]);
    clock.advance(1);
    assert.deepEqual(went, [
      ["a", 0],
      ["b", 500],
    ]);
    clock.advance(1000);
    assert.deepEqual(went, [
      ["a", 0],
      ["b", 500],
      ["c", 1000],
    ]);
    assert.deepEqual([gate.channels, gate.queued, clock.pending], [3, 0, 0]);
  });

  it("never bursts: after a quiet spell calls are still spaced, counted from when the last one went", () => {
    const { clock, went, enter } = gateWith({ callsPerSecond: 2 });
    enter("a");
    clock.advance(10_000);
    enter("b");
    enter("c");
    clock.advance(200);
    enter("d");
    clock.advance(2000);
    assert.deepEqual(went, [
      ["a", 0],
      ["b", 10_000],
      ["c", 10_500],
      ["d", 11_000],
    ]);
  });

  it("counts the spacing from when a call's INVITE went too: a slow first INVITE never goes with the next", () => {
    const { clock, went, enter, turn } = gateWith({ callsPerSecond: 5 });
    enter("a");
    enter("b");
    enter("c");
    // a's server lookup and media took 190 ms: its INVITE goes then, and b waits 200 ms from it.
    clock.advance(190);
    turn("a").sent();
    clock.advance(10);
    assert.deepEqual(went, [["a", 0]]);
    clock.advance(189);
    assert.deepEqual(went, [["a", 0]]);
    clock.advance(1);
    assert.deepEqual(went, [
      ["a", 0],
      ["b", 390],
    ]);
    // b's INVITE goes at once: c keeps the spacing from b's turn; a turn not through tells nothing.
    turn("b").sent();
    turn("c").sent();
    clock.advance(200);
    assert.deepEqual(went.at(-1), ["c", 590]);
  });

  it("takes fractions: 0.5 calls a second is one every 2 s", () => {
    const { clock, went, enter } = gateWith({ callsPerSecond: 0.5 });
    for (const name of ["a", "b", "c"]) enter(name);
    clock.advance(1999);
    assert.equal(went.length, 1);
    clock.advance(2001);
    assert.deepEqual(went, [
      ["a", 0],
      ["b", 2000],
      ["c", 4000],
    ]);
  });

  it("with 2 channels and 4 calls: 2 go, the 3rd when one ends and the 4th when the next does, in order", () => {
    const { gate, went, enter, turn } = gateWith({ maxChannels: 2 });
    for (const name of ["a", "b", "c", "d"]) enter(name);
    assert.deepEqual(
      ["a", "b", "c", "d"].map((name) => turn(name).state),
      [
        { kind: "through" },
        { kind: "through" },
        { kind: "waiting", why: "max-channels" },
        { kind: "waiting", why: "max-channels" },
      ],
    );
    assert.deepEqual([gate.channels, gate.queued], [2, 2]);
    turn("b").release();
    assert.deepEqual(
      went.map(([name]) => name),
      ["a", "b", "c"],
    );
    assert.deepEqual([gate.channels, gate.queued], [2, 1]);
    turn("b").release();
    assert.deepEqual([gate.channels, gate.queued], [2, 1], "a second release gives nothing back");
    turn("a").release();
    assert.deepEqual(
      went.map(([name]) => name),
      ["a", "b", "c", "d"],
    );
    turn("c").release();
    turn("d").release();
    assert.deepEqual([gate.channels, gate.queued], [0, 0]);
    enter("e");
    assert.deepEqual(turn("e").state, { kind: "through" }, "with a channel free and no one waiting, at once");
  });

  it("with both limits, a freed channel still waits for the spacing; a call behind one waiting for a channel is told max-channels", () => {
    const { clock, went, enter, turn } = gateWith({ callsPerSecond: 1, maxChannels: 1 });
    enter("a");
    assert.deepEqual(enter("b").state, { kind: "waiting", why: "max-channels" });
    assert.deepEqual(enter("c").state, { kind: "waiting", why: "max-channels" });
    clock.advance(300);
    turn("a").release();
    assert.deepEqual(went, [["a", 0]], "a channel free, but a second has not passed since a went");
    clock.advance(700);
    assert.deepEqual(went, [
      ["a", 0],
      ["b", 1000],
    ]);
    clock.advance(5000);
    assert.equal(went.length, 2, "c waits for b's channel, however long");
    turn("b").release();
    assert.deepEqual(went.at(-1), ["c", 6000]);
  });

  it("a call hung up while it waits leaves the queue at once: its turn goes to the next, its channel to the one after", () => {
    const spaced = gateWith({ callsPerSecond: 2 });
    for (const name of ["a", "b", "c"]) spaced.enter(name);
    spaced.turn("b").release();
    assert.deepEqual(spaced.turn("b").state, { kind: "over" });
    assert.equal(spaced.gate.queued, 1);
    spaced.clock.advance(500);
    assert.deepEqual(spaced.went, [
      ["a", 0],
      ["c", 500],
    ]);

    const channels = gateWith({ maxChannels: 1 });
    for (const name of ["a", "b", "c"]) channels.enter(name);
    channels.turn("b").release();
    assert.deepEqual([channels.gate.channels, channels.gate.queued], [1, 1]);
    channels.turn("a").release();
    assert.deepEqual(
      channels.went.map(([name]) => name),
      ["a", "c"],
    );
    channels.turn("c").release();
    assert.deepEqual([channels.gate.channels, channels.gate.queued], [0, 0]);
  });

  it("the last waiting call hung up clears the timer", () => {
    const { clock, gate, enter, turn } = gateWith({ callsPerSecond: 1 });
    enter("a");
    enter("b");
    assert.equal(clock.pending, 1);
    turn("b").release();
    assert.deepEqual([gate.queued, clock.pending], [0, 0]);
  });

  it(`keeps at most ${MAX_QUEUED_CALLS} waiting: the newest past it is refused "${QUEUE_FULL}", and a place freed takes one again`, () => {
    const { gate, enter, turn, refused } = gateWith({ maxChannels: 1 });
    enter("through");
    for (let index = 0; index < MAX_QUEUED_CALLS; index++) enter(`waiting ${index}`);
    assert.equal(gate.queued, MAX_QUEUED_CALLS);
    assert.deepEqual(enter("one too many").state, { kind: "refused", reason: QUEUE_FULL });
    assert.equal(gate.queued, MAX_QUEUED_CALLS);
    assert.deepEqual(refused, [], "told by its state, not by a callback");
    turn("one too many").release();
    assert.deepEqual([gate.channels, gate.queued], [1, MAX_QUEUED_CALLS], "a refused call holds nothing");
    turn("waiting 500").release();
    assert.deepEqual(enter("taken again").state, { kind: "waiting", why: "max-channels" });
  });

  it(`close refuses every waiting call "${SHUTTING_DOWN}", clears its timer, and refuses calls after; calls through give their channels back`, () => {
    const { clock, gate, went, refused, enter, turn } = gateWith({ callsPerSecond: 1, maxChannels: 2 });
    for (const name of ["a", "b", "c"]) enter(name);
    clock.advance(1000);
    assert.deepEqual([gate.channels, gate.queued, clock.pending], [2, 1, 0]);
    gate.close();
    assert.deepEqual(refused, [["c", SHUTTING_DOWN]]);
    assert.deepEqual(turn("c").state, { kind: "refused", reason: SHUTTING_DOWN });
    assert.deepEqual([gate.queued, clock.pending], [0, 0]);
    assert.deepEqual(enter("d").state, { kind: "refused", reason: SHUTTING_DOWN });
    turn("a").release();
    turn("b").release();
    turn("c").release();
    assert.deepEqual([gate.channels, gate.queued], [0, 0]);
    clock.advance(10_000);
    assert.deepEqual(
      went.map(([name]) => name),
      ["a", "b"],
    );

    const spaced = gateWith({ callsPerSecond: 1 });
    spaced.enter("a");
    spaced.enter("b");
    assert.equal(spaced.clock.pending, 1);
    spaced.gate.close();
    assert.equal(spaced.clock.pending, 0, "the timer for b's turn is cleared");
  });

  it("refuses limits that are not ones", () => {
    const clock = new FakeClock();
    assert.throws(() => new TrunkGate(clock, { callsPerSecond: 0 }), /at least 0.001/);
    assert.throws(() => new TrunkGate(clock, { maxChannels: 0 }), /at least 1/);
    assert.throws(() => new TrunkGate(clock, { maxChannels: 1.5 }), /whole number/);
  });
});

describe("every trunk's gate", () => {
  it("has a gate for each trunk, limits or none, with its figures by URI; a trunk without limits lets every call through and counts it", () => {
    const clock = new FakeClock();
    const limited = { uri: "sip:a.example", maxChannels: 1 };
    const open = { uri: "sip:b.example" };
    const pacing = new TrunkPacing(clock, [limited, open]);
    pacing.gate(limited).enter({ go: () => {}, refused: () => {} });
    pacing.gate(limited).enter({ go: () => {}, refused: () => {} });
    const turns = Array.from({ length: 50 }, () =>
      pacing.gate(open).enter({ go: () => {}, refused: () => {} }),
    );
    assert.ok(turns.every((turn) => turn.state.kind === "through"));
    assert.deepEqual(pacing.stats(), [
      { trunk: "sip:a.example", queued: 1, channels: 1 },
      { trunk: "sip:b.example", queued: 0, channels: 50 },
    ]);
    assert.throws(() => pacing.gate({ uri: "sip:a.example" }), /no gate for the trunk sip:a.example/);
    pacing.close();
    assert.deepEqual(pacing.stats()[0], { trunk: "sip:a.example", queued: 0, channels: 1 });
  });
});
