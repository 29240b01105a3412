/**
 * The INVITE session's state machine (RFC 3261 sections 12-15), its early dialogs (RFC 3262 section 4)
 * and its offer/answer negotiation (RFC 3264), on a fake clock and a host that records what is sent.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import type { SipRequest, SipResponse } from "../../../../src/telephony/sip/message/sip-message.js";
import type { InviteClientTransaction } from "../../../../src/telephony/sip/transaction/invite-client-transaction.js";
import { InviteServerTransaction } from "../../../../src/telephony/sip/transaction/invite-server-transaction.js";
import { TIMER_H } from "../../../../src/telephony/sip/transaction/timers.js";
import type { ServerTransaction } from "../../../../src/telephony/sip/transaction/transaction-layer.js";
import {
  checkTransition,
  IllegalTransitionError,
} from "../../../../src/telephony/sip/transaction/transaction-state.js";
import type { Destination } from "../../../../src/telephony/sip/transport/sip-transport.js";
import {
  INCOMING_EDGES,
  IncomingInviteSession,
} from "../../../../src/telephony/sip/user-agent/incoming-invite-session.js";
import {
  OfferAnswer,
  OfferAnswerState,
  OfferAnswerStateError,
} from "../../../../src/telephony/sip/user-agent/offer-answer.js";
import {
  MAX_RETRY_AFTER_SECONDS,
  OUTGOING_EDGES,
  OutgoingInviteSession,
} from "../../../../src/telephony/sip/user-agent/outgoing-invite-session.js";
import type {
  InviteResponseHandler,
  SessionHost,
  SessionListener,
} from "../../../../src/telephony/sip/user-agent/session-host.js";
import { SessionState } from "../../../../src/telephony/sip/user-agent/session-state.js";
import { FakeClock } from "../../../helpers/fake-clock.js";
import { RecordingTransport, RecordingUser } from "../transaction/helpers.js";

const TRUNK: Destination = { host: "192.0.2.10", port: 5060, transport: "UDP" };

interface SentRequest {
  readonly request: SipRequest;
  readonly destination: Destination;
  readonly handler?: InviteResponseHandler;
}

/** A user agent core that records what its sessions send. */
class RecordingHost implements SessionHost {
  readonly clock = new FakeClock();
  readonly allow = "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, UPDATE, PRACK";
  readonly userAgent = "test";
  readonly sessionTimer = { interval: 1800, minimum: 90 };
  readonly sent: SentRequest[] = [];
  readonly acks: SentRequest[] = [];
  confirmed = 0;
  ended = 0;

  via(transport: Destination["transport"]): string {
    return `SIP/2.0/${transport} 192.0.2.1:5060;branch=z9hG4bK${this.sent.length}x${this.acks.length}`;
  }
  contact(): string {
    return "<sip:bridgeline@192.0.2.1:5060>";
  }
  sendInvite(request: SipRequest, destination: Destination, handler: InviteResponseHandler) {
    this.sent.push({ request, destination, handler });
    return { abandon() {} } as unknown as InviteClientTransaction;
  }
  sendNonInvite(request: SipRequest, destination: Destination): void {
    this.sent.push({ request, destination });
  }
  sendAck(ack: SipRequest, destination: Destination): void {
    this.acks.push({ request: ack, destination });
  }
  dialogConfirmed(): void {
    this.confirmed++;
  }
  sessionEnded(): void {
    this.ended++;
  }
  methods(): string[] {
    return this.sent.map((sent) => sent.request.method);
  }
}

function parse(lines: string[], body = ""): SipRequest | SipResponse {
  const text = `${[...lines, `Content-Length: ${Buffer.byteLength(body)}`].join("\r\n")}\r\n\r\n${body}`;
  const result = parseMessage(Buffer.from(text), { stream: false });
  assert.ok(result.ok, text);
  return result.message;
}

