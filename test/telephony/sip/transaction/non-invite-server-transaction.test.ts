import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { NonInviteServerTransaction } from "../../../../src/telephony/sip/transaction/non-invite-server-transaction.js";
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
  const options = request("OPTIONS");
  const transaction = new NonInviteServerTransaction(options, transport, user, { clock });
  return { clock, transport, user, options, transaction };
}

describe("non-INVITE server transaction (RFC 3261 17.2.2)", () => {
  it("in Trying request retransmissions are discarded", () => {
    const { transport, options, transaction } = setup(false);
    assert.equal(transaction.state, TransactionState.Trying);
    transaction.receiveRequest(options);
    assert.deepEqual(transport.sent, []);
  });

  it("a provisional response moves it to Proceeding, where a retransmitted request gets the latest provisional response", () => {
    const { clock, transport, options, transaction } = setup(false);
    transaction.respond(response(options, 100, "Trying"));
    assert.equal(transaction.state, TransactionState.Proceeding);
    clock.advance(700);
    transaction.receiveRequest(options);
    assert.deepEqual(transport.times(isStatus(100)), [0, 700]);
  });

  it("a final response moves it to Completed, where a retransmitted request gets the final response again, until Timer J fires at 64*T1", () => {
    const { clock, transport, user, options, transaction } = setup(false);
    transaction.respond(response(options, 200, "OK"));
    assert.equal(transaction.state, TransactionState.Completed);
    clock.advance(1000);
    transaction.receiveRequest(options);
    assert.deepEqual(transport.times(isStatus(200)), [0, 1000]);
    clock.advance(30_999);
    assert.equal(transaction.state, TransactionState.Completed);
    clock.advance(1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(user.terminated, 1);
  });

  it("the transaction never retransmits a response on its own", () => {
    const { clock, transport, options, transaction } = setup(false);
    transaction.respond(response(options, 200, "OK"));
    clock.advance(40_000);
    assert.deepEqual(transport.times(), [0]);
  });

  it("over a reliable transport Timer J is zero", () => {
    const { clock, options, transaction } = setup(true);
    transaction.respond(response(options, 200, "OK"));
    clock.advance(0);
    assert.equal(transaction.state, TransactionState.Terminated);
  });

  it("refuses illegal transitions: no response from the TU once Completed", () => {
    const { transport, options, transaction } = setup(false);
    transaction.respond(response(options, 200, "OK"));
    assert.throws(() => transaction.respond(response(options, 180, "Ringing")), IllegalTransitionError);
    assert.throws(() => transaction.respond(response(options, 500, "Server Error")), IllegalTransitionError);
    assert.equal(transaction.state, TransactionState.Completed);
    assert.equal(transport.sent.length, 1);
  });

  it("refuses to be created for INVITE or ACK", () => {
    const clock = new FakeClock();
    const transport = new RecordingTransport(false, clock);
    assert.throws(
      () => new NonInviteServerTransaction(request("INVITE"), transport, {}, { clock }),
      TypeError,
    );
    assert.throws(() => new NonInviteServerTransaction(request("ACK"), transport, {}, { clock }), TypeError);
  });
});
