/**
 * A room's store writes, carried out one after another in the order the calls produced them. A write
 * that fails is logged and the next goes on.
 */
export class OrderedWrites {
  #writes: Promise<unknown> = Promise.resolve();
  #stateWrites = 0;
  readonly #onError: (error: unknown) => void;

  constructor(onError: (error: unknown) => void) {
    this.#onError = onError;
  }

  /**
   * Counts the room's own changes of state as they are queued: a refresh that read the store while
   * one was on its way would read it stale, and leaves the room's controls as they are.
   */
  get stateWrites(): number {
    return this.#stateWrites;
  }

  /** A change of the room's state. */
  queue(write: () => Promise<unknown>): void {
    this.#stateWrites++;
    this.append(write);
  }

  /** A write that changes no state (an event), after those queued before it. */
  append(write: () => Promise<unknown>): void {
    this.#writes = this.#writes.then(write).catch(this.#onError);
  }

  /** Resolves once every write queued so far is done. */
  async settled(): Promise<void> {
    await this.#writes;
  }
}
