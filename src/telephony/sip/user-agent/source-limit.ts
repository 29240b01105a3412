/**
 * How many requests each source address may send: a token bucket per address that may run into debt.
 * A source within its rate is served; past it, it is refused 503 with Retry-After (RFC 3261 section
 * 21.5.4) as long as the debt is under one burst, and dropped unanswered beyond that. Refusals are
 * bounded by the same rate because an answer to every datagram of a UDP flood would reflect the flood,
 * packet for packet, at whoever the flood's source address names. A sustained flood keeps its source
 * in debt, so it gets nothing but the refusals; once it stops, the bucket refills and it is served.
 */

import { sourceOf } from "../transport/source-address.js";

/** Requests per second a source may send, and how many at once. */
export interface SourceRate {
  readonly perSecond: number;
  readonly burst: number;
}

export type Admission = "serve" | "refuse" | "drop";

/** Sources remembered at once; past it the longest-known is forgotten (a spoofed flood's many sources). */
export const MAX_LIMITED_SOURCES = 16_384;

interface Bucket {
  tokens: number;
  at: number;
}

export class SourceLimit {
  /** What each source's requests got: served, refused 503, dropped. */
  readonly stats = { served: 0, refused: 0, dropped: 0 };
  readonly #rate: SourceRate;
  readonly #now: () => number;
  readonly #maxSources: number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    rate: SourceRate,
    now: () => number = performance.now.bind(performance),
    maxSources = MAX_LIMITED_SOURCES,
  ) {
    this.#rate = rate;
    this.#now = now;
    this.#maxSources = maxSources;
  }

  /** Takes one request from the address (its /64, for IPv6) and says what it gets. */
  take(address: string): Admission {
    const { perSecond, burst } = this.#rate;
    const now = this.#now();
    const source = sourceOf(address);
    let bucket = this.#buckets.get(source);
    if (bucket === undefined) {
      if (this.#buckets.size >= this.#maxSources)
        this.#buckets.delete(this.#buckets.keys().next().value as string);
      bucket = { tokens: burst, at: now };
      this.#buckets.set(source, bucket);
    } else {
      bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) * perSecond) / 1000);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      this.stats.served++;
      return "serve";
    }
    if (bucket.tokens - 1 >= -burst) {
      bucket.tokens -= 1;
      this.stats.refused++;
      return "refuse";
    }
    this.stats.dropped++;
    return "drop";
  }

  /** Whole seconds until the address is served again if it sends nothing meanwhile (Retry-After). */
  retryAfter(address: string): number {
    const tokens = this.#buckets.get(sourceOf(address))?.tokens ?? this.#rate.burst;
    return Math.max(1, Math.ceil((1 - tokens) / this.#rate.perSecond));
  }

  /** Sources remembered now. */
  get sources(): number {
    return this.#buckets.size;
  }
}
