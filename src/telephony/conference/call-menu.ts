/**
 * A call outside any room, in a voice menu: it hears queued prompts (silence in between), and the
 * keys it presses are collected. The
 * runtime's media clock calls `tick` every 20 ms while the menu runs.
 */
import type { Call } from "../call.js";

const FRAME_SAMPLES = 160;
const FRAME_MS = 20;

export class CallMenu {
  readonly #call: Call;
  readonly #queue: Int16Array[] = [];
  #position = 0;
  readonly #out = new Int16Array(FRAME_SAMPLES);
  readonly #in = new Int16Array(FRAME_SAMPLES);
  #keys = "";
  #keyWaiters: Array<() => void> = [];
  #drainWaiters: Array<() => void> = [];
  /** Audio heard from the caller while recording, else null. */
  #recording: Int16Array[] | null = null;
  readonly #onDigit = (key: string) => this.#pressed(key);

  constructor(call: Call) {
    this.#call = call;
    call.on("digit", this.#onDigit);
  }

  get call(): Call {
    return this.#call;
  }

  /** Stops listening to the call's keys; the menu is done with it. */
  detach(): void {
    this.#call.off("digit", this.#onDigit);
    this.#wake();
  }

  /** Queues a prompt after whatever is playing. */
  play(samples: Int16Array): void {
    this.#queue.push(samples);
  }

  /** Drops what is queued (a key press interrupts a prompt). */
  stopPlaying(): void {
    this.#queue.length = 0;
    this.#position = 0;
    for (const wake of this.#drainWaiters.splice(0)) wake();
  }

  /** Resolves once everything queued has been heard (or the call is over). */
  drained(): Promise<void> {
    if (this.#queue.length === 0 || this.#over) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /**
   * Keys pressed since the last read, up to and without `terminator` when given; resolves with what
   * there is after `timeoutMs` of waiting for more (the wait restarts with each key).
   */
  async collect(options: { terminator?: string; maxKeys: number; timeoutMs: number }): Promise<string> {
    for (;;) {
      const end = options.terminator === undefined ? -1 : this.#keys.indexOf(options.terminator);
      if (end >= 0) {
        const keys = this.#keys.slice(0, end);
        this.#keys = this.#keys.slice(end + 1);
        return keys;
      }
      if (this.#keys.length >= options.maxKeys || this.#over) {
        const keys = this.#keys.slice(0, options.maxKeys);
        this.#keys = this.#keys.slice(keys.length);
        return keys;
      }
      const before = this.#keys.length;
      await this.#waitForKey(options.timeoutMs);
      if (this.#keys.length === before) {
        const keys = this.#keys;
        this.#keys = "";
        return keys;
      }
    }
  }

  /** Records what the caller says until `stopKey` or `maxMs`; returns the samples. */
  async record(maxMs: number, stopKey: string): Promise<Int16Array> {
    this.#recording = [];
    const deadline = Date.now() + maxMs;
    while (!this.#over && Date.now() < deadline && !this.#keys.includes(stopKey)) {
      await this.#waitForKey(deadline - Date.now());
    }
    this.#keys = this.#keys.replace(stopKey, "");
    const frames = this.#recording;
    this.#recording = null;
    const samples = new Int16Array(frames.length * FRAME_SAMPLES);
    for (const [index, frame] of frames.entries()) samples.set(frame, index * FRAME_SAMPLES);
    return samples;
  }

  /** One 20 ms step: the next prompt frame out, the caller's frame in (for tones and recording). */
  tick(): void {
    if (this.#over) {
      this.#wake();
      return;
    }
    const playing = this.#queue[0];
    if (playing === undefined) {
      this.#out.fill(0);
    } else {
      const take = Math.min(FRAME_SAMPLES, playing.length - this.#position);
      this.#out.set(playing.subarray(this.#position, this.#position + take));
      this.#out.fill(0, take);
      this.#position += take;
      if (this.#position >= playing.length) {
        this.#queue.shift();
        this.#position = 0;
        if (this.#queue.length === 0) for (const wake of this.#drainWaiters.splice(0)) wake();
      }
    }
    this.#call.sendAudio(this.#out);
    const heard = this.#call.readAudio(this.#in) === "frame";
    this.#recording?.push(heard ? this.#in.slice() : new Int16Array(FRAME_SAMPLES));
  }

  get #over(): boolean {
    return this.#call.state === "ended" || this.#call.state === "failed";
  }

  #pressed(key: string): void {
    this.#keys += key;
    const waiters = this.#keyWaiters.splice(0);
    for (const wake of waiters) wake();
  }

  #waitForKey(timeoutMs: number): Promise<void> {
    if (this.#over) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.max(FRAME_MS, timeoutMs));
      this.#keyWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  #wake(): void {
    for (const wake of this.#keyWaiters.splice(0)) wake();
    for (const wake of this.#drainWaiters.splice(0)) wake();
  }
}