function ourInvite(): SipRequest {
  const invite = parse(
    [
      "INVITE sip:+16045550123@192.0.2.10 SIP/2.0",
      "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKfirst",
      "Max-Forwards: 70",
      "From: <sip:bridgeline@192.0.2.1>;tag=ours",
      "To: <sip:+16045550123@192.0.2.10>",
      "Call-ID: state-test",
      "CSeq: 1 INVITE",
      "Contact: <sip:bridgeline@192.0.2.1:5060>",
      "Content-Type: application/sdp",
    ],
    "v=0 offer",
  );
  assert.ok(invite.kind === "request");
  return invite;
}

/** A response to our INVITE from the branch with `tag`, its Contact `target`. */
function answer(status: number, tag: string | undefined, extra: string[] = [], body = ""): SipResponse {
  const response = parse(
    [
      `SIP/2.0 ${status} Reason`,
      "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKfirst",
      "From: <sip:bridgeline@192.0.2.1>;tag=ours",
      `To: <sip:+16045550123@192.0.2.10>${tag === undefined ? "" : `;tag=${tag}`}`,
      "Call-ID: state-test",
      "CSeq: 1 INVITE",
      ...extra,
    ],
    body,
  );
  assert.ok(response.kind === "response");
  return response;
}

function outgoing(listener: SessionListener = {}, next: readonly Destination[] = []) {
  const host = new RecordingHost();
  const session = new OutgoingInviteSession(host, ourInvite(), TRUNK, undefined, { next });
  session.listener = listener;
  session.start();
  return { host, session };
}

function incoming(body = "v=0 their offer", extra: string[] = []) {
  const host = new RecordingHost();
  const invite = parse(
    [
      "INVITE sip:room@192.0.2.1 SIP/2.0",
      "Via: SIP/2.0/UDP 192.0.2.20:5060;branch=z9hG4bKcaller",
      "Max-Forwards: 70",
      "From: <sip:caller@192.0.2.20>;tag=caller",
      "To: <sip:room@192.0.2.1>",
      "Call-ID: incoming-state-test",
      "CSeq: 7 INVITE",
      "Contact: <sip:caller@192.0.2.20:5060>",
      ...extra,
      ...(body === "" ? [] : ["Content-Type: application/sdp"]),
    ],
    body,
  );
  assert.ok(invite.kind === "request");
  const transport = new RecordingTransport(false, host.clock);
  const transaction = new InviteServerTransaction(invite, transport, new RecordingUser(), {
    clock: host.clock,
  });
  const session = new IncomingInviteSession(host, invite, transaction, "local");
  return { host, session, invite, transport };
}

/** The caller's CANCEL of `invite`, with these extra header lines (a Reason). */
function cancelOf(invite: SipRequest, extra: string[] = []): SipRequest {
  const cancel = parse([
    "CANCEL sip:room@192.0.2.1 SIP/2.0",
    "Via: SIP/2.0/UDP 192.0.2.20:5060;branch=z9hG4bKcaller",
    "Max-Forwards: 70",
    "From: <sip:caller@192.0.2.20>;tag=caller",
    "To: <sip:room@192.0.2.1>",
    `Call-ID: ${invite.headers.callId}`,
    `CSeq: ${invite.headers.cseq?.seq} CANCEL`,
    ...extra,
  ]);
  assert.ok(cancel.kind === "request");
  return cancel;
}

function ackFor(invite: SipRequest, body = ""): SipRequest {
  const ack = parse(
    [
      "ACK sip:bridgeline@192.0.2.1:5060 SIP/2.0",
      "Via: SIP/2.0/UDP 192.0.2.20:5060;branch=z9hG4bKack",
      "Max-Forwards: 70",
      "From: <sip:caller@192.0.2.20>;tag=caller",
      "To: <sip:room@192.0.2.1>;tag=local",
      `Call-ID: ${invite.headers.callId}`,
      `CSeq: ${invite.headers.cseq?.seq} ACK`,
    ],
    body,
  );
  assert.ok(ack.kind === "request");
  return ack;
}

