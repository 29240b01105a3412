/**
 * SRTP's cost per packet: `node --import tsx bench/media/srtp.ts`. For each suite, a stream of 20 ms
 * PCMU packets (12-byte header, 160-byte payload) is protected by an SrtpSender and opened again by an
 * SrtpReceiver, BENCH_PACKETS times (default 200,000) after an unmeasured warm-up of
 * BENCH_WARM_UP_PACKETS (default 20,000); every packet opened must equal the one sent, or the run
 * fails. The packets are measured in BENCH_ROUNDS rounds (default 20) that take the suites in turn,
 * and each suite's best round is kept: on a VM shared with other work, what the others take shows as
 * slow rounds, which the best round leaves out, and every suite is measured across the same stretch
 * of time. Prints the time per packet each way, that against
 * AES_CM_128_HMAC_SHA1_80's, what one call costs (50 packets a second each way) in percent of a core,
 * and the garbage collections during the suite's rounds.
 */
import { PerformanceObserver } from "node:perf_hooks";
import { SrtpReceiver, SrtpSender } from "../../src/telephony/media/rtp/srtp.js";
import { newSrtpKey, SRTP_SUITES, type SrtpSuite } from "../../src/telephony/media/rtp/srtp-suites.js";

const PACKETS = Number(process.env.BENCH_PACKETS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const WARM_UP = Number(process.env.BENCH_WARM_UP_PACKETS ?? 20_000);
const HEADER = 12;
const PAYLOAD = 160;
const REFERENCE: SrtpSuite = "AES_CM_128_HMAC_SHA1_80";

let collections = 0;
let collectionMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    collections++;
    collectionMs += entry.duration;
  }
}).observe({ entryTypes: ["gc"] });

/** The RTP packet with sequence number `sequence` (wrapping), its payload a pattern of the number. */
function packet(into: Buffer, sequence: number): void {
  into[0] = 0x80;
  into[1] = 0;
  into.writeUInt16BE(sequence & 0xffff, 2);
  into.writeUInt32BE((sequence * 160) >>> 0, 4);
  into.writeUInt32BE(0x12345678, 8);
  into.fill(sequence & 0xff, HEADER, HEADER + PAYLOAD);
}

/** One suite's stream: its two contexts, where it stands, and its best round so far. */
class Stream {
  readonly sender: SrtpSender;
  readonly receiver: SrtpReceiver;
  readonly buffer: Buffer;
  readonly plain = Buffer.alloc(HEADER + PAYLOAD);
  readonly datagrams: Buffer[];
  sequence = 0;
  best = { protectNs: Number.POSITIVE_INFINITY, unprotectNs: Number.POSITIVE_INFINITY };
  collections = 0;
  collectionMs = 0;

  constructor(readonly suite: SrtpSuite) {
    const material = newSrtpKey(suite);
    this.sender = new SrtpSender(material);
    this.receiver = new SrtpReceiver(material);
    this.buffer = Buffer.alloc(HEADER + PAYLOAD + this.sender.overhead);
    this.datagrams = Array.from({ length: 64 }, () => Buffer.alloc(HEADER + PAYLOAD + this.sender.overhead));
  }

  /** Sends and opens `count` packets; the mean time of each, in ns. */
  run(count: number): { protectNs: number; unprotectNs: number } {
    let protectNs = 0n;
    let unprotectNs = 0n;
    for (let n = 0; n < count; n++) {
      const i = this.sequence++;
      const { buffer, plain } = this;
      packet(buffer, i);
      buffer.copy(plain, 0, 0, HEADER + PAYLOAD);
      const datagram = this.datagrams[i % this.datagrams.length] as Buffer;
      const t0 = process.hrtime.bigint();
      const length = this.sender.protectRtp(buffer, HEADER + PAYLOAD);
      const t1 = process.hrtime.bigint();
      buffer.copy(datagram, 0, 0, length);
      const t2 = process.hrtime.bigint();
      const opened = this.receiver.unprotectRtp(datagram.subarray(0, length));
      const t3 = process.hrtime.bigint();
      if (!Buffer.isBuffer(opened) || !opened.equals(plain))
        throw new Error(`${this.suite}: packet ${i} did not come back as sent`);
      protectNs += t1 - t0;
      unprotectNs += t3 - t2;
    }
    return { protectNs: Number(protectNs) / count, unprotectNs: Number(unprotectNs) / count };
  }
}

const streams = SRTP_SUITES.map((suite) => new Stream(suite));
for (const stream of streams) stream.run(WARM_UP);
// The warm-up's collections are reported after it: let them arrive before counting.
await new Promise((resolve) => setTimeout(resolve, 100));
const perRound = Math.ceil(PACKETS / ROUNDS);
for (let round = 0; round < ROUNDS; round++) {
  for (const stream of streams) {
    const startCollections = collections;
    const startCollectionMs = collectionMs;
    const result = stream.run(perRound);
    // The collector's entries arrive after the synchronous loop: give them a moment.
    await new Promise((resolve) => setTimeout(resolve, 20));
    stream.collections += collections - startCollections;
    stream.collectionMs += collectionMs - startCollectionMs;
    if (result.protectNs + result.unprotectNs < stream.best.protectNs + stream.best.unprotectNs)
      stream.best = result;
  }
}

const reference = streams.find((stream) => stream.suite === REFERENCE) as Stream;
const referenceNs = reference.best.protectNs + reference.best.unprotectNs;
console.log(
  `SRTP, ${perRound * ROUNDS} packets of ${HEADER}+${PAYLOAD} bytes per suite in ${ROUNDS} rounds (best kept), Node ${process.version}`,
);
console.log("| suite | protect µs | unprotect µs | against _128_80 | one call, % of a core | GCs | GC ms |");
console.log("| ----- | ---------: | -----------: | --------------: | --------------------: | --: | ----: |");
for (const stream of streams) {
  const { protectNs, unprotectNs } = stream.best;
  // 50 packets a second each way: (protect + unprotect) × 50 ns per second of call.
  const callCorePercent = ((protectNs + unprotectNs) * 50) / 1e7;
  console.log(
    `| ${stream.suite} | ${(protectNs / 1000).toFixed(2)} | ${(unprotectNs / 1000).toFixed(2)} | ${((protectNs + unprotectNs) / referenceNs).toFixed(2)} | ${callCorePercent.toFixed(4)} | ${stream.collections} | ${stream.collectionMs.toFixed(1)} |`,
  );
}
