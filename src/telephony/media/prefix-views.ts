/**
 * Views of the first n samples of one buffer, for calls that take an array of exactly the length to
 * process (a resampler's input and output). Each length's view is made the first time it is asked
 * for and kept, so a stream of packets of one length or a few makes none per packet.
 */
export class PrefixViews {
  readonly #views: (Int16Array | undefined)[] = [];

  constructor(readonly buffer: Int16Array) {}

  /** The first `length` samples of the buffer. */
  of(length: number): Int16Array {
    let view = this.#views[length];
    if (view === undefined) {
      if (length > this.buffer.length) {
        throw new RangeError(`${length} samples do not fit in a buffer of ${this.buffer.length}`);
      }
      view = this.buffer.subarray(0, length);
      this.#views[length] = view;
    }
    return view;
  }
}
