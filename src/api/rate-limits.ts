/**
 * @fastify/rate-limit counting in the database the instances share (store/attempt-counts.ts), so
 * that the limits hold across instances. Clients see what the API answered before: 429 with
 * Retry-After and the XML errors body, and no X-RateLimit-* headers.
 */

import { isIP } from "node:net";
import {
  type FastifyRateLimitStore,
  type FastifyRateLimitStoreCtor,
  normalizeIP,
  type RateLimitPluginOptions,
} from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AttemptCounts, AttemptWindow } from "../store/attempt-counts.js";
import { tooManyRequests } from "./http-errors.js";

/** A limiter made by createRateLimit: counts (or only reads, `{ increment: false }`) a request's key. */
export type RequestLimiter = ReturnType<FastifyInstance["createRateLimit"]>;

/**
 * A key found over its limit is answered from memory for this long (never past its window's end), so
 * that a flood at a limit costs the database one count a second per instance, not one per request.
 */
export const OVER_LIMIT_MEMO_MS = 1_000;
/** Keys remembered over their limit at once; past it the memo starts again empty. */
export const OVER_LIMIT_MEMO_KEYS = 10_000;
/**
 * A key read under its limit is taken as still under it for this long when only read again (not
 * counted): an authenticated request's lockout check (every request) then costs the database one
 * read a second per address and instance. A count on this instance forgets it at once; one on another
 * instance is seen within this long.
 */
export const UNDER_LIMIT_MEMO_MS = 1_000;

const NO_HEADERS = { "x-ratelimit-limit": false, "x-ratelimit-remaining": false, "x-ratelimit-reset": false };

/**
 * The plugin's options: limits only for the routes that ask (`config.rateLimit`) and for limiters
 * made with createRateLimit, all counted in `counts`.
 */
export function sharedRateLimits(counts: AttemptCounts): RateLimitPluginOptions {
  return {
    global: false,
    store: sharedStore(counts),
    addHeaders: { ...NO_HEADERS, "retry-after": false },
    addHeadersOnExceeding: NO_HEADERS,
    // Thrown to the API's error handler, which writes the status, its headers and the XML body.
    errorResponseBuilder: (_request, context) => tooManyRequests(Math.ceil(context.ttl / 1000)),
  };
}

/**
 * Keys by the client address (an IPv6 address by its /64, what one subscriber gets), under `what`
 * is counted, so that each limit has keys of its own in the shared table.
 */
export function byClientAddress(what: string): (request: FastifyRequest) => string {
  return (request) => `${what}:${clientSource(request)}`;
}

/** Client addresses normalized at once; past it the memo starts again empty. */
const SOURCE_MEMO_LIMIT = 10_000;
/**
 * Addresses as clientSource gave them: normalizing an IPv6 address (an IPv4 one on a dual-stack
 * listener, ::ffff:a.b.c.d, too) parses it, some 7-10 µs, and every authenticated request asks.
 */
const sources = new Map<string, string>();

/** The client as limits count it: its address, an IPv6 address by its /64. */
export function clientSource(request: FastifyRequest): string {
  const address = clientAddress(request);
  let source = sources.get(address);
  if (source === undefined) {
    if (sources.size >= SOURCE_MEMO_LIMIT) sources.clear();
    source = normalizeIP(address);
    sources.set(address, source);
  }
  return source;
}

/**
 * The address X-Forwarded-For gives (from a trusted proxy), or the peer's when it gives no address:
 * a client that wrote anything else there ("x1", "x2"...) would otherwise get a new key each time.
 */
function clientAddress(request: FastifyRequest): string {
  return isIP(request.ip) === 0 ? (request.socket.remoteAddress ?? "") : request.ip;
}

function sharedStore(counts: AttemptCounts): FastifyRateLimitStoreCtor {
  /** Keys seen over their limit: when the memo of it ends, and when their window does. */
  const overLimit = new Map<string, { until: number; endsAt: number }>();
  const remembered = (key: string, max: number, now: number) => {
    const memo = overLimit.get(key);
    if (memo === undefined) return undefined;
    if (memo.until > now) return { current: max + 1, ttl: memo.endsAt - now };
    overLimit.delete(key);
    return undefined;
  };
  const remember = (key: string, max: number, window: AttemptWindow | undefined, now: number) => {
    if (window === undefined || window.count <= max) return;
    if (overLimit.size >= OVER_LIMIT_MEMO_KEYS) overLimit.clear();
    overLimit.set(key, { until: Math.min(now + OVER_LIMIT_MEMO_MS, window.endsAt), endsAt: window.endsAt });
  };
  /** Answers `callback` from the memo, or from `query` (the shared counts) remembering what it says. */
  const settle = (
    key: string,
    max: number,
    callback: StoreCallback,
    query: (now: Date) => Promise<AttemptWindow | undefined>,
  ) => {
    const now = new Date();
    const known = remembered(key, max, now.getTime());
    if (known !== undefined) {
      callback(null, known);
      return;
    }
    query(now).then(
      (window) => {
        remember(key, max, window, now.getTime());
        callback(null, window ? { current: window.count, ttl: window.endsAt - now.getTime() } : NONE);
      },
      (error: Error) => callback(error),
    );
  };

  /** Keys read under their limit: until when that is taken as still so, and what was read. */
  const underLimit = new Map<string, { until: number; current: number; endsAt: number }>();

  return class SharedAttemptStore implements FastifyRateLimitStore {
    incr(key: string, callback: StoreCallback, timeWindow: number, max: number): void {
      underLimit.delete(key);
      settle(key, max, callback, (now) => counts.count(key, timeWindow, now));
    }

    /** What `{ increment: false }` calls: the count so far, unchanged. */
    read(key: string, callback: StoreCallback, _timeWindow: number, max: number): void {
      const now = Date.now();
      const known = underLimit.get(key);
      if (known !== undefined && known.until > now) {
        callback(null, { current: known.current, ttl: Math.max(known.endsAt - now, 0) });
        return;
      }
      settle(key, max, callback, async (at) => {
        const window = await counts.read(key, at);
        if (window === undefined || window.count <= max) {
          if (underLimit.size >= OVER_LIMIT_MEMO_KEYS) underLimit.clear();
          const endsAt = window?.endsAt ?? 0;
          underLimit.set(key, {
            until: at.getTime() + UNDER_LIMIT_MEMO_MS,
            current: window?.count ?? 0,
            endsAt,
          });
        }
        return window;
      });
    }

    /** Every limit shares the one table; keys tell them apart (byClientAddress). */
    child(): FastifyRateLimitStore {
      return this;
    }
  };
}

type StoreCallback = (error: Error | null, result?: { current: number; ttl: number }) => void;

const NONE = { current: 0, ttl: 0 };