describe("session state edges", () => {
  it("an outgoing session MUST NOT leave Confirmed but for Terminated, nor wait for an ACK it never sends", () => {
    assert.throws(
      () => checkTransition("outgoing", OUTGOING_EDGES, SessionState.Confirmed, SessionState.Early),
      IllegalTransitionError,
    );
    assert.throws(
      () => checkTransition("outgoing", OUTGOING_EDGES, SessionState.Initial, SessionState.WaitingForAck),
      IllegalTransitionError,
    );
    assert.throws(
      () => checkTransition("outgoing", OUTGOING_EDGES, SessionState.Cancelling, SessionState.Initial),
      IllegalTransitionError,
    );
    checkTransition("outgoing", OUTGOING_EDGES, SessionState.Cancelling, SessionState.Confirmed);
  });

  it("an incoming session is confirmed only from WaitingForAck, and no session leaves Terminated", () => {
    assert.throws(
      () => checkTransition("incoming", INCOMING_EDGES, SessionState.Early, SessionState.Confirmed),
      IllegalTransitionError,
    );
    assert.throws(
      () => checkTransition("incoming", INCOMING_EDGES, SessionState.Initial, SessionState.Cancelling),
      IllegalTransitionError,
    );
    for (const edges of [INCOMING_EDGES, OUTGOING_EDGES])
      for (const to of Object.values(SessionState))
        assert.throws(
          () => checkTransition("any", edges, SessionState.Terminated, to),
          IllegalTransitionError,
        );
  });
});

describe("outgoing INVITE session (RFC 3261 section 13.2)", () => {
  it("goes Initial, Early on a provisional response, Confirmed on the 2xx (ACKed), Terminated on BYE", () => {
    const answers: unknown[] = [];
    const { host, session } = outgoing({ confirmed: (answer) => answers.push(answer) });
    assert.equal(session.state, SessionState.Initial);
    session.receiveResponse(answer(180, "b1"));
    assert.equal(session.state, SessionState.Early);
    session.receiveResponse(answer(200, "b1", ["Contact: <sip:b1@192.0.2.10>"], "v=0 answer"));
    assert.equal(session.state, SessionState.Confirmed);
    assert.equal(host.acks.length, 1);
    assert.deepEqual(answers, [{ offer: "v=0 offer", answer: "v=0 answer" }]);
    assert.equal(session.offerAnswer.state, OfferAnswerState.Stable);
    session.bye();
    assert.equal(session.state, SessionState.Terminated);
    assert.deepEqual(host.methods(), ["INVITE", "BYE"]);
    // Nothing moves a terminated session: a late 2xx is neither ACKed nor reported.
    session.receiveResponse(answer(200, "b1", [], "v=0 answer"));
    assert.equal(host.acks.length, 1);
    assert.equal(answers.length, 1);
  });

  it("given up before any provisional response, it is Cancelling and sends its CANCEL with the first one (section 9.1)", () => {
    const failures: number[] = [];
    const { host, session } = outgoing({ failed: (status) => failures.push(status) });
    session.cancel();
    assert.equal(session.state, SessionState.Cancelling);
    assert.deepEqual(host.methods(), ["INVITE"]);
    session.receiveResponse(answer(100, undefined));
    assert.deepEqual(host.methods(), ["INVITE", "CANCEL"]);
    session.receiveResponse(answer(487, "b1"));
    assert.equal(session.state, SessionState.Terminated);
    assert.deepEqual(failures, [487]);
  });

  it("a 2xx that crosses its CANCEL confirms the dialog, then ends it with BYE", () => {
    const failures: number[] = [];
    const { host, session } = outgoing({ failed: (status) => failures.push(status) });
    session.receiveResponse(answer(180, "b1"));
    session.cancel();
    session.receiveResponse(answer(200, "b1", ["Contact: <sip:b1@192.0.2.10>"], "v=0 answer"));
    assert.equal(session.state, SessionState.Terminated);
    assert.deepEqual(host.methods(), ["INVITE", "CANCEL", "BYE"]);
    assert.equal(host.acks.length, 1);
    assert.deepEqual(failures, [487]);
  });

  it("PRACKs each forked branch's reliable 183 in its own early dialog, and the 2xx confirms the one it names (RFC 3262 section 4, RFC 3261 section 13.2.2.4)", () => {
    const { host, session } = outgoing();
    const reliable = (tag: string, rseq: number) =>
      answer(183, tag, [
        `Record-Route: <sip:proxy-${tag}@192.0.2.3${tag === "a" ? "1" : "2"};lr>`,
        `Contact: <sip:${tag}@192.0.2.4${tag === "a" ? "1" : "2"}>`,
        "Require: 100rel",
        `RSeq: ${rseq}`,
      ]);
    session.receiveResponse(reliable("a", 1));
    session.receiveResponse(reliable("b", 1));
    session.receiveResponse(reliable("a", 1)); // a retransmission: not PRACKed again
    session.receiveResponse(reliable("b", 3)); // out of order: not PRACKed
    const pracks = host.sent.filter((sent) => sent.request.method === "PRACK");
    assert.deepEqual(
      pracks.map((sent) => [
        sent.request.headers.to?.tag,
        sent.request.uri,
        sent.request.headers.get("Route"),
        sent.destination.host,
        sent.request.headers.get("RAck"),
      ]),
      [
        ["a", "sip:a@192.0.2.41", "<sip:proxy-a@192.0.2.31;lr>", "192.0.2.31", "1 1 INVITE"],
        ["b", "sip:b@192.0.2.42", "<sip:proxy-b@192.0.2.32;lr>", "192.0.2.32", "1 1 INVITE"],
      ],
    );
    // Branch b answers through another proxy: its route set is recomputed from the 2xx, its CSeq goes on.
    session.receiveResponse(
      answer(
        200,
        "b",
        ["Record-Route: <sip:edge@192.0.2.33;lr>", "Contact: <sip:b@192.0.2.43>"],
        "v=0 answer",
      ),
    );
    const ack = host.acks[0];
    assert.equal(ack?.request.headers.to?.tag, "b");
    assert.equal(ack?.request.uri, "sip:b@192.0.2.43");
    assert.equal(ack?.destination.host, "192.0.2.33");
    session.bye();
    const bye = host.sent.at(-1)?.request;
    assert.equal(bye?.method, "BYE");
    assert.equal(bye?.headers.to?.tag, "b");
    assert.equal(bye?.headers.cseq?.seq, 3);
    assert.equal(bye?.headers.get("Route"), "<sip:edge@192.0.2.33;lr>");
  });
});

