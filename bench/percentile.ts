/** The value at `share` (0 to 1) of sorted figures, nearest rank rounded down; NaN when there are none. */
export function percentile(sorted: ArrayLike<number>, share: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] ?? Number.NaN;
}
