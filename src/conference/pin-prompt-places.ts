/**
 * The places at the PIN prompt: each caller holds one from its call's arrival until it is in a room
 * or gone. There are only so many in all, and a stranger's source (an address not configured as a
 * trunk or edge) may hold only a few of them, so that one scanner cannot fill the prompt for
 * everybody. A place is given back once, whichever way the call leaves.
 */

/** Where a caller's call came from, as the PIN prompt counts it. */
export interface CallerSource {
  /** Its sender's address as limits count it (an IPv4 address, or an IPv6 /64). */
  readonly source: string;
  /** Whether that is a configured peer (a trunk, an edge), whose callers are many people. */
  readonly peer: boolean;
}

export type PlaceRefusal = "prompt-full" | "source-full";

export class PinPromptPlaces {
  readonly #total: number;
  readonly #perSource: number;
  #taken = 0;
  readonly #bySource = new Map<string, number>();

  constructor(limits: { readonly total: number; readonly perSource: number }) {
    this.#total = limits.total;
    this.#perSource = limits.perSource;
  }

  /** Places held now, in all. */
  get taken(): number {
    return this.#taken;
  }

  /** Places held now by one source. */
  heldBy(source: string): number {
    return this.#bySource.get(source) ?? 0;
  }

  /** Takes a place for a caller: the function that gives it back (once), or why there is none. */
  take(caller: CallerSource): (() => void) | PlaceRefusal {
    if (this.#taken >= this.#total) return "prompt-full";
    const held = this.heldBy(caller.source);
    if (!caller.peer && held >= this.#perSource) return "source-full";
    this.#taken++;
    this.#bySource.set(caller.source, held + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#taken--;
      const left = this.heldBy(caller.source) - 1;
      if (left === 0) this.#bySource.delete(caller.source);
      else this.#bySource.set(caller.source, left);
    };
  }
}
