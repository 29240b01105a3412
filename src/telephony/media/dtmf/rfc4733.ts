/**
 * DTMF as RTP telephone-events (RFC 4733). The payload format (§2.3):
 *
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |     event     |E|R| volume    |          duration             |
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * All packets of one event carry the event's start as RTP timestamp (§2.3.1); the duration grows in
 * each update and the final packet, with E set, is sent three times (§2.5.1.4).
 */

export const TELEPHONE_EVENT_PAYLOAD_LENGTH = 4;

/** Event codes 0–15 are the DTMF keys (RFC 4733 §3.2, Table 7), in this order. */
const DTMF_KEYS = "0123456789*#ABCD";

export interface TelephoneEvent {
  /** Event code, 0–255; 0–15 are DTMF keys. */
  event: number;
  /** E bit: this packet reports the end of the event. */
  end: boolean;
  /** Power level of the tone in −dBm0, 0–63 (§2.3.4). */
  volume: number;
  /** Duration so far, in timestamp units, 16 bits (§2.3.5). */
  duration: number;
}

/**
 * Parses a telephone-event payload, into `into` when given (a per-packet path that allocates
 * nothing); null when it is too short. Redundant trailing octets are ignored.
 */
export function parseTelephoneEvent(
  payload: Uint8Array,
  into: TelephoneEvent = { event: 0, end: false, volume: 0, duration: 0 },
): TelephoneEvent | null {
  if (payload.length < TELEPHONE_EVENT_PAYLOAD_LENGTH) return null;
  const flags = payload[1] as number;
  into.event = payload[0] as number;
  into.end = (flags & 0x80) !== 0;
  into.volume = flags & 0x3f;
  into.duration = ((payload[2] as number) << 8) | (payload[3] as number);
  return into;
}

/** Writes a telephone-event payload into `out` at `offset` (R is sent as zero, §2.3.3); returns 4. */
export function writeTelephoneEvent(event: TelephoneEvent, out: Uint8Array, offset = 0): number {
  if (out.length < offset + TELEPHONE_EVENT_PAYLOAD_LENGTH) {
    throw new RangeError("telephone-event payload does not fit in the buffer");
  }
  out[offset] = event.event & 0xff;
  out[offset + 1] = (event.end ? 0x80 : 0) | (event.volume & 0x3f);
  out[offset + 2] = (event.duration >> 8) & 0xff;
  out[offset + 3] = event.duration & 0xff;
  return TELEPHONE_EVENT_PAYLOAD_LENGTH;
}

/** The DTMF key for an event code, or null when the event is not a DTMF key. */
export function dtmfKeyOf(event: number): string | null {
  return DTMF_KEYS[event] ?? null;
}

/** The event code for a DTMF key ("0"–"9", "*", "#", "A"–"D"). */
export function eventOfDtmfKey(key: string): number {
  const event = key.length === 1 ? DTMF_KEYS.indexOf(key.toUpperCase()) : -1;
  if (event < 0) throw new RangeError(`not a DTMF key: ${JSON.stringify(key)}`);
  return event;
}

export interface ReceivedDigit {
  key: string;
  /** Longest duration reported for the event, in timestamp units. */
  duration: number;
  /** False when the end packets were lost and the event was closed by the next event's arrival. */
  endSeen: boolean;
}

/** True when RTP timestamp `a` precedes `b` in 32-bit serial number arithmetic. */
function timestampPrecedes(a: number, b: number): boolean {
  return ((a - b) | 0) < 0;
}

/**
 * Turns the telephone-event packets of one RTP stream into DTMF digits, each reported once:
 * packets sharing an RTP timestamp belong to one event (§2.3.1), repeated end packets are
 * retransmissions (§2.5.1.4), packets older than the current event arrive late and are ignored, and
 * an event whose end packets were all lost is reported when the next event starts (§2.5.2.2).
 */