describe("why a call ended, on the wire (RFC 3326 Reason)", () => {
  it("a final non-2xx's Reason is the failure's cause, Q.850 before SIP; none is null", () => {
    const failures: unknown[] = [];
    const responses: unknown[] = [];
    const failed: SessionListener["failed"] = (status, reason, cause, response) => {
      failures.push([status, reason, cause]);
      responses.push(response?.status);
    };
    const { session } = outgoing({ failed });
    session.receiveResponse(
      answer(486, "b1", [
        'Reason: SIP;cause=486;text="Busy Here"',
        'Reason: Q.850;cause=17;text="User busy"',
      ]),
    );
    const other = outgoing({ failed });
    other.session.receiveResponse(answer(480, "b1"));
    assert.deepEqual(failures, [
      [486, "Reason", { protocol: "Q.850", cause: 17, text: "User busy" }],
      [480, "Reason", null],
    ]);
    assert.deepEqual(responses, [486, 480], "the response itself too (a 3xx's Contact)");
  });

  it("our BYE and CANCEL carry their cause: normal clearing unless told otherwise, and a 2xx crossing the CANCEL gets its cause in the BYE", () => {
    const ends: unknown[] = [];
    const { host, session } = outgoing({ ended: (...end) => ends.push(end) });
    session.receiveResponse(answer(200, "b1", ["Contact: <sip:b1@192.0.2.10>"], "v=0 answer"));
    session.bye();
    assert.equal(
      host.sent.at(-1)?.request.headers.get("Reason"),
      'Q.850;cause=16;text="Normal call clearing"',
    );
    assert.deepEqual(ends, [
      ["local", "hung up", { protocol: "Q.850", cause: 16, text: "Normal call clearing" }],
    ]);

    const noAnswer = { protocol: "Q.850", cause: 19, text: "No answer from user (user alerted)" } as const;
    const crossed = outgoing();
    crossed.session.receiveResponse(answer(180, "b1"));
    crossed.session.cancel(noAnswer);
    crossed.session.receiveResponse(answer(200, "b1", ["Contact: <sip:b1@192.0.2.10>"], "v=0 answer"));
    assert.deepEqual(
      crossed.host.sent.map((sent) => [sent.request.method, sent.request.headers.get("Reason")]),
      [
        ["INVITE", undefined],
        ["CANCEL", 'Q.850;cause=19;text="No answer from user (user alerted)"'],
        ["BYE", 'Q.850;cause=19;text="No answer from user (user alerted)"'],
      ],
    );
  });

  it("a BYE's Reason is the end's cause; the BYE after no ACK says 408", () => {
    const ends: unknown[] = [];
    const { session, invite } = incoming();
    session.listener = { ended: (...end) => ends.push(end) };
    session.accept("v=0 our answer");
    session.receiveAck(ackFor(invite));
    const bye = parse([
      "BYE sip:bridgeline@192.0.2.1:5060 SIP/2.0",
      "Via: SIP/2.0/UDP 192.0.2.20:5060;branch=z9hG4bKbye",
      "Max-Forwards: 70",
      "From: <sip:caller@192.0.2.20>;tag=caller",
      "To: <sip:room@192.0.2.1>;tag=local",
      `Call-ID: ${invite.headers.callId}`,
      "CSeq: 8 BYE",
      'Reason: Q.850 ;cause=16 ;text="Terminated"',
    ]);
    assert.ok(bye.kind === "request");
    const responses: number[] = [];
    session.receiveRequest(bye, {
      respond: (response: SipResponse) => responses.push(response.status),
    } as unknown as ServerTransaction);
    assert.deepEqual(responses, [200]);
    assert.deepEqual(ends, [["remote", "hung up", { protocol: "Q.850", cause: 16, text: "Terminated" }]]);

    const unacked = incoming();
    unacked.session.accept("v=0 our answer");
    unacked.host.clock.advance(TIMER_H);
    assert.equal(unacked.host.sent.at(-1)?.request.headers.get("Reason"), 'SIP;cause=408;text="ACK Timeout"');
  });

  it("a CANCEL's Reason is the failure's cause", () => {
    const failures: unknown[] = [];
    const { session, invite } = incoming();
    session.listener = { failed: (...failure) => failures.push(failure) };
    session.ring();
    session.cancelled(cancelOf(invite, ['Reason: SIP;cause=200;text="Call completed elsewhere"']));
    assert.deepEqual(failures, [
      [487, "Request Terminated", { protocol: "SIP", cause: 200, text: "Call completed elsewhere" }],
    ]);
  });
});

