/**
 * One RTP session's RTCP (RFC 3550 §6): what the remote's reports say about our stream (loss,
 * jitter, and the round trip from LSR and DLSR, §6.4.1), and the reports we write about theirs.
 */

import { performance } from "node:perf_hooks";
import {
  msToNtpShort,
  ntpMiddle32,
  ntpShortToMs,
  ntpTimestampFromUnixMs,
  type ReportBlock,
  type RtcpPacket,
  writeReceiverReport,
  writeSenderReport,
  writeSourceDescription,
} from "./rtcp-packet.js";
import type { ReceptionStatistics } from "./sequence.js";

/** What an SR says of our sending: the RTP timestamp now and the counts of our SSRC since it started. */
export interface SentCounts {
  rtpTimestamp: number;
  packetCount: number;
  octetCount: number;
}

/**
 * What the remote's last report block about our stream said (§6.4.1), kept when the stream moves to
 * another session (a handover), since the remote's next report may come after the stream ends.
 */
export interface RemoteReport {
  /** Of our packets, the fraction lost in the remote's last interval (0-1). */
  readonly fractionLost: number;
  /** Of our packets, those lost since the remote began receiving them (cumulative). */
  readonly packetsLost: number;
  /** The highest sequence number of ours it had received, extended with its count of wraps. */
  readonly extendedHighestSequence: number;
  readonly jitterMs: number;
  /** From LSR and DLSR, the last measured; null until a block refers to one of our SRs. */
  readonly roundTripMs: number | null;
}

export class RtcpReporter {
  #lastFractionLost: number | null = null;
  #remote: RemoteReport | null = null;
  /** LSR material: the middle 32 bits of the remote's last SR, its SSRC and when it arrived. */
  private remoteSenderReport = 0;
  private remoteSenderReportSsrc: number | null = null;
  private remoteSenderReportAt = 0;

  constructor(
    private readonly ssrc: number,
    private readonly cname: string,
    /** Told of a BYE from the remote (§6.6). */
    private readonly onBye: (reason: string | null) => void,
    /** The remote's last report about the stream, when it is carried on from another session. */
    remote: RemoteReport | null = null,
  ) {
    this.#remote = remote;
  }

  /** Fraction (0–1) of the remote's packets lost in our last report interval; null before our first report. */
  get lastFractionLost(): number | null {
    return this.#lastFractionLost;
  }

  /** The remote's view of our stream from its last report block about us; null until one arrives. */
  get remote(): RemoteReport | null {
    return this.#remote;
  }

  /**
   * Reads a received compound packet, `now` being when it arrived (the session's clock);
   * `clockRate` is our stream's RTP clock, whose units the remote's jitter about it is in.
   */
  receive(packets: readonly RtcpPacket[], now: number, clockRate: number): void {
    for (const packet of packets) {
      switch (packet.type) {
        case "SR":
          this.remoteSenderReport = ntpMiddle32({
            seconds: packet.sender.ntpSeconds,
            fraction: packet.sender.ntpFraction,
          });
          this.remoteSenderReportSsrc = packet.ssrc;
          this.remoteSenderReportAt = now;
          this.readReportsAboutUs(packet.reports, now, clockRate);
          break;
        case "RR":
          this.readReportsAboutUs(packet.reports, now, clockRate);
          break;
        case "BYE":
          if (!packet.ssrcs.includes(this.ssrc)) this.onBye(packet.reason);
          break;
        case "SDES":
          break;
      }
    }
  }

  /**
   * Writes the head of a compound packet (§6.1): an SR when we sent RTP since the last report
   * (`sent` not null), otherwise an RR, with a report block about the remote source once it is
   * valid (`remoteSsrc`), then SDES CNAME. Returns the length written.
   */
  write(
    out: Buffer,
    now: number,
    sent: SentCounts | null,
    remoteSsrc: number | null,
    reception: ReceptionStatistics | null,
  ): number {
    const reports = this.reportBlocks(now, remoteSsrc, reception);
    let offset: number;
    if (sent !== null) {
      const ntp = this.ntpNow(now);
      offset = writeSenderReport(
        {
          type: "SR",
          ssrc: this.ssrc,
          sender: {
            ntpSeconds: ntp.seconds,
            ntpFraction: ntp.fraction,
            rtpTimestamp: sent.rtpTimestamp,
            packetCount: sent.packetCount,
            octetCount: sent.octetCount,
          },
          reports,
        },
        out,
      );
    } else {
      offset = writeReceiverReport({ type: "RR", ssrc: this.ssrc, reports }, out);
    }
    return writeSourceDescription(
      { type: "SDES", chunks: [{ ssrc: this.ssrc, cname: this.cname }] },
      out,
      offset,
    );
  }

  private readReportsAboutUs(reports: readonly ReportBlock[], now: number, clockRate: number): void {
    for (const block of reports) {
      if (block.ssrc !== this.ssrc) continue;
      let roundTripMs = this.#remote?.roundTripMs ?? null;
      if (block.lastSenderReport !== 0) {
        // §6.4.1: round trip = arrival − LSR − DLSR, all in 1/65536 s of the NTP clock.
        const arrival = ntpMiddle32(this.ntpNow(now));
        const roundTrip = (arrival - block.lastSenderReport - block.delaySinceLastSenderReport) | 0;
        if (roundTrip >= 0) roundTripMs = ntpShortToMs(roundTrip);
      }
      // One object a report (every few seconds), not a packet.
      this.#remote = {
        fractionLost: block.fractionLost / 256,
        packetsLost: block.cumulativeLost,
        extendedHighestSequence: block.extendedHighestSequence,
        jitterMs: (block.jitter * 1000) / clockRate,
        roundTripMs,
      };
    }
  }

  private reportBlocks(
    now: number,
    remoteSsrc: number | null,
    reception: ReceptionStatistics | null,
  ): ReportBlock[] {
    if (reception === null || remoteSsrc === null || reception.received === 0) return [];
    const fractionLost = reception.takeFractionLost();
    this.#lastFractionLost = fractionLost / 256;
    const haveSenderReport = this.remoteSenderReportSsrc === remoteSsrc;
    return [
      {
        ssrc: remoteSsrc,
        fractionLost,
        cumulativeLost: reception.lost,
        extendedHighestSequence: reception.extendedHighestSequence,
        jitter: Math.floor(reception.jitter),
        lastSenderReport: haveSenderReport ? this.remoteSenderReport : 0,
        delaySinceLastSenderReport: haveSenderReport ? msToNtpShort(now - this.remoteSenderReportAt) : 0,
      },
    ];
  }

  private ntpNow(now: number) {
    return ntpTimestampFromUnixMs(performance.timeOrigin + now);
  }
}
