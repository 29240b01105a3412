/** What every fuzzing target is given and counts. */
import type { SrtpSuite } from "../../src/telephony/media/rtp/srtp-suites.js";
import type { Call } from "./sip-peer.js";

export interface TargetStats {
  /** Inputs sent (messages, packets, requests). */
  inputs: number;
  /** Answers the service gave to them, where it answers (SIP responses, HTTP responses). */
  answers: number;
  /** Answers by kind (SIP status, HTTP status), for the report. */
  readonly statuses: Map<string, number>;
}

export interface ApiFixture {
  readonly baseUrl: string;
  /** The fuzzing user's credentials and resources; replaced when a fuzzed request changed them. */
  user: { id: number; auth: string };
  conferencePath: string;
  attendeePath: string;
  contactPath: string;
  webhookPath: string;
  /** Signs up a fresh user with a contact, a conference with an attendee, and a webhook. */
  renew(): Promise<void>;
}

export interface FuzzContext {
  readonly sipPort: number;
  readonly sipTlsPort: number;
  readonly accessNumber: string;
  /** The live call in the room that media inputs go to; redialled when it has ended. */
  victim(): Promise<Call>;
  /** The live SRTP call in the room under `suite` that its SRTP inputs go to; redialled when ended. */
  srtpVictim(suite: SrtpSuite): Promise<Call>;
  readonly api: ApiFixture;
  /** Records something the fuzzing found (a 5xx, say), which fails the run. */
  found(what: string): void;
  /** False once the target's time is up. */
  running(): boolean;
}

export interface Target {
  readonly name: string;
  run(context: FuzzContext, stats: TargetStats): Promise<void>;
}

export function count(stats: TargetStats, kind: string): void {
  stats.statuses.set(kind, (stats.statuses.get(kind) ?? 0) + 1);
}

/** Keeps a loop at `perSecond` iterations a second, sleeping in steps of at least 10 ms. */
export class Pacer {
  readonly #start = performance.now();
  #done = 0;

  constructor(readonly perSecond: number) {}

  async next(): Promise<void> {
    this.#done++;
    const aheadMs = (this.#done * 1000) / this.perSecond - (performance.now() - this.#start);
    if (aheadMs >= 10) await sleep(aheadMs);
    else if (this.#done % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