describe("503 with Retry-After (RFC 3261 section 21.5.4)", () => {
  const busy = (seconds: number | undefined) =>
    answer(503, "b1", seconds === undefined ? [] : [`Retry-After: ${seconds}`]);

  it("a short Retry-After has the INVITE sent again once it has passed: next CSeq, new branch, one call", () => {
    const failures: number[] = [];
    const { host, session } = outgoing({ failed: (status) => failures.push(status) });
    session.receiveResponse(answer(100, undefined));
    session.receiveResponse(busy(2));
    assert.equal(session.state, SessionState.Retrying);
    host.clock.advance(1999);
    assert.deepEqual(host.methods(), ["INVITE"]);
    host.clock.advance(1);
    assert.equal(session.state, SessionState.Initial);
    const [first, second] = host.sent.map((sent) => sent.request);
    assert.equal(second?.method, "INVITE");
    assert.equal(second?.headers.cseq?.seq, 2);
    assert.notEqual(second?.headers.via?.branch, first?.headers.via?.branch);
    assert.equal(second?.headers.callId, first?.headers.callId);
    assert.equal(second?.headers.from?.tag, first?.headers.from?.tag);
    // Once only: a second 503 fails the call, short Retry-After or not.
    session.receiveResponse(busy(1));
    assert.equal(session.state, SessionState.Terminated);
    assert.deepEqual(failures, [503]);
    assert.equal(host.methods().length, 2);
  });

  it("the INVITE sent again after a challenge carries no replayed credentials, and answers a new challenge", () => {
    const failures: number[] = [];
    const host = new RecordingHost();
    const session = new OutgoingInviteSession(host, ourInvite(), TRUNK, { username: "acct", password: "pw" });
    session.listener = { failed: (status) => failures.push(status) };
    session.start();
    const challenge = ['WWW-Authenticate: Digest realm="carrier", nonce="n1", algorithm=MD5, qop="auth"'];
    session.receiveResponse(answer(401, "c1", challenge));
    assert.match(host.sent.at(-1)?.request.headers.get("Authorization") ?? "", /nonce="n1"/);
    session.receiveResponse(busy(1));
    host.clock.advance(1000);
    const retried = host.sent.at(-1)?.request;
    assert.equal(retried?.method, "INVITE");
    assert.equal(retried?.headers.get("Authorization"), undefined, "the old nonce's answer is not replayed");
    session.receiveResponse(answer(401, "c2", [challenge[0]?.replace("n1", "n2") ?? ""]));
    assert.match(host.sent.at(-1)?.request.headers.get("Authorization") ?? "", /nonce="n2"/);
    assert.deepEqual(failures, [], "the new challenge answered, not failed");
  });

  it(`fails at once without Retry-After, or with one over ${MAX_RETRY_AFTER_SECONDS} s`, () => {
    for (const seconds of [undefined, MAX_RETRY_AFTER_SECONDS + 1, 60]) {
      const failures: number[] = [];
      const { host, session } = outgoing({ failed: (status) => failures.push(status) });
      session.receiveResponse(busy(seconds));
      assert.equal(session.state, SessionState.Terminated, String(seconds));
      assert.deepEqual(failures, [503]);
      host.clock.advance(120_000);
      assert.deepEqual(host.methods(), ["INVITE"]);
    }
  });

  it("given up while it waits, it ends there: nothing outstanding, nothing sent", () => {
    const ends: unknown[] = [];
    const { host, session } = outgoing({ ended: (by, reason) => ends.push([by, reason]) });
    session.receiveResponse(busy(MAX_RETRY_AFTER_SECONDS));
    session.cancel();
    assert.equal(session.state, SessionState.Terminated);
    assert.equal(host.clock.pending, 0);
    host.clock.advance(MAX_RETRY_AFTER_SECONDS * 1000);
    assert.deepEqual(host.methods(), ["INVITE"]);
    assert.deepEqual(ends, [["local", "cancelled"]]);
  });

  it("with a next server, a 503 fails over to it rather than waiting; the last one's Retry-After is waited", () => {
    const next: Destination = { host: "192.0.2.11", port: 5060, transport: "UDP" };
    const { host, session } = outgoing({}, [next]);
    session.receiveResponse(busy(1));
    assert.equal(session.state, SessionState.Initial);
    assert.deepEqual(
      host.sent.map((sent) => sent.destination.host),
      ["192.0.2.10", "192.0.2.11"],
    );
    session.receiveResponse(busy(1));
    assert.equal(session.state, SessionState.Retrying);
    host.clock.advance(1000);
    assert.deepEqual(
      host.sent.map((sent) => sent.destination.host),
      ["192.0.2.10", "192.0.2.11", "192.0.2.11"],
    );
  });

  it("with another trunk to go to, a silent last server is given up at the server timeout (408, none of its own); without, Timer B waits", () => {
    const failures: unknown[] = [];
    const failed: SessionListener["failed"] = (status, reason, _cause, response) =>
      failures.push([status, reason, response]);
    const start = (elsewhere: boolean) => {
      const host = new RecordingHost();
      const session = new OutgoingInviteSession(host, ourInvite(), TRUNK, undefined, {
        next: [],
        elsewhere,
        targetTimeoutMs: 1000,
      });
      session.listener = { failed };
      session.start();
      return { host, session };
    };
    const elsewhere = start(true);
    elsewhere.host.clock.advance(1000);
    assert.equal(elsewhere.session.state, SessionState.Terminated);
    assert.deepEqual(failures, [[408, "Request Timeout", undefined]]);
    const only = start(false);
    only.host.clock.advance(1000);
    assert.equal(only.session.state, SessionState.Initial, "the transaction's Timer B decides");
    assert.equal(failures.length, 1);
  });
});

