/**
 * Sending DTMF keys as RFC 4733 telephone-events on an RTP stream: keys queue up and go one packet
 * per 20 ms tick, each event starting at the stream's timestamp of the moment (§2.3.1) and counting
 * its duration on the audio's RTP clock (§2.1: 48,000 Hz beside Opus, so 960 a packet).
 */

import { dtmfDigitPackets, type TelephoneEventPacket } from "../dtmf/rfc4733.js";
import { FRAME_MS } from "./rtp-stream.js";

export interface SendDigitsOptions {
  /** Tone length per key, default 100 ms. */
  durationMs?: number;
  /** −dBm0, default 10. */
  volume?: number;
}

/** The stream the events go out on. */
export interface TelephoneEventStream {
  /** The stream's RTP timestamp now. */
  timestamp(): number;
  /** The RTP clock rate of the audio the events go with. */
  clockRate(): number;
  /** Sends one event packet (when the stream may send) and advances the timestamp by one tick. */
  sendEventPacket(packet: TelephoneEventPacket): void;
}

interface DtmfJob {
  keys: string;
  next: number;
  options: SendDigitsOptions;
  resolve: (sent: boolean) => void;
}

/** A "," in a digit string waits one second. */
const PAUSE_TICKS = 1000 / FRAME_MS;
const NO_EVENT_PACKETS: TelephoneEventPacket[] = [];

export class TelephoneEventSender {
  private readonly jobs: DtmfJob[] = [];
  private eventPackets = NO_EVENT_PACKETS;
  private eventPacketIndex = 0;
  private pauseTicks = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly stream: TelephoneEventStream) {}

  /** Whether an event is being sent (audio frames are then dropped, RFC 4733 §2.5.1.1). */
  get sendingEvent(): boolean {
    return this.eventPackets.length > 0;
  }

  /** Queues keys (checked by the caller); resolves true once the last is sent, false if stopped first. */
  send(keys: string, options: SendDigitsOptions): Promise<boolean> {
    return new Promise((resolve) => {
      this.jobs.push({ keys, next: 0, options, resolve });
      if (this.timer === null) {
        this.timer = setInterval(() => this.tick(), FRAME_MS);
        this.tick();
      }
    });
  }

  /** Stops the timer; jobs still queued (only when closing) resolve false. */
  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.eventPackets = NO_EVENT_PACKETS;
    this.eventPacketIndex = 0;
    this.pauseTicks = 0;
    for (const job of this.jobs.splice(0)) job.resolve(false);
  }

  /** One 20 ms step: a pause tick, or the next packet of the current or next event. */
  private tick(): void {
    if (this.pauseTicks > 0) {
      this.pauseTicks--;
      return;
    }
    if (this.eventPacketIndex >= this.eventPackets.length && !this.startNextKey()) return;
    const packet = this.eventPackets[this.eventPacketIndex++] as TelephoneEventPacket;
    this.stream.sendEventPacket(packet);
    if (this.eventPacketIndex === this.eventPackets.length) {
      this.eventPackets = NO_EVENT_PACKETS;
      this.eventPacketIndex = 0;
    }
  }

  /**
   * Takes the next key off the queue and prepares its packets, the event starting at the current
   * timestamp (RFC 4733 §2.3.1). Returns false when there is nothing to send this tick: a "," pause
   * began, or the queue is empty and the timer stopped.
   */
  private startNextKey(): boolean {
    for (;;) {
      const job = this.jobs[0];
      if (job === undefined) {
        this.stop();
        return false;
      }
      const key = job.keys[job.next++];
      if (key === undefined) {
        this.jobs.shift();
        job.resolve(true);
        continue;
      }
      if (key === ",") {
        this.pauseTicks = PAUSE_TICKS - 1;
        return false;
      }
      this.eventPackets = dtmfDigitPackets(key, {
        timestamp: this.stream.timestamp(),
        durationMs: job.options.durationMs,
        volume: job.options.volume,
        clockRate: this.stream.clockRate(),
        packetIntervalMs: FRAME_MS,
      });
      this.eventPacketIndex = 0;
      return true;
    }
  }
}
