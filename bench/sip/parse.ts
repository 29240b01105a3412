/**
 * Parse and parse+serialize throughput of the SIP message layer: `node --import tsx bench/sip/parse.ts`,
 * also run by `npm run bench:sip`. "Parse" is parseMessage and reading what a receive path reads of
 * the message. BENCH_SECONDS per figure, default 2, split into BENCH_ROUNDS rounds, default 5, of which
 * the median is reported.
 */
import { readFileSync } from "node:fs";
import { parseMessage } from "../../src/telephony/sip/message/parser.js";
import { serializeMessage } from "../../src/telephony/sip/message/serializer.js";
import type { SipMessage } from "../../src/telephony/sip/message/sip-message.js";

const TORTURE_DIR = new URL("../../../shared/sip-torture/", import.meta.url);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const sdp = [
  "v=0",
  "o=alice 2890844526 2890844526 IN IP4 198.51.100.7",
  "s=-",
  "c=IN IP4 198.51.100.7",
  "t=0 0",
  "m=audio 49170 RTP/AVP 0 8 97 101",
  "a=rtpmap:0 PCMU/8000",
  "a=rtpmap:8 PCMA/8000",
  "a=rtpmap:97 opus/48000/2",
  "a=rtpmap:101 telephone-event/8000",
  "a=fmtp:101 0-16",
  "a=sendrecv",
  "",
].join("\r\n");

const typicalInvite = Buffer.from(
  [
    "INVITE sip:+15551234567@conf.example.com SIP/2.0",
    "Via: SIP/2.0/UDP 198.51.100.7:5060;branch=z9hG4bK74bf9;rport",
    "Via: SIP/2.0/UDP 203.0.113.1:5060;branch=z9hG4bK3f2a1;received=203.0.113.1",
    "Max-Forwards: 69",
    'From: "Alice Example" <sip:alice@example.org>;tag=9fxced76sl',
    "To: <sip:+15551234567@conf.example.com>",
    "Call-ID: 3848276298220188511@198.51.100.7",
    "CSeq: 1 INVITE",
    "Contact: <sip:alice@198.51.100.7:5060;transport=udp>",
    "Allow: INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, UPDATE, REFER, NOTIFY",
    "Supported: replaces, timer, 100rel",
    "User-Agent: ExamplePhone/1.0",
    "Content-Type: application/sdp",
    `Content-Length: ${Buffer.byteLength(sdp)}`,
    "",
    sdp,
  ].join("\r\n"),
);

interface TortureCase {
  readonly file: string;
  readonly valid: boolean;
}
const index: TortureCase[] = JSON.parse(readFileSync(new URL("index.json", TORTURE_DIR), "utf8"));
const validTorture = index.filter((c) => c.valid).map((c) => readFileSync(new URL(c.file, TORTURE_DIR)));

/**
 * Messages per second for `work` over `messages`: the median of ROUNDS rounds, after a warm-up of a
 * quarter of the time. The median, because a shared machine slows some rounds down.
 */
function rate(messages: Buffer[], work: (bytes: Buffer) => void): number {
  const run = (seconds: number): number => {
    const started = performance.now();
    const deadline = started + seconds * 1000;
    let count = 0;
    while (performance.now() < deadline) {
      for (const bytes of messages) work(bytes);
      count += messages.length;
    }
    return count / ((performance.now() - started) / 1000);
  };
  run(SECONDS / 4);
  const rates: number[] = [];
  for (let round = 0; round < ROUNDS; round++) rates.push(run(SECONDS / ROUNDS));
  rates.sort((a, b) => a - b);
  return rates[Math.floor(rates.length / 2)] as number;
}

/** Keeps what readAsReceived reads, so that the reads cannot be left out. */
let read = 0;

/**
 * What the layers above the parser read of a message they receive: the transport the top Via, the
 * transaction layer its branch and the CSeq, the user agent Call-ID, tags and Contact. The parser
 * keeps these values, so reading them costs little; they are read so that the figures stay honest
 * should the parser ever leave them to be parsed on first use.
 */
function readAsReceived(message: SipMessage): void {
  const { via, cseq, from, to, contact, callId } = message.headers;
  read += (via?.branch?.length ?? 0) + (via?.host.length ?? 0) + (cseq?.seq ?? 0) + (callId?.length ?? 0);
  read += (from?.tag?.length ?? 0) + (to?.tag?.length ?? 0) + (contact?.uri.length ?? 0);
}

function parse(bytes: Buffer): SipMessage {
  const result = parseMessage(bytes, { stream: false });
  if (!result.ok) throw new Error("benchmark message refused");
  readAsReceived(result.message);
  return result.message;
}

function parseAndSerialize(bytes: Buffer): void {
  serializeMessage(parse(bytes));
}

const rows = [
  [`typical INVITE with SDP (${typicalInvite.length} B)`, [typicalInvite]],
  [`valid RFC 4475 messages (${validTorture.length})`, validTorture],
] as const;
console.log(
  `SIP message layer, ${SECONDS} s per figure (median of ${ROUNDS} rounds), one core (Node ${process.version})`,
);
for (const [name, messages] of rows) {
  const parsed = rate([...messages], parse);
  const roundTrip = rate([...messages], parseAndSerialize);
  console.log(
    `${name.padEnd(34)} parse ${Math.round(parsed).toLocaleString("en").padStart(9)}/s` +
      `   parse+serialize ${Math.round(roundTrip).toLocaleString("en").padStart(9)}/s`,
  );
}
if (read === 0) throw new Error("the benchmark messages gave the receive path nothing to read");