describe("incoming INVITE session (RFC 3261 section 13.3)", () => {
  it("goes Initial, Early when it rings, WaitingForAck with its 2xx, Confirmed with the ACK", () => {
    let confirmed = 0;
    const { session, invite, transport } = incoming();
    session.listener = { confirmed: () => confirmed++ };
    assert.equal(session.state, SessionState.Initial);
    assert.equal(session.offerAnswer.remoteOffer, "v=0 their offer");
    session.ring();
    assert.equal(session.state, SessionState.Early);
    assert.equal(session.accept("v=0 our answer"), true);
    assert.equal(session.state, SessionState.WaitingForAck);
    assert.equal(session.accept("v=0 again"), false);
    session.ring();
    assert.deepEqual(
      transport.sent.map((sent) => (sent.message.kind === "response" ? sent.message.status : 0)),
      [180, 200],
    );
    session.receiveAck(ackFor(invite));
    assert.equal(session.state, SessionState.Confirmed);
    assert.equal(confirmed, 1);
  });

  it("after an offerless INVITE, its 2xx carries our offer and the ACK the answer (section 13.2.1)", () => {
    const answers: unknown[] = [];
    const { session, invite } = incoming("");
    session.listener = { confirmed: (answer) => answers.push(answer) };
    assert.equal(session.offerAnswer.state, OfferAnswerState.Initial);
    session.accept("v=0 our offer");
    assert.equal(session.offerAnswer.state, OfferAnswerState.HaveLocalOffer);
    session.receiveAck(ackFor(invite, "v=0 their answer"));
    assert.deepEqual(answers, [{ offer: "v=0 our offer", answer: "v=0 their answer" }]);
    assert.equal(session.offerAnswer.state, OfferAnswerState.Stable);
  });

  it("an offerless INVITE that requires 100rel gets no 180 at all, reliable or not (RFC 3262 sections 3 and 5)", () => {
    const { session, transport, invite } = incoming("", ["Require: 100rel", "Supported: 100rel"]);
    session.ring();
    assert.equal(session.state, SessionState.Initial);
    assert.equal(session.accept("v=0 our offer"), true);
    assert.deepEqual(
      transport.sent.map((sent) => (sent.message.kind === "response" ? sent.message.status : 0)),
      [200],
    );
    session.receiveAck(ackFor(invite, "v=0 their answer"));
    assert.equal(session.state, SessionState.Confirmed);
    // Without Require, it rings as ever.
    const plain = incoming("");
    plain.session.ring();
    assert.equal(plain.session.state, SessionState.Early);
  });

  it("without the ACK within 64*T1 it is confirmed and ended with BYE (section 13.3.1.4)", () => {
    const { host, session } = incoming();
    session.accept("v=0 our answer");
    host.clock.advance(TIMER_H - 1);
    assert.equal(session.state, SessionState.WaitingForAck);
    host.clock.advance(1);
    assert.equal(session.state, SessionState.Terminated);
    assert.deepEqual(host.methods(), ["BYE"]);
    assert.equal(host.ended, 1);
  });

  it("refused or CANCELled before its answer, it is Terminated and answers nothing more", () => {
    const { session, transport, invite } = incoming();
    session.reject(486, "Busy Here");
    assert.equal(session.state, SessionState.Terminated);
    session.cancelled(cancelOf(invite));
    assert.equal(session.accept("v=0 late"), false);
    assert.deepEqual(
      transport.sent.map((sent) => (sent.message.kind === "response" ? sent.message.status : 0)),
      [486],
    );
  });
});

