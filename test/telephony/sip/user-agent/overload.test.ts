/**
 * The user agent's bounds against a source that sends too much (RFC 3261 section 21.5.4): the request
 * rate per source address (served, then refused 503 with Retry-After, then dropped, then served again
 * as the bucket refills) and the server transactions kept per source and in all. On a real UDP socket;
 * time is a fake clock's, so the schedules are exact.
 */

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createSocket, type Socket } from "node:dgram";
import { BlockList } from "node:net";
import { after, describe, test } from "node:test";
import { parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import type { SipResponse } from "../../../../src/telephony/sip/message/sip-message.js";
import type { ServerTransactionLimits } from "../../../../src/telephony/sip/transaction/transaction-layer.js";
import { SipTransport } from "../../../../src/telephony/sip/transport/sip-transport.js";
import { sourceOf } from "../../../../src/telephony/sip/transport/source-address.js";
import { SourceLimit, type SourceRate } from "../../../../src/telephony/sip/user-agent/source-limit.js";
import { UserAgent, type UserAgentOptions } from "../../../../src/telephony/sip/user-agent/user-agent.js";
import { FakeClock } from "../../../helpers/fake-clock.js";
import { optionsRequest } from "../../../helpers/sip-options.js";
import { until } from "../../../helpers/until.js";

const closing: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const close of closing) await close();
});

/**
 * A peer on its own address that sends OPTIONS and keeps the responses by Call-ID: outside any dialog
 * (answered statelessly), or within one the agent does not have (481, through a server transaction).
 */
class Peer {
  readonly responses = new Map<string, SipResponse>();
  readonly #waiters = new Map<string, (response: SipResponse) => void>();

  private constructor(
    readonly socket: Socket,
    readonly address: string,
    readonly target: number,
    readonly toTag: string | undefined,
  ) {
    socket.on("message", (bytes) => {
      const parsed = parseMessage(bytes, { stream: false });
      if (!parsed.ok || parsed.message.kind !== "response") return;
      const callId = parsed.message.headers.callId ?? "";
      this.responses.set(callId, parsed.message);
      this.#waiters.get(callId)?.(parsed.message);
    });
  }

  static async bind(address: string, target: number, options: { inDialog?: boolean } = {}): Promise<Peer> {
    const socket = createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, address, resolve));
    closing.push(() => {
      socket.close();
    });
    return new Peer(socket, address, target, options.inDialog ? "no-such-dialog" : undefined);
  }

  /** Sends an OPTIONS (again, when given the same branch and Call-ID); returns its Call-ID. */
  send(callId = randomBytes(6).toString("hex"), branch = `z9hG4bK${callId}`): string {
    const text = optionsRequest(
      { address: this.address, port: this.socket.address().port },
      this.target,
      callId,
      branch,
      this.toTag,
    );
    this.socket.send(text, this.target, "127.0.0.1");
    return callId;
  }

  /** Sends an OPTIONS (a retransmission of an earlier one, given its Call-ID) and waits for the response. */
  async ask(callId = randomBytes(6).toString("hex")): Promise<SipResponse> {
    const answered = new Promise<SipResponse>((resolve) => this.#waiters.set(callId, resolve));
    this.send(callId);
    return answered;
  }
}

async function agentWith(options: {
  requestRate?: SourceRate;
  trusted?: UserAgentOptions["trusted"];
  onUntrusted?: UserAgentOptions["onUntrusted"];
  serverTransactions?: ServerTransactionLimits;
  now?: () => number;
  clock?: FakeClock;
}): Promise<{ agent: UserAgent; port: number }> {
  let agent: UserAgent | undefined;
  const transport = await SipTransport.listen({
    bindAddress: "127.0.0.1",
    port: 0,
    onMessage: (message, source) => agent?.receive(message, source),
  });
  closing.push(() => transport.close());
  agent = new UserAgent(transport, options);
  return { agent, port: transport.port };
}

