/**
 * A room's right to send, `MediaMix.sendFor`, on the wire: plain UDP sockets on loopback stand for
 * the phones and note when each RTP packet arrives (on monotonicMs(), the clock the deadline is
 * taken on). Past the deadline nothing of the room goes out, whatever would send it (the mix, hold
 * music, a prompt, DTMF), not even on waking from a stop (SIGSTOP of a process of its own), until
 * a new sendFor; other rooms on the thread, and a stream once out of the room, send on.
 */
import assert from "node:assert/strict";
import { type ChildProcess, fork } from "node:child_process";
import { randomInt } from "node:crypto";
import { once } from "node:events";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { mulawToLinear } from "../../../../src/telephony/media/codec/g711.js";
import {
  type MediaMix,
  MediaPlane,
  type MediaStream,
} from "../../../../src/telephony/media/plane/media-plane.js";
import { monotonicMs } from "../../../../src/telephony/media/plane/protocol.js";
import { RtpPortAllocator } from "../../../../src/telephony/media/rtp/port-allocator.js";
import { waitFor } from "../../../helpers/raw-udp.js";

/** A packet's arrival may trail its sending by up to a tick (the test's event loop, loopback). */
const SLACK_MS = 20;
const TELEPHONE_EVENT = 101;

const base = 48000 + 2 * randomInt(1500);
const ears = new RtpPortAllocator(base, base + 99);
const plane = new MediaPlane({
  threads: 1,
  bindAddress: "127.0.0.1",
  rtpPorts: { min: base + 100, max: base + 199 },
  mediaTimeoutMs: 0,
});
const closers: Array<() => unknown> = [];
after(async () => {
  for (const close of closers) await close();
  await plane.close();
});

interface Heard {
  /** monotonicMs() when it arrived. */
  readonly at: number;
  readonly payloadType: number;
  readonly marker: boolean;
  readonly sequenceNumber: number;
  readonly timestamp: number;
  /** PCMU louder than silence (music, a prompt). */
  readonly loud: boolean;
}

/** A socket pair standing for a phone: every RTP packet it is sent, noted as it arrives. */
async function ear(): Promise<{ port: number; heard: Heard[] }> {
  const pair = await ears.bindPair("127.0.0.1");
  closers.push(async () => {
    await Promise.all([
      new Promise<void>((closed) => pair.rtp.close(closed)),
      new Promise<void>((closed) => pair.rtcp.close(closed)),
    ]);
    ears.release(pair.port);
  });
  const heard: Heard[] = [];
  pair.rtp.on("message", (datagram: Buffer) => {
    const at = monotonicMs();
    const payloadType = (datagram[1] as number) & 0x7f;
    let loud = false;
    // The fixed header only: our sender writes no CSRCs or extensions.
    if (payloadType === 0)
      for (let i = 12; i < datagram.length; i++)
        if (Math.abs(mulawToLinear(datagram[i] as number)) > 1000) loud = true;
    heard.push({
      at,
      payloadType,
      marker: ((datagram[1] as number) & 0x80) !== 0,
      sequenceNumber: datagram.readUInt16BE(2),
      timestamp: datagram.readUInt32BE(4),
      loud,
    });
  });
  return { port: pair.port, heard };
}

interface Phone {
  readonly stream: MediaStream;
  readonly heard: Heard[];
}

/** A phone's stream next to `mix` (not in it yet), sending PCMU and telephone-events to an ear. */
async function phone(mix: MediaMix): Promise<Phone> {
  const { port, heard } = await ear();
  const stream = await plane.openStream(mix);
  closers.push(() => stream.close());
  stream.configure({
    codec: "PCMU",
    payloadType: 0,
    telephoneEventPayloadType: TELEPHONE_EVENT,
    remoteAddress: "127.0.0.1",
    remotePort: port,
    direction: "sendrecv",
  });
  return { stream, heard };
}

/** A room of `members` phones, each hearing the room. */
async function room(members: number): Promise<{ mix: MediaMix; phones: Phone[] }> {
  const mix = plane.openMix();
  closers.push(() => mix.close());
  const phones: Phone[] = [];
  for (let n = 0; n < members; n++) {
    const each = await phone(mix);
    each.stream.join(mix, false);
    phones.push(each);
  }
  for (const { heard } of phones) await waitFor(() => heard.length >= 10, "the room's packets");
  return { mix, phones };
}

/** Calls `mix.sendFor(ms)`; the deadline as the test sees it, taken just before (so never later). */
function sendFor(mix: MediaMix, ms: number): number {
  const until = monotonicMs() + ms;
  mix.sendFor(ms);
  return until;
}

function arrivedAfter(heard: readonly Heard[], at: number): Heard[] {
  return heard.filter((packet) => packet.at > at);
}

function between(heard: readonly Heard[], from: number, to: number): Heard[] {
  return heard.filter((packet) => packet.at > from && packet.at <= to);
}