describe("offer/answer (RFC 3264)", () => {
  it("answers one offer at a time, and a refused offer leaves the last exchange standing (section 8)", () => {
    const negotiation = new OfferAnswer();
    assert.throws(() => negotiation.receiveAnswer("v=0"), OfferAnswerStateError);
    negotiation.sendOffer("o1");
    assert.equal(negotiation.canOffer, false);
    assert.throws(() => negotiation.receiveOffer("o2"), OfferAnswerStateError);
    assert.throws(() => negotiation.sendAnswer("a"), OfferAnswerStateError);
    assert.deepEqual(negotiation.receiveAnswer("a1"), { offer: "o1", answer: "a1" });
    assert.equal(negotiation.state, OfferAnswerState.Stable);
    negotiation.receiveOffer("o2");
    assert.equal(negotiation.remoteOffer, "o2");
    negotiation.rollback();
    assert.equal(negotiation.state, OfferAnswerState.Stable);
    assert.equal(negotiation.remoteOffer, undefined);
    const first = new OfferAnswer();
    first.sendOffer("o1");
    first.rollback();
    assert.equal(first.state, OfferAnswerState.Initial);
  });

  it("a re-INVITE that comes while our offer is outstanding is refused 491 (RFC 3261 section 14.2)", () => {
    const { session, invite, transport } = incoming("");
    session.accept("v=0 our offer");
    // The ACK has not brought the answer yet: the peer's re-INVITE with an offer cannot be taken.
    const reinvite = parse(
      [
        "INVITE sip:bridgeline@192.0.2.1:5060 SIP/2.0",
        "Via: SIP/2.0/UDP 192.0.2.20:5060;branch=z9hG4bKre",
        "Max-Forwards: 70",
        "From: <sip:caller@192.0.2.20>;tag=caller",
        "To: <sip:room@192.0.2.1>;tag=local",
        `Call-ID: ${invite.headers.callId}`,
        "CSeq: 8 INVITE",
        "Contact: <sip:caller@192.0.2.20:5060>",
        "Content-Type: application/sdp",
      ],
      "v=0 their offer",
    );
    assert.ok(reinvite.kind === "request");
    const reTransaction = new InviteServerTransaction(reinvite, transport, new RecordingUser(), {
      clock: new FakeClock(),
    });
    session.receiveRequest(reinvite, reTransaction);
    const last = transport.sent.at(-1)?.message;
    assert.ok(last?.kind === "response");
    assert.equal(last.status, 491);
  });
});

