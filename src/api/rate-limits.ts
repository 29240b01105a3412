/**
 * @fastify/rate-limit counting in the database the instances share (store/attempt-counts.ts), so
 * that the limits hold across instances. Clients see what the API answered before: 429 with
 * Retry-After and the XML errors body, and no X-RateLimit-* headers.
 */
import {
  type FastifyRateLimitStore,
  type FastifyRateLimitStoreCtor,
  normalizeIP,
  type RateLimitPluginOptions,
} from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AttemptCounts } from "../store/attempt-counts.js";
import { tooManyRequests } from "./http-errors.js";

/** A limiter made by createRateLimit: counts (or only reads, `{ increment: false }`) a request's key. */
export type RequestLimiter = ReturnType<FastifyInstance["createRateLimit"]>;

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
  return (request) => `${what}:${normalizeIP(request.ip)}`;
}

function sharedStore(counts: AttemptCounts): FastifyRateLimitStoreCtor {
  return class SharedAttemptStore implements FastifyRateLimitStore {
    incr(key: string, callback: StoreCallback, timeWindow: number): void {
      const now = new Date();
      counts.count(key, timeWindow, now).then(
        (window) => callback(null, { current: window.count, ttl: window.endsAt - now.getTime() }),
        (error: Error) => callback(error),
      );
    }

    /** What `{ increment: false }` calls: the count so far, unchanged. */
    read(key: string, callback: StoreCallback): void {
      const now = new Date();
      counts.read(key, now).then(
        (window) =>
          callback(null, window ? { current: window.count, ttl: window.endsAt - now.getTime() } : NONE),
        (error: Error) => callback(error),
      );
    }

    /** Every limit shares the one table; keys tell them apart (byClientAddress). */
    child(): FastifyRateLimitStore {
      return this;
    }
  };
}

type StoreCallback = (error: Error | null, result?: { current: number; ttl: number }) => void;

const NONE = { current: 0, ttl: 0 };
