/**
 * Counts events per key (a client address, a caller) in a fixed window: failed logins at the API,
 * wrong PINs at dial-in. In-memory per instance: with N instances a key gets at most N times the
 * limit, which still stops guessing at scale.
 */
export class Throttle {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Seconds until the address may try again, or 0 when it is under the limit. */
  retryAfter(address: string, now = Date.now()): number {
    const window = this.windows.get(address);
    if (!window || window.resetAt <= now) return 0;
    return window.count >= this.limit ? Math.ceil((window.resetAt - now) / 1000) : 0;
  }

  record(address: string, now = Date.now()): void {
    const window = this.windows.get(address);
    if (!window || window.resetAt <= now) {
      this.sweep(now);
      this.windows.set(address, { count: 1, resetAt: now + this.windowMs });
    } else window.count++;
  }

  /** Drops expired windows so the map does not grow with every address ever seen. */
  private sweep(now: number): void {
    if (this.windows.size < 10_000) return;
    for (const [address, window] of this.windows) if (window.resetAt <= now) this.windows.delete(address);
  }
}
