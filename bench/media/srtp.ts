/**
 * SRTP's cost per packet: `node --import tsx bench/media/srtp.ts`. For each suite, a stream of 20 ms
 * PCMU packets (12-byte header, 160-byte payload) is protected by an SrtpSender and opened again by an
 * SrtpReceiver, BENCH_PACKETS times (default 200,000) after an unmeasured warm-up; every packet opened
 * must equal the one sent, or the run fails. Prints the time per packet each way, what one call costs
 * (50 packets a second each way) in percent of a core, and the garbage collections during the run.
 */
import { PerformanceObserver } from "node:perf_hooks";
import { newSrtpKey, SRTP_SUITES, SrtpReceiver, SrtpSender } from "../../src/telephony/media/rtp/srtp.js";

const PACKETS = Number(process.env.BENCH_PACKETS ?? 200_000);
const WARM_UP = 20_000;
const HEADER = 12;
const PAYLOAD = 160;

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

interface Result {
  suite: string;
  protectNs: number;
  unprotectNs: number;
  callCorePercent: number;
  collections: number;
  collectionMs: number;
}

async function run(suite: (typeof SRTP_SUITES)[number]): Promise<Result> {
  const material = newSrtpKey(suite);
  const sender = new SrtpSender(material);
  const receiver = new SrtpReceiver(material);
  const buffer = Buffer.alloc(HEADER + PAYLOAD + sender.overhead);
  const plain = Buffer.alloc(HEADER + PAYLOAD);
  const datagrams = Array.from({ length: 64 }, () => Buffer.alloc(HEADER + PAYLOAD + sender.overhead));
  let protectNs = 0n;
  let unprotectNs = 0n;
  const startCollections = collections;
  const startCollectionMs = collectionMs;
  for (let i = 0; i < WARM_UP + PACKETS; i++) {
    const measured = i >= WARM_UP;
    packet(buffer, i);
    buffer.copy(plain, 0, 0, HEADER + PAYLOAD);
    const datagram = datagrams[i % datagrams.length] as Buffer;
    const t0 = process.hrtime.bigint();
    const length = sender.protectRtp(buffer, HEADER + PAYLOAD);
    const t1 = process.hrtime.bigint();
    buffer.copy(datagram, 0, 0, length);
    const t2 = process.hrtime.bigint();
    const opened = receiver.unprotectRtp(datagram.subarray(0, length));
    const t3 = process.hrtime.bigint();
    if (!Buffer.isBuffer(opened) || !opened.equals(plain))
      throw new Error(`${suite}: packet ${i} did not come back as sent`);
    if (measured) {
      protectNs += t1 - t0;
      unprotectNs += t3 - t2;
    }
  }
  // The collector's entries arrive after the synchronous loop: give them a moment.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const protect = Number(protectNs) / PACKETS;
  const unprotect = Number(unprotectNs) / PACKETS;
  return {
    suite,
    protectNs: protect,
    unprotectNs: unprotect,
    // 50 packets a second each way: (protect + unprotect) × 50 ns per second of call.
    callCorePercent: ((protect + unprotect) * 50) / 1e7,
    collections: collections - startCollections,
    collectionMs: collectionMs - startCollectionMs,
  };
}

console.log(`SRTP, ${PACKETS} packets of ${HEADER}+${PAYLOAD} bytes per suite, Node ${process.version}`);
console.log("| suite | protect µs | unprotect µs | one call, % of a core | GCs | GC ms |");
console.log("| ----- | ---------: | -----------: | --------------------: | --: | ----: |");
for (const suite of SRTP_SUITES) {
  const result = await run(suite);
  console.log(
    `| ${result.suite} | ${(result.protectNs / 1000).toFixed(2)} | ${(result.unprotectNs / 1000).toFixed(2)} | ${result.callCorePercent.toFixed(4)} | ${result.collections} | ${result.collectionMs.toFixed(1)} |`,
  );
}
