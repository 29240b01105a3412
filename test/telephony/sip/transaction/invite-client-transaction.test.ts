import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseVia } from "../../../../src/telephony/sip/message/header-values.js";
import { InviteClientTransaction } from "../../../../src/telephony/sip/transaction/invite-client-transaction.js";
import { TransactionState } from "../../../../src/telephony/sip/transaction/transaction-state.js";
import { FakeClock } from "../../../helpers/fake-clock.js";
import { isRequest, RecordingTransport, RecordingUser, request, response } from "./helpers.js";

function setup(reliable: boolean, route?: string) {
  const clock = new FakeClock();
  const transport = new RecordingTransport(reliable, clock);
  const user = new RecordingUser();
  const invite = request("INVITE", route === undefined ? {} : { route });
  const transaction = new InviteClientTransaction(invite, transport, user, { clock });
  return { clock, transport, user, invite, transaction };
}

describe("INVITE client transaction (RFC 3261 17.1.1)", () => {
  it("an INVITE client transaction sends the request and retransmits it at T1, 2*T1, 4*T1 ... until Timer B fires at 64*T1", () => {
    const { clock, transport, user, transaction } = setup(false);
    assert.equal(transaction.state, TransactionState.Calling);
    clock.advance(40_000);
    assert.deepEqual(transport.times(isRequest("INVITE")), [0, 500, 1500, 3500, 7500, 15500, 31500]);
    assert.equal(user.timeouts, 1);
    assert.equal(user.terminated, 1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(clock.pending, 0);
  });

  it("over a reliable transport Timer A is not set: the INVITE is sent once, and Timer B still fires", () => {
    const { clock, transport, user, transaction } = setup(true);
    clock.advance(31_999);
    assert.equal(user.timeouts, 0);
    clock.advance(1);
    assert.deepEqual(transport.times(), [0]);
    assert.equal(user.timeouts, 1);
    assert.equal(transaction.state, TransactionState.Terminated);
  });

  it("a provisional response moves it to Proceeding, is passed to the TU, and stops retransmissions", () => {
    const { clock, transport, user, invite, transaction } = setup(false);
    clock.advance(600);
    transaction.receiveResponse(response(invite, 180, "Ringing"));
    assert.equal(transaction.state, TransactionState.Proceeding);
    transaction.receiveResponse(response(invite, 183, "Session Progress"));
    clock.advance(60_000);
    assert.deepEqual(transport.times(), [0, 500]);
    assert.deepEqual(
      user.responses.map((r) => r.status),
      [180, 183],
    );
    assert.equal(user.timeouts, 0);
    assert.equal(transaction.state, TransactionState.Proceeding);
  });

  it("the ACK for a non-2xx final response is sent before the TU sees the response (a 401 retry must not overtake it)", () => {
    const { transport, user, invite, transaction } = setup(false);
    let acksSentWhenTuSawIt = -1;
    user.receiveResponse = () => {
      acksSentWhenTuSawIt = transport.sent.filter((sent) => isRequest("ACK")(sent.message)).length;
    };
    transaction.receiveResponse(response(invite, 401, "Unauthorized"));
    assert.equal(acksSentWhenTuSawIt, 1);
  });

  it("a 2xx response is passed to the TU and terminates the transaction, without an ACK from it", () => {
    const { clock, transport, user, invite, transaction } = setup(false);
    transaction.receiveResponse(response(invite, 180, "Ringing"));
    transaction.receiveResponse(response(invite, 200, "OK"));
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.deepEqual(
      user.responses.map((r) => r.status),
      [180, 200],
    );
    assert.equal(user.terminated, 1);
    clock.advance(60_000);
    assert.deepEqual(transport.times(), [0]);
    assert.equal(clock.pending, 0);
  });

  it("a 300-699 response moves it to Completed, is passed up, and is answered with an ACK reusing the INVITE's branch and top Via", () => {
    const { transport, user, invite, transaction } = setup(false, "<sip:proxy.example.com;lr>");
    const busy = response(invite, 486, "Busy Here");
    transaction.receiveResponse(busy);
    assert.equal(transaction.state, TransactionState.Completed);
    assert.deepEqual(
      user.responses.map((r) => r.status),
      [486],
    );
    const ack = transport.sent[1]?.message;
    assert.ok(ack?.kind === "request");
    assert.equal(ack.method, "ACK");
    assert.equal(ack.uri, invite.uri);
    assert.deepEqual(ack.headers.getAll("Via"), [invite.headers.get("Via")]);
    assert.equal(parseVia(ack.headers.get("Via") ?? "")?.branch, "z9hG4bK776asdhds");
    assert.equal(ack.headers.get("CSeq"), "314159 ACK");
    assert.equal(ack.headers.get("To"), busy.headers.get("To"));
    assert.equal(ack.headers.get("From"), invite.headers.get("From"));
    assert.equal(ack.headers.get("Call-ID"), invite.headers.get("Call-ID"));
    assert.deepEqual(ack.headers.getAll("Route"), ["<sip:proxy.example.com;lr>"]);
  });

  it("in Completed each retransmitted final response is answered with the ACK again and not passed up, until Timer D fires at 32 s", () => {
    const { clock, transport, user, invite, transaction } = setup(false);
    transaction.receiveResponse(response(invite, 486, "Busy Here"));
    clock.advance(1000);
    transaction.receiveResponse(response(invite, 486, "Busy Here"));
    transaction.receiveResponse(response(invite, 180, "Ringing"));
    assert.deepEqual(transport.times(isRequest("ACK")), [0, 1000]);
    assert.equal(user.responses.length, 1);
    clock.advance(30_999);
    assert.equal(transaction.state, TransactionState.Completed);
    clock.advance(1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(user.terminated, 1);
    assert.equal(user.timeouts, 0);
  });

  it("over a reliable transport Timer D is zero: Completed ends as soon as the clock runs", () => {
    const { clock, invite, transaction } = setup(true);
    transaction.receiveResponse(response(invite, 603, "Decline"));
    assert.equal(transaction.state, TransactionState.Completed);
    clock.advance(0);
    assert.equal(transaction.state, TransactionState.Terminated);
  });

  it("a transport error is reported to the TU (503 semantics) and terminates the transaction", () => {
    const clock = new FakeClock();
    const transport = new RecordingTransport(false, clock);
    transport.failing = true;
    const user = new RecordingUser();
    const transaction = new InviteClientTransaction(request("INVITE"), transport, user, { clock });
    assert.equal(user.errors.length, 1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(clock.pending, 0);
  });

  it("refuses to be created for a request other than INVITE", () => {
    const clock = new FakeClock();
    assert.throws(
      () => new InviteClientTransaction(request("BYE"), new RecordingTransport(false, clock), {}, { clock }),
      TypeError,
    );
  });
});
