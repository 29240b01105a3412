/**
 * Per-source reception statistics for RTCP receiver reports (RFC 3550 §6.4.1): sequence number
 * validation and extension (Appendix A.1), expected and lost packet counts (A.3) and the interarrival
 * jitter estimate (A.8).
 */

/** A.1: packets in sequence required before a source is declared valid. */
const MIN_SEQUENTIAL = 2;
/** A.1: largest forward jump treated as loss rather than as a restart. */
const MAX_DROPOUT = 3000;
/** A.1: largest backward jump treated as a late (misordered) packet. */
const MAX_MISORDER = 100;
const RTP_SEQ_MOD = 0x10000;

/** §6.4.1: cumulative number of packets lost is a signed 24-bit field. */
const MAX_CUMULATIVE_LOST = 0x7fffff;
const MIN_CUMULATIVE_LOST = -0x800000;

export class ReceptionStatistics {
  /** Highest sequence number seen. */
  private maxSeq: number;
  /** Shifted count of sequence number cycles (multiples of 2^16). */
  private cycles = 0;
  private baseSeq = 0;
  /** Last 'bad' sequence number + 1: a jump confirmed by the next packet means the source restarted. */
  private badSeq = RTP_SEQ_MOD + 1;
  private probation = MIN_SEQUENTIAL;
  private receivedCount = 0;
  private misorderedCount = 0;
  private expectedPrior = 0;
  private receivedPrior = 0;
  /** Relative transit time of the previous packet, in timestamp units; null before the first. */
  private transit: number | null = null;
  private jitterEstimate = 0;
  /** The clock of the timestamps measured, whose units the estimate is in; 0 before the first. */
  private jitterClockRate = 0;

  /** A.1: a new source starts on probation with the sequence number of its first packet. */
  constructor(firstSequenceNumber: number) {
    this.initSequence(firstSequenceNumber);
    this.maxSeq = (firstSequenceNumber - 1) & 0xffff;
  }

  /**
   * Records a received packet that arrived at `arrivalMs` (any clock in milliseconds; only differences
   * matter), its timestamp on a clock of `clockRate` (its payload format's). Returns false while the
   * source is on probation or when the packet is judged invalid (A.1), in which case it is not
   * counted. With `measureJitter` false the packet is counted but left out of the jitter estimate:
   * RFC 4733 event packets all carry their event's start timestamp, which reads as jitter.
   */
  onPacket(
    sequenceNumber: number,
    rtpTimestamp: number,
    arrivalMs: number,
    clockRate: number,
    measureJitter = true,
  ): boolean {
    if (!this.updateSequence(sequenceNumber & 0xffff)) return false;
    if (measureJitter) this.updateJitter(rtpTimestamp, arrivalMs, clockRate);
    return true;
  }

  get received(): number {
    return this.receivedCount;
  }

  /** Packets that arrived after a packet with a higher sequence number. */
  get misordered(): number {
    return this.misorderedCount;
  }

  /** A.3: the extended highest sequence number received (32 bits: cycles and sequence number). */
  get extendedHighestSequence(): number {
    return this.cycles + this.maxSeq;
  }

  /** A.3: packets expected since the source became valid. */
  get expected(): number {
    return this.extendedHighestSequence - this.baseSeq + 1;
  }

  /** A.3: cumulative packets lost, clamped to the report block's signed 24-bit field; duplicates make it negative. */
  get lost(): number {
    return Math.min(MAX_CUMULATIVE_LOST, Math.max(MIN_CUMULATIVE_LOST, this.expected - this.receivedCount));
  }

  /** A.8: interarrival jitter in timestamp units, before truncation to the report block's integer. */
  get jitter(): number {
    return this.jitterEstimate;
  }

  /** The interarrival jitter in milliseconds. */
  get jitterMs(): number {
    return this.jitterClockRate === 0 ? 0 : (this.jitterEstimate * 1000) / this.jitterClockRate;
  }

  /**
   * A.3: the fraction lost since the previous call, as the report block's 8-bit fixed point number
   * (lost / expected × 256); call once per receiver report, as it starts a new interval.
   */
  takeFractionLost(): number {
    const expected = this.expected;
    const expectedInterval = expected - this.expectedPrior;
    this.expectedPrior = expected;
    const receivedInterval = this.receivedCount - this.receivedPrior;
    this.receivedPrior = this.receivedCount;
    const lostInterval = expectedInterval - receivedInterval;
    if (expectedInterval === 0 || lostInterval <= 0) return 0;
    return Math.floor((lostInterval * 256) / expectedInterval);
  }

  /** A.1 init_seq(). */
  private initSequence(seq: number): void {
    this.baseSeq = seq;
    this.maxSeq = seq;
    this.badSeq = RTP_SEQ_MOD + 1;
    this.cycles = 0;
    this.receivedCount = 0;
    this.receivedPrior = 0;
    this.expectedPrior = 0;
  }

  /** A.1 update_seq(). */
  private updateSequence(seq: number): boolean {
    const udelta = (seq - this.maxSeq) & 0xffff;
    if (this.probation > 0) {
      // Source is not valid until MIN_SEQUENTIAL packets with sequential numbers have been received.
      if (seq === ((this.maxSeq + 1) & 0xffff)) {
        this.probation--;
        this.maxSeq = seq;
        if (this.probation === 0) {
          this.initSequence(seq);
          this.receivedCount++;
          return true;
        }
      } else {
        this.probation = MIN_SEQUENTIAL - 1;
        this.maxSeq = seq;
      }
      return false;
    }
    if (udelta < MAX_DROPOUT) {
      // In order, with permissible gap; a smaller number means the 16-bit space wrapped.
      if (seq < this.maxSeq) this.cycles += RTP_SEQ_MOD;
      this.maxSeq = seq;
    } else if (udelta <= RTP_SEQ_MOD - MAX_MISORDER) {
      // The sequence number made a very large jump.
      if (seq !== this.badSeq) {
        this.badSeq = (seq + 1) & 0xffff;
        return false;
      }
      // Two sequential packets: assume the other side restarted without telling us, so resync.
      this.initSequence(seq);
    } else {
      // A packet from behind the highest one (reordered or a duplicate): counted, the highest stays.
      this.misorderedCount++;
    }
    this.receivedCount++;
    return true;
  }

  /**
   * A.8: J(i) = J(i-1) + (|D(i-1,i)| - J(i-1)) / 16, with 32-bit wrapping transit differences. A packet
   * on another clock (the far end switched to a format with another rate) has no difference with the
   * one before; the estimate carries on in the new clock's units.
   */
  private updateJitter(rtpTimestamp: number, arrivalMs: number, clockRate: number): void {
    if (clockRate !== this.jitterClockRate) {
      if (this.jitterClockRate !== 0) this.jitterEstimate *= clockRate / this.jitterClockRate;
      this.jitterClockRate = clockRate;
      this.transit = null;
    }
    const transit = ((arrivalMs * clockRate) / 1000 - rtpTimestamp) | 0;
    if (this.transit !== null) {
      const difference = Math.abs((transit - this.transit) | 0);
      this.jitterEstimate += (difference - this.jitterEstimate) / 16;
    }
    this.transit = transit;
  }
}
