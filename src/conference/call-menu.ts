/**
 * A call outside any room, in a voice menu: it hears prompts one after another (`call.play` queues
 * them), and the keys it presses are collected from its `digit` events, keys pressed during a prompt
 * included. Nothing is ticked: waits are timers on the clock given, and the call's end wakes every
 * wait at once.
 */
import type { Clock } from "../domain/clock.js";
import type { ConferenceCall, Sound } from "./ports.js";

/** The shortest wait for a key (a wait of nothing still lets a key already on its way arrive). */
const MIN_WAIT_MS = 20;
/**
 * Keys kept unread: more than any menu reads at once (a PIN is at most 12); keys pressed past it,
 * while nothing reads them, are dropped rather than kept for ever.
 */
export const MAX_UNREAD_KEYS = 32;

export class CallMenu {
  readonly #call: ConferenceCall;
  readonly #clock: Clock;
  #keys = "";
  #playing: Promise<void>[] = [];
  #keyWaiters: Array<() => void> = [];
  /** The key that ends the voice recording under way, if one is. */
  #stopKey: string | undefined;
  readonly #onDigit = (key: string) => this.#pressed(key);
  readonly #onOver = () => this.#wake();

  constructor(call: ConferenceCall, clock: Clock) {
    this.#call = call;
    this.#clock = clock;
    call.on("digit", this.#onDigit);
    call.on("ended", this.#onOver);
    call.on("failed", this.#onOver);
  }

  get call(): ConferenceCall {
    return this.#call;
  }

  /** Stops listening to the call's keys; the menu is done with it. */
  detach(): void {
    this.#call.off("digit", this.#onDigit);
    this.#call.off("ended", this.#onOver);
    this.#call.off("failed", this.#onOver);
    this.#wake();
  }

  /** Queues a sound after whatever is playing. */
  play(sound: Sound): void {
    this.#playing.push(this.#call.play(sound));
  }

  /** Drops what is playing and queued (a key press interrupts a prompt). */
  stopPlaying(): void {
    this.#call.stopPlaying();
  }

  /** Resolves once everything queued has been heard, stopped, or the call is over. */
  async drained(): Promise<void> {
    const playing = this.#playing;
    this.#playing = [];
    await Promise.all(playing);
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
    if (this.#over) return new Int16Array(0);
    const recording = this.#call.recordVoice(maxMs);
    this.#stopKey = stopKey;
    if (this.#keys.includes(stopKey)) this.#call.stopRecordingVoice();
    try {
      return await recording;
    } finally {
      this.#stopKey = undefined;
      this.#keys = this.#keys.replace(stopKey, "");
    }
  }

  get #over(): boolean {
    return this.#call.state === "ended" || this.#call.state === "failed";
  }

  #pressed(key: string): void {
    if (this.#keys.length < MAX_UNREAD_KEYS) this.#keys += key;
    if (key === this.#stopKey) this.#call.stopRecordingVoice();
    for (const wake of this.#keyWaiters.splice(0)) wake();
  }

  #waitForKey(timeoutMs: number): Promise<void> {
    if (this.#over) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = this.#clock.setTimeout(resolve, Math.max(MIN_WAIT_MS, timeoutMs));
      this.#keyWaiters.push(() => {
        this.#clock.clearTimeout(timer);
        resolve();
      });
    });
  }

  #wake(): void {
    for (const wake of this.#keyWaiters.splice(0)) wake();
  }
}
