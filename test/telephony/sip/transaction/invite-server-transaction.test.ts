import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InviteServerTransaction } from "../../../../src/telephony/sip/transaction/invite-server-transaction.js";
import {
  IllegalTransitionError,
  TransactionState,
} from "../../../../src/telephony/sip/transaction/transaction-state.js";
import { FakeClock } from "../../../helpers/fake-clock.js";
import { isStatus, RecordingTransport, RecordingUser, request, response } from "./helpers.js";

function setup(reliable: boolean) {
  const clock = new FakeClock();
  const transport = new RecordingTransport(reliable, clock);
  const user = new RecordingUser();
  const invite = request("INVITE");
  const transaction = new InviteServerTransaction(invite, transport, user, { clock });
  return { clock, transport, user, invite, transaction };
}

describe("INVITE server transaction (RFC 3261 17.2.1, RFC 6026)", () => {
  it("sends 100 (Trying) after 200 ms when the TU has not responded, with the request's Vias, and again for a retransmitted INVITE", () => {
    const { clock, transport, invite, transaction } = setup(false);
    assert.equal(transaction.state, TransactionState.Proceeding);
    clock.advance(199);
    assert.deepEqual(transport.times(), []);
    clock.advance(1);
    const trying = transport.sent[0]?.message;
    assert.ok(trying?.kind === "response");
    assert.equal(trying.status, 100);
    assert.deepEqual(trying.headers.getAll("Via"), invite.headers.getAll("Via"));
    assert.equal(trying.headers.get("CSeq"), "314159 INVITE");
    transaction.receiveRequest(invite);
    assert.deepEqual(transport.times(isStatus(100)), [200, 200]);
  });

  it("sends no 100 (Trying) when the TU responds within 200 ms; a retransmitted INVITE gets the latest provisional response", () => {
    const { clock, transport, invite, transaction } = setup(false);
    clock.advance(50);
    transaction.respond(response(invite, 180, "Ringing"));
    clock.advance(1000);
    transaction.receiveRequest(invite);
    assert.deepEqual(transport.times(isStatus(100)), []);
    assert.deepEqual(transport.times(isStatus(180)), [50, 1050]);
    assert.equal(transaction.state, TransactionState.Proceeding);
  });

  it("in Completed Timer G retransmits the final response at T1, then doubling up to T2, until Timer H fires at 64*T1 and reports a timeout", () => {
    const { clock, transport, user, invite, transaction } = setup(false);
    transaction.respond(response(invite, 486, "Busy Here"));
    assert.equal(transaction.state, TransactionState.Completed);
    clock.advance(40_000);
    assert.deepEqual(
      transport.times(isStatus(486)),
      [0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500],
    );
    assert.equal(user.timeouts, 1);
    assert.equal(user.terminated, 1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(clock.pending, 0);
  });

  it("over a reliable transport Timer G is not set, and Timer H still fires", () => {
    const { clock, transport, user, invite, transaction } = setup(true);
    transaction.respond(response(invite, 486, "Busy Here"));
    clock.advance(32_000);
    assert.deepEqual(transport.times(), [0]);
    assert.equal(user.timeouts, 1);
    assert.equal(transaction.state, TransactionState.Terminated);
  });

  it("in Completed a retransmitted INVITE is answered with the final response again", () => {
    const { clock, transport, invite, transaction } = setup(true);
    transaction.respond(response(invite, 486, "Busy Here"));
    clock.advance(300);
    transaction.receiveRequest(invite);
    assert.deepEqual(transport.times(isStatus(486)), [0, 300]);
  });

  it("an ACK moves Completed to Confirmed, which stops Timer G and H, absorbs ACKs and INVITEs, and ends when Timer I fires at T4", () => {
    const { clock, transport, user, invite, transaction } = setup(false);
    transaction.respond(response(invite, 486, "Busy Here"));
    clock.advance(600);
    transaction.receiveRequest(request("ACK", { toTag: "a6c85cf" }));
    assert.equal(transaction.state, TransactionState.Confirmed);
    transaction.receiveRequest(request("ACK", { toTag: "a6c85cf" }));
    transaction.receiveRequest(invite);
    clock.advance(4_999);
    assert.equal(transaction.state, TransactionState.Confirmed);
    clock.advance(1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.deepEqual(transport.times(), [0, 500]);
    assert.equal(user.timeouts, 0);
    assert.equal(user.acks.length, 0);
  });

  it("over a reliable transport Timer I is zero", () => {
    const { clock, invite, transaction } = setup(true);
    transaction.respond(response(invite, 486, "Busy Here"));
    transaction.receiveRequest(request("ACK", { toTag: "a6c85cf" }));
    clock.advance(0);
    assert.equal(transaction.state, TransactionState.Terminated);
  });

  it("a 2xx from the TU moves it to Accepted, where retransmitted INVITEs are absorbed, 2xx ACKs go to the TU, the TU's 2xx retransmissions are sent, and Timer L ends it at 64*T1", () => {
    const { clock, transport, user, invite, transaction } = setup(false);
    const ok = response(invite, 200, "OK");
    transaction.respond(ok);
    assert.equal(transaction.state, TransactionState.Accepted);
    transaction.receiveRequest(invite);
    clock.advance(500);
    transaction.respond(ok);
    const ack = request("ACK", { toTag: "a6c85cf", branch: "z9hG4bKack2xx" });
    transaction.receiveRequest(ack);
    assert.deepEqual(user.acks, [ack]);
    assert.deepEqual(transport.times(), [0, 500]);
    clock.advance(31_499);
    assert.equal(transaction.state, TransactionState.Accepted);
    clock.advance(1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(user.timeouts, 0);
  });

  it("refuses illegal transitions: no provisional or second final response after a final one", () => {
    const { invite, transaction, transport } = setup(false);
    transaction.respond(response(invite, 486, "Busy Here"));
    assert.throws(() => transaction.respond(response(invite, 180, "Ringing")), IllegalTransitionError);
    assert.throws(() => transaction.respond(response(invite, 200, "OK")), IllegalTransitionError);
    assert.throws(() => transaction.respond(response(invite, 500, "Server Error")), IllegalTransitionError);
    assert.equal(transaction.state, TransactionState.Completed);
    assert.equal(transport.sent.length, 1);
  });

  it("a transport error sending a response is reported to the TU and terminates the transaction", () => {
    const { clock, transport, user, invite, transaction } = setup(false);
    transport.failing = true;
    transaction.respond(response(invite, 486, "Busy Here"));
    assert.equal(user.errors.length, 1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(clock.pending, 0);
  });
});
