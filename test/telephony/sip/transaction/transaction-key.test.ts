import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  T1,
  T2,
  T4,
  timerD,
  timerI,
  timerJ,
  timerK,
} from "../../../../src/telephony/sip/transaction/timers.js";
import {
  clientTransactionKey,
  serverTransactionKey,
} from "../../../../src/telephony/sip/transaction/transaction-key.js";
import { request, response } from "./helpers.js";

describe("transaction matching (RFC 3261 17.1.3, 17.2.3)", () => {
  it("a response matches the client transaction whose request has the same top Via branch and CSeq method", () => {
    const invite = request("INVITE");
    assert.equal(clientTransactionKey(response(invite, 180)), clientTransactionKey(invite));
    assert.equal(clientTransactionKey(invite), "z9hG4bK776asdhds|INVITE");
  });

  it("a CANCEL shares the INVITE's branch but has a client transaction of its own (method CANCEL)", () => {
    const invite = request("INVITE");
    const cancel = request("CANCEL");
    assert.notEqual(clientTransactionKey(cancel), clientTransactionKey(invite));
    assert.equal(clientTransactionKey(response(cancel, 200)), clientTransactionKey(cancel));
    assert.notEqual(clientTransactionKey(response(cancel, 200)), clientTransactionKey(invite));
  });

  it("a request matches a server transaction by branch, sent-by and method", () => {
    const invite = request("INVITE");
    assert.equal(serverTransactionKey(invite), serverTransactionKey(request("INVITE")));
    assert.notEqual(
      serverTransactionKey(invite),
      serverTransactionKey(request("INVITE", { branch: "z9hG4bKother" })),
    );
    assert.notEqual(
      serverTransactionKey(invite),
      serverTransactionKey(request("INVITE", { sentBy: "other.example.com:5060" })),
    );
    assert.notEqual(serverTransactionKey(invite), serverTransactionKey(request("OPTIONS")));
  });

  it("an ACK matches the server transaction of the INVITE it acknowledges", () => {
    const invite = request("INVITE");
    const ack = request("ACK", { toTag: "a6c85cf" });
    assert.equal(serverTransactionKey(ack), serverTransactionKey(invite));
  });

  it("a CANCEL has its own server transaction: same branch, method CANCEL", () => {
    const key = serverTransactionKey(request("CANCEL"));
    assert.notEqual(key, serverTransactionKey(request("INVITE")));
    assert.equal(
      key,
      "z9hG4bK776asdhds|client.example.com:5060|a84b4c76e66710@client.example.com|314159|CANCEL",
    );
  });

  it("a new request that reuses a branch (another Call-ID or CSeq) is not taken for a retransmission", () => {
    const invite = serverTransactionKey(request("INVITE"));
    assert.notEqual(serverTransactionKey(request("INVITE", { cseq: 314160 })), invite);
    assert.equal(serverTransactionKey(request("ACK", { toTag: "ours" })), invite, "its ACK still matches");
  });

  it("sent-by hosts compare case-insensitively", () => {
    assert.equal(
      serverTransactionKey(request("INVITE", { sentBy: "Client.Example.COM:5060" })),
      serverTransactionKey(request("INVITE")),
    );
  });

  it("without the magic cookie z9hG4bK, a request matches by Request-URI, From tag, Call-ID, CSeq, top Via and method (RFC 2543)", () => {
    const old = (method: string, options: Parameters<typeof request>[1] = {}) =>
      serverTransactionKey(request(method, { branch: "abc123", ...options }));
    const invite = old("INVITE");
    assert.ok(
      invite?.startsWith("rfc2543|sip:bob@example.com|1928301774|a84b4c76e66710@client.example.com|314159|"),
    );
    assert.equal(old("INVITE"), invite, "a retransmission matches");
    assert.equal(old("ACK", { toTag: "ours" }), invite, "the ACK of our non-2xx, with our To tag, matches");
    assert.ok(old("CANCEL")?.endsWith("|CANCEL"), "a CANCEL finds the INVITE by replacing the method");
    assert.equal(old("CANCEL")?.replace(/\|CANCEL$/, "|INVITE"), invite);
    assert.notEqual(old("INVITE", { cseq: 314160 }), invite);
    assert.notEqual(old("INVITE", { sentBy: "other.example.com:5060" }), invite);
    assert.notEqual(old("INVITE", { branch: "def456" }), invite);
  });
});

describe("timer values (RFC 3261 appendix A)", () => {
  it("T1 is 500 ms, T2 4 s, T4 5 s; D, I, J and K are zero over reliable transports", () => {
    assert.deepEqual([T1, T2, T4], [500, 4000, 5000]);
    assert.deepEqual(
      [timerD(false), timerI(false), timerJ(false), timerK(false)],
      [32_000, 5000, 32_000, 5000],
    );
    assert.deepEqual([timerD(true), timerI(true), timerJ(true), timerK(true)], [0, 0, 0, 0]);
  });
});
