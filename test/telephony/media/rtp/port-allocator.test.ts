import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import dgram from "node:dgram";
import { describe, it } from "node:test";
import { type BoundPortPair, RtpPortAllocator } from "../../../../src/telephony/media/rtp/port-allocator.js";

/** An even base port below Linux's ephemeral range, random so that concurrent test files rarely meet. */
function randomBase(): number {
  return 20000 + 2 * randomInt(3000);
}

function closePair(pair: BoundPortPair): void {
  pair.rtp.close();
  pair.rtcp.close();
}

function occupy(port: number): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket("udp4");
    socket.once("error", reject);
    socket.bind(port, "127.0.0.1", () => resolve(socket));
  });
}

describe("RtpPortAllocator", () => {
  it("binds RTP on even ports and RTCP on the port above", async () => {
    const base = randomBase();
    const allocator = new RtpPortAllocator(base + 1, base + 20);
    const pairs = [await allocator.bindPair("127.0.0.1"), await allocator.bindPair("127.0.0.1")];
    try {
      assert.deepEqual(
        pairs.map((pair) => pair.port),
        [base + 2, base + 4],
      );
      for (const pair of pairs) {
        assert.equal(pair.rtp.address().port, pair.port);
        assert.equal(pair.rtcp.address().port, pair.port + 1);
        assert.equal(pair.rtp.address().address, "127.0.0.1");
      }
      assert.equal(allocator.allocated, 2);
    } finally {
      pairs.forEach(closePair);
    }
  });

  it("does not hand out a just-released port again at once", async () => {
    const base = randomBase();
    const allocator = new RtpPortAllocator(base, base + 9);
    const first = await allocator.bindPair("127.0.0.1");
    closePair(first);
    allocator.release(first.port);
    const second = await allocator.bindPair("127.0.0.1");
    closePair(second);
    assert.notEqual(second.port, first.port);
    assert.equal(allocator.allocated, 1);
  });

  it("reuses a released port once the rotation comes back to it", async () => {
    const base = randomBase();
    const allocator = new RtpPortAllocator(base, base + 1);
    const first = await allocator.bindPair("127.0.0.1");
    closePair(first);
    allocator.release(first.port);
    const again = await allocator.bindPair("127.0.0.1");
    closePair(again);
    assert.equal(again.port, first.port);
  });

  it("throws a clear error when the range is exhausted", async () => {
    const base = randomBase();
    const allocator = new RtpPortAllocator(base, base + 3);
    const pairs = [await allocator.bindPair("127.0.0.1"), await allocator.bindPair("127.0.0.1")];
    try {
      await assert.rejects(allocator.bindPair("127.0.0.1"), {
        message: `no free RTP port pair in ${base}-${base + 3} on 127.0.0.1`,
      });
    } finally {
      pairs.forEach(closePair);
    }
  });

  it("skips pairs whose RTP or RTCP port another socket holds (EADDRINUSE)", async () => {
    const base = randomBase();
    const taken = [await occupy(base), await occupy(base + 3)];
    const allocator = new RtpPortAllocator(base, base + 9);
    try {
      const pair = await allocator.bindPair("127.0.0.1");
      closePair(pair);
      assert.equal(pair.port, base + 4);
      assert.equal(allocator.allocated, 1);
      // The pair whose RTCP bind failed freed its RTP port again.
      const check = await occupy(base + 2);
      check.close();
    } finally {
      for (const socket of taken) socket.close();
    }
  });

  it("hands concurrent callers different pairs", async () => {
    const base = randomBase();
    const allocator = new RtpPortAllocator(base, base + 19);
    const pairs = await Promise.all([1, 2, 3].map(() => allocator.bindPair("127.0.0.1")));
    pairs.forEach(closePair);
    assert.equal(new Set(pairs.map((pair) => pair.port)).size, 3);
  });

  it("passes on bind errors other than EADDRINUSE and keeps the port free", async () => {
    const allocator = new RtpPortAllocator(randomBase(), 32000);
    // 192.0.2.1 (TEST-NET-1) is not an address of this host.
    await assert.rejects(allocator.bindPair("192.0.2.1"), { code: "EADDRNOTAVAIL" });
    assert.equal(allocator.allocated, 0);
  });

  it("refuses a range without an even/odd pair", () => {
    assert.throws(() => new RtpPortAllocator(10001, 10002), RangeError);
    assert.throws(() => new RtpPortAllocator(0, 100), RangeError);
    assert.throws(() => new RtpPortAllocator(10000, 70000), RangeError);
  });
});
