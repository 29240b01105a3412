/** Session timers (RFC 4028): the headers, the answerer's choice, and the schedule on a fake clock. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import type { SipRequest } from "../../../../src/telephony/sip/message/sip-message.js";
import { SessionTimer, timerForInvite } from "../../../../src/telephony/sip/user-agent/session-timer.js";
import { FakeClock } from "../../../helpers/fake-clock.js";

function invite(...headers: string[]): SipRequest {
  const text = [
    "INVITE sip:room@127.0.0.1 SIP/2.0",
    "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKtimer",
    "From: <sip:caller@127.0.0.1>;tag=a",
    "To: <sip:room@127.0.0.1>",
    "Call-ID: timer-test",
    "CSeq: 1 INVITE",
    "Max-Forwards: 70",
    ...headers,
    "Content-Length: 0",
    "",
    "",
  ].join("\r\n");
  const parsed = parseMessage(Buffer.from(text), { stream: false });
  assert.ok(parsed.ok && parsed.message.kind === "request");
  return parsed.message;
}

const settings = { interval: 1800, minimum: 90 };

describe("timerForInvite (section 9)", () => {
  it("keeps the caller's refresher, else lets a caller that supports timers refresh, else refreshes itself", () => {
    assert.deepEqual(
      timerForInvite(invite("Session-Expires: 600;refresher=uas", "Supported: timer"), settings),
      {
        interval: 600,
        refresher: "uas",
      },
    );
    assert.deepEqual(timerForInvite(invite("Session-Expires: 600", "Supported: 100rel, timer"), settings), {
      interval: 600,
      refresher: "uac",
    });
    assert.deepEqual(timerForInvite(invite("Session-Expires: 600"), settings), {
      interval: 600,
      refresher: "uas",
    });
  });

  it("refuses an interval below the minimum, and runs no timer without Session-Expires", () => {
    assert.deepEqual(timerForInvite(invite("Session-Expires: 60"), settings), { tooSmall: 90 });
    assert.equal(timerForInvite(invite("Supported: timer"), settings), undefined);
  });
});

describe("SessionTimer (section 10)", () => {
  it("refreshes at half the interval when ours, and each refresh starts it again", () => {
    const clock = new FakeClock();
    const calls: string[] = [];
    const timer = new SessionTimer(clock, {
      refresh: () => calls.push(`refresh@${clock.now()}`),
      expire: () => calls.push(`expire@${clock.now()}`),
    });
    timer.start(90, true);
    clock.advance(44_999);
    assert.deepEqual(calls, []);
    clock.advance(1);
    assert.deepEqual(calls, ["refresh@45000"]);
    timer.start(90, true);
    clock.advance(45_000);
    assert.deepEqual(calls, ["refresh@45000", "refresh@90000"]);
  });

  it("expires the interval less the lesser of 32 s and a third of it when the peer refreshes", () => {
    for (const [interval, due] of [
      [1800, 1_768_000],
      [90, 60_000],
    ] as const) {
      const clock = new FakeClock();
      let expiredAt: number | undefined;
      const timer = new SessionTimer(clock, {
        refresh: () => undefined,
        expire: () => (expiredAt = clock.now()),
      });
      timer.start(interval, false);
      clock.advance(due - 1);
      assert.equal(expiredAt, undefined);
      clock.advance(1);
      assert.equal(expiredAt, due);
    }
  });

  it("does nothing once stopped", () => {
    const clock = new FakeClock();
    let fired = false;
    const timer = new SessionTimer(clock, { refresh: () => (fired = true), expire: () => (fired = true) });
    timer.start(90, false);
    timer.stop();
    clock.advance(100_000);
    assert.equal(fired, false);
    assert.equal(clock.pending, 0);
  });
});
