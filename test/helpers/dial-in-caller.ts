/**
 * A caller's RTP stream for SIPp's play_pcap_audio (test/fixtures/sipp/uac-dial-in.xml): audio and
 * keys in order, the keys typed as RFC 4733 events on the audio's SSRC or as in-band DTMF tones.
 *
 * The stock /usr/share/sip-tester/dtmf_2833_*.pcap files cannot type a PIN: each holds one digit
 * with a fixed RTP timestamp on an SSRC of its own, so a repeated digit reads as one event, and the
 * keys would not share the audio's SSRC.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { encodeMulaw } from "../../src/telephony/media/codec/g711.js";
import { dtmfDigitPackets } from "../../src/telephony/media/dtmf/rfc4733.js";
import { rtpPacketLength, writeRtpPacket } from "../../src/telephony/media/rtp/rtp-packet.js";
import { FRAME_SAMPLES, type PcapPacket, SAMPLE_RATE, tone, writeRtpPcap } from "./audio.js";
import { Sipp } from "./sipp.js";

const PCMU = 0;
const TELEPHONE_EVENT = 101;
/** -10 dBFS for each of a key's two tones. */
const DTMF_TONE_AMPLITUDE = 10 ** (-10 / 20);
const KEY_MS = 100;
const GAP_MS = 100;
/** Row and column frequencies of each key (ITU-T Q.23). */
const DTMF_HZ: Record<string, [number, number]> = {
  "1": [697, 1209],
  "2": [697, 1336],
  "3": [697, 1477],
  "4": [770, 1209],
  "5": [770, 1336],
  "6": [770, 1477],
  "7": [852, 1209],
  "8": [852, 1336],
  "9": [852, 1477],
  "*": [941, 1209],
  "0": [941, 1336],
  "#": [941, 1477],
};

/** What the caller sends, in order: PCMU audio, or keys as RFC 4733 events. */
export type Segment = { audio: Int16Array } | { events: string };

/** A quiet 440 Hz hum (-40 dBFS): audio flows, nothing in it reads as a key. */
export function murmur(seconds: number): Int16Array {
  return tone(440, seconds, 0.01);
}

/** Each key as its two tones at -10 dBFS each for 100 ms, then 100 ms of silence. */
export function dtmfTones(keys: string): Int16Array {
  const keySamples = (KEY_MS * SAMPLE_RATE) / 1000;
  const stepSamples = ((KEY_MS + GAP_MS) * SAMPLE_RATE) / 1000;
  const samples = new Int16Array(keys.length * stepSamples);
  for (const [index, key] of [...keys].entries()) {
    const [low, high] = DTMF_HZ[key] ?? assert.fail(`no DTMF tones for ${key}`);
    const lowTone = tone(low, KEY_MS / 1000, DTMF_TONE_AMPLITUDE);
    const highTone = tone(high, KEY_MS / 1000, DTMF_TONE_AMPLITUDE);
    for (let i = 0; i < keySamples; i++) {
      samples[index * stepSamples + i] = (lowTone[i] as number) + (highTone[i] as number);
    }
  }
  return samples;
}

/**
 * One RTP stream on one SSRC with consecutive sequence numbers: audio as 20 ms PCMU frames, each key
 * as 100 ms of RFC 4733 events followed by 100 ms of silent audio; the media clock runs through the
 * events (RFC 4733 §2.5.1.3), so the capture times are those of a real phone.
 */
export function callerStream(segments: readonly Segment[]): PcapPacket[] {
  const ssrc = 0x0d1a1e11;
  const packets: PcapPacket[] = [];
  let sequenceNumber = 4000;
  let timestamp = 80_000;
  let clockMs = 0;
  const push = (marker: boolean, payloadType: number, ts: number, payload: Uint8Array, atMs: number) => {
    const header = { marker, payloadType, sequenceNumber, timestamp: ts >>> 0, ssrc, csrcs: [] };
    const datagram = Buffer.alloc(rtpPacketLength(header, payload.length));
    writeRtpPacket(header, payload, datagram);
    packets.push({ offsetMs: atMs, datagram });
    sequenceNumber = (sequenceNumber + 1) & 0xffff;
  };
  const sendAudio = (samples: Int16Array) => {
    for (let start = 0; start < samples.length; start += FRAME_SAMPLES) {
      const frame = new Int16Array(FRAME_SAMPLES);
      frame.set(samples.subarray(start, start + FRAME_SAMPLES));
      const payload = new Uint8Array(FRAME_SAMPLES);
      encodeMulaw(frame, payload);
      push(packets.length === 0, PCMU, timestamp, payload, clockMs);
      timestamp += FRAME_SAMPLES;
      clockMs += (FRAME_SAMPLES * 1000) / SAMPLE_RATE;
    }
  };
  for (const segment of segments) {
    if ("audio" in segment) {
      sendAudio(segment.audio);
      continue;
    }
    for (const key of segment.events) {
      const start = clockMs;
      const events = dtmfDigitPackets(key, { timestamp, durationMs: KEY_MS });
      for (const event of events) {
        push(event.marker, TELEPHONE_EVENT, event.timestamp, event.payload, start + event.sendOffsetMs);
      }
      clockMs = start + events.length * 20;
      timestamp += (clockMs - start) * (SAMPLE_RATE / 1000);
      sendAudio(new Int16Array((GAP_MS * SAMPLE_RATE) / 1000));
    }
  }
  return packets;
}

export interface SippCallerOptions {
  /** The instance's SIP port. */
  readonly sipPort: number;
  /** The instance's SIP address (a loopback one); default 127.0.0.1, the caller's own. */
  readonly sipAddress?: string;
  /** The access number dialled. */
  readonly accessNumber: string;
  /** The caller's number (its caller ID). */
  readonly from: string;
  /** What the caller sends, in order. */
  readonly segments: readonly Segment[];
  /** Where the pcap is written. */
  readonly dir: string;
  /** The loopback address it calls from; default 127.0.0.1. */
  readonly localAddress?: string;
  /** Further SIPp arguments, such as ["-trace_rtt"] for the setup time. */
  readonly args?: readonly string[];
}

/**
 * A SIPp caller that dials the access number, plays `segments` and hangs up a moment after the
 * last one (test/fixtures/sipp/uac-dial-in.xml).
 */
export async function sippCaller(options: SippCallerOptions): Promise<Sipp> {
  const packets = callerStream(options.segments);
  const pcap = join(options.dir, `caller-${options.from}-${Date.now()}.pcap`);
  writeRtpPcap(pcap, packets);
  return Sipp.start({
    scenario: "uac-dial-in.xml",
    remote: `${options.sipAddress ?? "127.0.0.1"}:${options.sipPort}`,
    pcap,
    pauseMs: Math.round(packets.at(-1)?.offsetMs ?? 0) + 500,
    keys: { caller: options.from },
    args: ["-s", options.accessNumber, ...(options.args ?? [])],
    timeoutSeconds: 60,
    localAddress: options.localAddress,
  });
}
