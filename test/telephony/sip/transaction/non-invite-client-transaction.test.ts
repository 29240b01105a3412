import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { NonInviteClientTransaction } from "../../../../src/telephony/sip/transaction/non-invite-client-transaction.js";
import { TransactionState } from "../../../../src/telephony/sip/transaction/transaction-state.js";
import { FakeClock } from "../../../helpers/fake-clock.js";
import { RecordingTransport, RecordingUser, request, response } from "./helpers.js";

function setup(reliable: boolean) {
  const clock = new FakeClock();
  const transport = new RecordingTransport(reliable, clock);
  const user = new RecordingUser();
  const bye = request("BYE", { toTag: "a6c85cf" });
  const transaction = new NonInviteClientTransaction(bye, transport, user, { clock });
  return { clock, transport, user, bye, transaction };
}

describe("non-INVITE client transaction (RFC 3261 17.1.2)", () => {
  it("in Trying Timer E retransmits the request at T1, then doubling up to T2, until Timer F fires at 64*T1", () => {
    const { clock, transport, user, transaction } = setup(false);
    assert.equal(transaction.state, TransactionState.Trying);
    clock.advance(40_000);
    assert.deepEqual(transport.times(), [0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500]);
    assert.equal(user.timeouts, 1);
    assert.equal(user.terminated, 1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(clock.pending, 0);
  });

  it("in Proceeding Timer E keeps retransmitting, every T2", () => {
    const { clock, transport, user, bye, transaction } = setup(false);
    clock.advance(600);
    transaction.receiveResponse(response(bye, 100, "Trying"));
    assert.equal(transaction.state, TransactionState.Proceeding);
    clock.advance(40_000);
    assert.deepEqual(transport.times(), [0, 500, 1500, 5500, 9500, 13500, 17500, 21500, 25500, 29500]);
    assert.equal(user.timeouts, 1);
  });

  it("over a reliable transport Timer E is not set, and Timer F still fires at 64*T1", () => {
    const { clock, transport, user } = setup(true);
    clock.advance(32_000);
    assert.deepEqual(transport.times(), [0]);
    assert.equal(user.timeouts, 1);
  });

  it("a final response moves it to Completed and is passed up; retransmissions of it are absorbed until Timer K fires at T4", () => {
    const { clock, transport, user, bye, transaction } = setup(false);
    transaction.receiveResponse(response(bye, 100, "Trying"));
    transaction.receiveResponse(response(bye, 200, "OK"));
    assert.equal(transaction.state, TransactionState.Completed);
    transaction.receiveResponse(response(bye, 200, "OK"));
    assert.deepEqual(
      user.responses.map((r) => r.status),
      [100, 200],
    );
    clock.advance(4_999);
    assert.equal(transaction.state, TransactionState.Completed);
    clock.advance(1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.deepEqual(transport.times(), [0]);
    assert.equal(user.timeouts, 0);
  });

  it("over a reliable transport Timer K is zero", () => {
    const { clock, bye, transaction } = setup(true);
    transaction.receiveResponse(response(bye, 481, "Call/Transaction Does Not Exist"));
    clock.advance(0);
    assert.equal(transaction.state, TransactionState.Terminated);
  });

  it("a transport error on a retransmission is reported to the TU and terminates the transaction", () => {
    const { clock, transport, user, transaction } = setup(false);
    transport.failing = true;
    clock.advance(500);
    assert.equal(user.errors.length, 1);
    assert.equal(transaction.state, TransactionState.Terminated);
    assert.equal(clock.pending, 0);
  });
});