export class TelephoneEventReceiver {
  private currentTimestamp = 0;
  private currentEvent = -1;
  private currentDuration = 0;
  private currentReported = true;
  /** The packet being read, parsed in place. */
  private readonly parsed: TelephoneEvent = { event: 0, end: false, volume: 0, duration: 0 };

  constructor(private readonly onDigit: (digit: ReceivedDigit) => void) {}

  /** Feeds one telephone-event packet: its RTP timestamp and payload. */
  receive(rtpTimestamp: number, payload: Uint8Array): void {
    const packet = parseTelephoneEvent(payload, this.parsed);
    if (packet === null) return;
    const timestamp = rtpTimestamp >>> 0;
    const isFirstEvent = this.currentEvent < 0;
    if (!isFirstEvent && timestamp === this.currentTimestamp) {
      this.currentDuration = Math.max(this.currentDuration, packet.duration);
      if (packet.end) this.report(true);
      return;
    }
    if (!isFirstEvent && timestampPrecedes(timestamp, this.currentTimestamp)) return;

    this.report(false);
    this.currentTimestamp = timestamp;
    this.currentEvent = packet.event;
    this.currentDuration = packet.duration;
    this.currentReported = false;
    if (packet.end) this.report(true);
  }

  private report(endSeen: boolean): void {
    if (this.currentReported) return;
    this.currentReported = true;
    const key = dtmfKeyOf(this.currentEvent);
    if (key !== null) this.onDigit({ key, duration: this.currentDuration, endSeen });
  }
}

export interface TelephoneEventPacket {
  /** Set on the first packet of the event (§2.5.1.1). */
  marker: boolean;
  /** The event's start; the same for every packet of it (§2.3.1). */
  timestamp: number;
  /** When to send the packet, in milliseconds after the first one. */
  sendOffsetMs: number;
  payload: Uint8Array;
}

export interface DtmfDigitOptions {
  /** RTP timestamp of the event's start. */
  timestamp: number;
  /** Tone length; rounded up to whole packet intervals. Default 100 ms. */
  durationMs?: number;
  /** −dBm0, default 10. */
  volume?: number;
  /** Default 8000 Hz, as negotiated for telephone-event/8000. */
  clockRate?: number;
  /** Interval between updates, default 20 ms (§2.5.1.2). */
  packetIntervalMs?: number;
}

/** Number of times the final packet is sent (§2.5.1.4 recommends three). */
const END_PACKET_COUNT = 3;

/**
 * The packets a sender emits for one DTMF key (§2.5.1): a first packet with the marker bit, an
 * update every packet interval with the duration so far, and the final duration with E set, sent
 * three times. Sequence numbers are the caller's: one per packet, in order.
 */
export function dtmfDigitPackets(key: string, options: DtmfDigitOptions): TelephoneEventPacket[] {
  const event = eventOfDtmfKey(key);
  const { timestamp, durationMs = 100, volume = 10, clockRate = 8000, packetIntervalMs = 20 } = options;
  const intervalUnits = (clockRate * packetIntervalMs) / 1000;
  const updateCount = Math.max(1, Math.ceil(durationMs / packetIntervalMs));
  const totalDuration = Math.min(0xffff, updateCount * intervalUnits);

  const packets: TelephoneEventPacket[] = [];
  const push = (duration: number, end: boolean) => {
    const payload = new Uint8Array(TELEPHONE_EVENT_PAYLOAD_LENGTH);
    writeTelephoneEvent({ event, end, volume, duration }, payload);
    const index = packets.length;
    packets.push({ marker: index === 0, timestamp, sendOffsetMs: index * packetIntervalMs, payload });
  };
  // A key longer than the 16-bit duration holds (1.36 s on Opus's 48 kHz clock) reports that much:
  // §2.5.1.3's segments are not sent.
  for (let update = 1; update < updateCount; update++) push(Math.min(0xffff, update * intervalUnits), false);
  for (let i = 0; i < END_PACKET_COUNT; i++) push(totalDuration, true);
  return packets;
}
