/** A clock for tests (the Clock of src/domain/clock.ts): time stands still until the test moves it. */
import type { Clock } from "../../src/domain/clock.js";

interface FakeTimer {
  readonly id: number;
  readonly due: number;
  readonly callback: () => void;
}

export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: FakeTimer[] = [];

  /** `start`: what now() says until the clock is moved (ms since the epoch). */
  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, delayMs: number): number {
    const id = this.#nextId++;
    this.#timers.push({ id, due: this.#now + Math.max(0, delayMs), callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((timer) => timer.id !== handle);
  }

  /** Timers armed and not yet fired nor cleared. */
  get pending(): number {
    return this.#timers.length;
  }

  /**
   * Moves time on by `ms`, firing the timers due meanwhile in order, those they arm included: for
   * code whose timers fire callbacks directly (the SIP layer's).
   */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (let next = this.#nextDue(end); next !== undefined; next = this.#nextDue(end)) this.#fire(next);
    this.#now = end;
  }

  /**
   * Moves time on by `ms` as advance does, but lets the promises and callbacks a timer sets going run
   * before the next is looked for: a timer that wakes an `await`, after which the code arms another
   * within `ms`, sees that one fire too. Resolves once time is at the end and all is quiet.
   */
  async pass(ms: number): Promise<void> {
    const end = this.#now + ms;
    await settle();
    for (let next = this.#nextDue(end); next !== undefined; next = this.#nextDue(end)) {
      this.#fire(next);
      await settle();
    }
    this.#now = end;
    await settle();
  }

  #nextDue(end: number): FakeTimer | undefined {
    let next: FakeTimer | undefined;
    for (const timer of this.#timers)
      if (timer.due <= end && (next === undefined || timer.due < next.due)) next = timer;
    return next;
  }

  #fire(timer: FakeTimer): void {
    this.#timers = this.#timers.filter((other) => other !== timer);
    this.#now = timer.due;
    timer.callback();
  }
}

/** Lets pending promises and the callbacks they queue run (a few turns of the event loop). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}
