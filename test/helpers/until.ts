export interface UntilOptions {
  /** Give up after this long. */
  timeoutMs?: number;
  /** What to add to the error when it times out (peers' logs, say). */
  detail?: () => string;
}

/**
 * Polls `probe` every 200 ms until it returns a value other than undefined, and resolves with it;
 * throws "timed out waiting for <what>" after the timeout (20 s unless told).
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  { timeoutMs = 20_000, detail }: UntilOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${detail ? `\n${detail()}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