describe("re-INVITEs crossing (RFC 3261 section 14)", () => {
  it("the ACK of the peer's re-INVITE, arriving after ours went, is not taken as the answer to our offer", async () => {
    const { host, session } = outgoing();
    const lateAnswers: unknown[] = [];
    session.listener = {
      reoffer: () => ({ answer: "v=0 our answer" }),
      lateAnswer: (negotiated) => lateAnswers.push(negotiated),
    };
    session.receiveResponse(answer(200, "b1", ["Contact: <sip:b1@192.0.2.10>"], "v=0 answer"));
    const peerRequest = (method: string, cseq: number, body = "") => {
      const request = parse(
        [
          `${method} sip:bridgeline@192.0.2.1:5060 SIP/2.0`,
          `Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKpeer${cseq}`,
          "Max-Forwards: 70",
          "From: <sip:+16045550123@192.0.2.10>;tag=b1",
          "To: <sip:bridgeline@192.0.2.1>;tag=ours",
          "Call-ID: state-test",
          `CSeq: ${cseq} ${method}`,
          "Contact: <sip:b1@192.0.2.10>",
          ...(body === "" ? [] : ["Content-Type: application/sdp"]),
        ],
        body,
      );
      assert.ok(request.kind === "request");
      return request;
    };
    const theirs = peerRequest("INVITE", 1, "v=0 their offer");
    const transport = new RecordingTransport(false, host.clock);
    session.receiveRequest(
      theirs,
      new InviteServerTransaction(theirs, transport, new RecordingUser(), { clock: host.clock }),
    );
    const ours = session.reinvite("v=0 hold offer");
    assert.equal(session.offerAnswer.state, OfferAnswerState.HaveLocalOffer);
    session.receiveAck(peerRequest("ACK", 1));
    assert.deepEqual(lateAnswers, []);
    assert.equal(session.offerAnswer.state, OfferAnswerState.HaveLocalOffer);
    const sent = host.sent.at(-1);
    assert.equal(sent?.request.method, "INVITE");
    sent?.handler?.receiveResponse(answer(200, "b1", ["Contact: <sip:b1@192.0.2.10>"], "v=0 held answer"));
    assert.equal(await ours, "v=0 held answer");
    assert.equal(session.offerAnswer.state, OfferAnswerState.Stable);
  });
});
