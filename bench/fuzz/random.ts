/**
 * The fuzzer's seeded randomness: sfc32 (Chris Doty-Humphrey's Small Fast Counter), small and good
 * enough for choosing mutations, so that a run is replayed exactly from its seed. Each target draws
 * from its own generator (the seed and the target's name), so one target's inputs do not depend on
 * how many another sent.
 */
export class Random {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number, stream = "") {
    // The seed and the stream name, mixed into the four words (a 32-bit FNV-1a of the name).
    let hash = 0x811c9dc5;
    for (let i = 0; i < stream.length; i++) hash = Math.imul(hash ^ stream.charCodeAt(i), 0x01000193);
    this.#a = seed >>> 0;
    this.#b = hash >>> 0;
    this.#c = 0x9e3779b9;
    this.#d = 1;
    for (let i = 0; i < 15; i++) this.uint32();
  }

  /** 32 random bits as an unsigned integer. */
  uint32(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return t >>> 0;
  }

  /** An integer in [0, n). */
  below(n: number): number {
    return Math.floor((this.uint32() / 0x1_0000_0000) * n);
  }

  /** An integer in [min, max]. */
  between(min: number, max: number): number {
    return min + this.below(max - min + 1);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.uint32() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.below(items.length)] as T;
  }

  bytes(length: number): Buffer {
    const out = Buffer.allocUnsafe(length);
    for (let i = 0; i < length; i++) out[i] = this.uint32() & 0xff;
    return out;
  }

  /** A length skewed towards small values, sometimes large: 0..max. */
  length(max: number): number {
    return this.chance(0.8) ? this.below(Math.min(max, 64) + 1) : this.below(max + 1);
  }
}