describe("the request rate per source", () => {
  test("SourceLimit: a burst served, a burst refused, the rest dropped; refilled at the rate", () => {
    let now = 0;
    const limit = new SourceLimit({ perSecond: 10, burst: 3 }, () => now);
    const taken = () => Array.from({ length: 8 }, () => limit.take("192.0.2.1"));
    assert.deepEqual(taken(), ["serve", "serve", "serve", "refuse", "refuse", "refuse", "drop", "drop"]);
    assert.equal(limit.take("192.0.2.2"), "serve", "another source has a bucket of its own");
    // In debt by a burst: 0.4 s brings it to one token, when it is served again; (1 - -3) / 10 s.
    assert.equal(limit.retryAfter("192.0.2.1"), 1);
    now = 300;
    assert.equal(limit.take("192.0.2.1"), "refuse", "a flood that goes on keeps its source in debt");
    now = 700;
    assert.equal(limit.take("192.0.2.1"), "serve");
    assert.deepEqual(limit.stats, { served: 5, refused: 4, dropped: 2 });
  });

  test("SourceLimit: it remembers at most its number of sources, the oldest forgotten first", () => {
    const limit = new SourceLimit({ perSecond: 1, burst: 1 }, () => 0, 2);
    for (const address of ["192.0.2.1", "192.0.2.2", "192.0.2.3"]) limit.take(address);
    assert.equal(limit.sources, 2);
    assert.equal(limit.take("192.0.2.3"), "refuse", "the newest is still remembered");
  });

  test("an IPv6 source is its /64: its addresses share one bucket, another /64 has its own", () => {
    assert.equal(sourceOf("192.0.2.1"), "192.0.2.1");
    assert.equal(sourceOf("2001:db8::1"), "2001:db8:0:0");
    assert.equal(sourceOf("2001:db8:0:0:ffff::2"), "2001:db8:0:0");
    assert.equal(sourceOf("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2");
    assert.equal(sourceOf("::1"), "0:0:0:0");
    // IPv4 peers of a socket bound to :: are each their own source, not all one ::ffff:0:0 /64.
    assert.equal(sourceOf("::ffff:192.0.2.1"), "192.0.2.1");
    assert.equal(sourceOf("::FFFF:198.51.100.7"), "198.51.100.7");
    assert.equal(sourceOf("fe80::1%eth0"), "fe80:0:0:0");
    const limit = new SourceLimit({ perSecond: 1, burst: 1 }, () => 0);
    assert.equal(limit.take("2001:db8::1"), "serve");
    assert.equal(limit.take("2001:db8::2"), "refuse", "another address of the same /64");
    assert.equal(limit.take("2001:db8:0:1::1"), "serve", "another /64");
  });

  test("the user agent: 200, then 503 with Retry-After, then nothing, then 200 once the bucket refills", async () => {
    let now = 0;
    const { agent, port } = await agentWith({ requestRate: { perSecond: 1, burst: 2 }, now: () => now });
    const peer = await Peer.bind("127.0.0.1", port);
    assert.equal((await peer.ask()).status, 200);
    assert.equal((await peer.ask()).status, 200);
    const refused = await peer.ask();
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("Retry-After"), "2");
    assert.ok(refused.headers.to?.tag !== undefined, "a 503 carries a To tag (section 8.2.6.2)");
    assert.equal((await peer.ask()).status, 503);
    // In debt by the burst: dropped, unanswered.
    const dropped = peer.send();
    await until("the request dropped", async () =>
      agent.requestRateStats?.dropped === 1 ? true : undefined,
    );
    now += 3000;
    assert.equal((await peer.ask()).status, 200);
    assert.equal(peer.responses.has(dropped), false, "a request past the refusals is dropped");
    assert.deepEqual(agent.requestRateStats, { served: 3, refused: 2, dropped: 1 });
  });

  test("an untrusted source's requests count too: 403 (and a log line) only within its rate", async () => {
    const sources = new BlockList();
    sources.addAddress("127.0.0.2");
    let logged = 0;
    const { agent, port } = await agentWith({
      requestRate: { perSecond: 1, burst: 1 },
      now: () => 0,
      trusted: { sources, others: "refuse" },
      onUntrusted: () => logged++,
    });
    const stranger = await Peer.bind("127.0.0.1", port);
    assert.equal((await stranger.ask()).status, 403);
    assert.equal((await stranger.ask()).status, 503);
    const dropped = stranger.send();
    await until("the request dropped", async () =>
      agent.requestRateStats?.dropped === 1 ? true : undefined,
    );
    assert.equal(stranger.responses.has(dropped), false);
    assert.equal(logged, 1, "one log line, for the one request within the rate");
  });

  test("a retransmission is answered by its transaction, whatever the rate: it is not a new request", async () => {
    const { agent, port } = await agentWith({ requestRate: { perSecond: 1, burst: 1 }, now: () => 0 });
    const peer = await Peer.bind("127.0.0.1", port, { inDialog: true });
    assert.equal((await peer.ask("first")).status, 481);
    assert.equal((await peer.ask()).status, 503, "the source is past its rate");
    assert.equal((await peer.ask("first")).status, 481, "the first request again, with its branch");
    assert.deepEqual(agent.requestRateStats, { served: 1, refused: 1, dropped: 0 });
  });
});

describe("server transactions kept", () => {
  test("past the limit per source, or in all, a new request gets 503; a retransmission is still answered by its transaction", async () => {
    const clock = new FakeClock();
    const { agent, port } = await agentWith({ serverTransactions: { perSource: 2, total: 3 }, clock });
    const first = await Peer.bind("127.0.0.1", port, { inDialog: true });
    const second = await Peer.bind("127.0.0.2", port, { inDialog: true });
    const kept = "kept";
    assert.equal((await first.ask(kept)).status, 481);
    assert.equal((await first.ask()).status, 481);
    const perSource = await first.ask();
    assert.equal(perSource.status, 503, "a third transaction from one source");
    assert.ok(perSource.headers.get("Retry-After") !== undefined);
    assert.equal((await second.ask()).status, 481, "another source still has room");
    assert.equal((await second.ask()).status, 503, "a fourth transaction in all");
    assert.equal(agent.serverTransactions, 3);
    assert.equal((await first.ask(kept)).status, 481, "a retransmission gets its transaction's response");
    // Requests outside any dialog keep no transaction (section 8.2.7): served while the limit is full.
    const outside = await Peer.bind("127.0.0.3", port);
    assert.equal((await outside.ask()).status, 200);
    // Timer J (64*T1 over UDP) ends them; then there is room again.
    clock.advance(32_000);
    assert.equal(agent.serverTransactions, 0);
    assert.equal((await first.ask()).status, 481);
  });
});