describe("MediaMix.sendFor", { concurrency: true }, () => {
  it("sends for the time given, then nothing, until a new sendFor lets it send again", async () => {
    const { mix, phones } = await room(2);
    const from = monotonicMs();
    const until = sendFor(mix, 300);
    await sleep(900);
    for (const { heard } of phones) {
      assert.ok(between(heard, from, until).length >= 10, "the room sent until the deadline");
      assert.deepEqual(arrivedAfter(heard, until + SLACK_MS), [], "nothing after the deadline");
    }
    const { heard } = phones[0] as Phone;
    const quiet = heard.length;
    const last = heard[quiet - 1] as Heard;
    const again = sendFor(mix, 2000);
    await waitFor(() => heard.length >= quiet + 10, "the room sending again", 2000);
    // Carried on as after silence: the next sequence number, a new talkspurt, the timestamp moved on
    // by about the time that passed at 8 kHz (loosely: arrivals lag on a loaded machine, and the
    // thread's clock skips ticks it is too late for).
    const first = heard[quiet] as Heard;
    assert.equal(first.sequenceNumber, (last.sequenceNumber + 1) & 0xffff);
    assert.ok(first.marker, "the first packet after the gap is marked");
    const gap = (first.timestamp - last.timestamp) >>> 0;
    const elapsed = (first.at - last.at) * 8;
    assert.ok(gap > elapsed / 2 && gap < elapsed * 1.5, `the timestamp moved ${gap}, the clock ${elapsed}`);
    await sleep(again + 300 - monotonicMs());
    for (const { heard: each } of phones) {
      assert.ok(between(each, again - 1000, again).length >= 40, "sending up to the new deadline");
      assert.deepEqual(arrivedAfter(each, again + SLACK_MS), [], "nothing after the new deadline");
    }
  });

  it("binds a stream that joins later; one that leaves is free of it", async () => {
    const { mix, phones } = await room(2);
    const leaving = phones[1] as Phone;
    const until = sendFor(mix, 200);
    await sleep(400);
    const joining = await phone(mix);
    const joinedAt = monotonicMs();
    joining.stream.join(mix, false);
    leaving.stream.leave();
    await sleep(800);
    assert.deepEqual(joining.heard, [], "the newcomer sends nothing");
    assert.deepEqual(arrivedAfter(phones[0]?.heard ?? [], until + SLACK_MS), []);
    // Out of the room it hears silence of its own, sent every tick.
    assert.ok(arrivedAfter(leaving.heard, joinedAt).length >= 25, "the stream that left sends");
  });

  it("leaves the other rooms on the thread alone", async () => {
    const [fenced, free] = [await room(1), await room(1)];
    assert.equal(fenced.mix.thread, free.mix.thread);
    const until = sendFor(fenced.mix, 300);
    await sleep(1200);
    assert.deepEqual(arrivedAfter(fenced.phones[0]?.heard ?? [], until + SLACK_MS), []);
    assert.ok(arrivedAfter(free.phones[0]?.heard ?? [], until).length >= 35, "the other room sends on");
  });

  it("stops hold music, a prompt to one member and DTMF too; the room goes on unheard", async () => {
    const held = await room(1);
    const holding = held.phones[0] as Phone;
    held.mix.setHold(true);
    await waitFor(() => holding.heard.filter((packet) => packet.loud).length >= 10, "the hold music");

    const prompted = await room(2);
    const [alone, other] = prompted.phones as [Phone, Phone];
    // About 3.7 s: it would go on well past the deadline.
    const started = monotonicMs();
    const played = alone.stream.play({ prompts: ["reconnecting"] });
    await waitFor(() => alone.heard.filter((packet) => packet.loud).length >= 5, "the prompt");

    const dialling = await room(1);
    const dialler = dialling.phones[0] as Phone;
    // "1" at once; "2" a second later, past the deadline.
    const dialled = dialler.stream.sendDigits("1,2");

    const deadlines = [held.mix, prompted.mix, dialling.mix].map((mix) => sendFor(mix, 300));
    await sleep(1800);
    const [heldUntil, promptedUntil, diallingUntil] = deadlines as [number, number, number];
    assert.ok(holding.heard.some((packet) => packet.loud && packet.at <= heldUntil));
    assert.deepEqual(arrivedAfter(holding.heard, heldUntil + SLACK_MS), [], "no music after the deadline");
    for (const { heard } of [alone, other])
      assert.deepEqual(arrivedAfter(heard, promptedUntil + SLACK_MS), [], "no prompt after the deadline");
    const events = dialler.heard.filter((packet) => packet.payloadType === TELEPHONE_EVENT);
    assert.ok(
      events.some((packet) => packet.at <= diallingUntil),
      "the first key went",
    );
    assert.deepEqual(arrivedAfter(events, diallingUntil + SLACK_MS), [], "no key after the deadline");
    assert.equal(await dialled, true);
    // The room keeps its time: the prompt ends when it would have been heard to its end.
    await played;
    const length = monotonicMs() - started;
    assert.ok(length > 3000 && length < 6000, `the prompt played for ${length} ms`);
  });

  it("sends nothing on waking from a stop past the deadline (SIGSTOP, SIGCONT)", async () => {
    const { port, heard } = await ear();
    const child: ChildProcess = fork(
      new URL("./send-for-process.ts", import.meta.url),
      [String(port), String(base + 200), String(base + 219)],
      { execArgv: ["--import", "tsx"] },
    );
    closers.push(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await once(child, "exit");
    });
    const [ready] = await once(child, "message");
    assert.equal(ready, "ready");
    await waitFor(() => heard.length >= 10, "the process's room sending");
    const answer = once(child, "message");
    child.send({ ms: 400 });
    const [{ until }] = (await answer) as [{ until: number }];
    child.kill("SIGSTOP");
    const stoppedAt = monotonicMs();
    // Stopped while it may still send: it wakes with a deadline that passed while it slept.
    assert.ok(stoppedAt < until - 100, `stopped ${until - stoppedAt} ms before the deadline`);
    await sleep(until + 600 - monotonicMs());
    child.kill("SIGCONT");
    const wokenAt = monotonicMs();
    await sleep(600);
    assert.deepEqual(arrivedAfter(heard, until + SLACK_MS), [], "nothing after the deadline, on waking");
    // It is alive and well: told again, it sends.
    const quiet = heard.length;
    child.send({ ms: 5000 });
    await waitFor(() => heard.length >= quiet + 10, "the process's room sending again", 3000);
    assert.ok((heard[quiet] as Heard).at > wokenAt);
    child.send("close");
    await once(child, "exit");
  });
});
