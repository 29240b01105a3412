/**
 * The places at the PIN prompt: each caller holds one from its call's arrival until it is in a room
 * or gone. A stranger's source (an address not configured as a trunk or edge) may hold only a few,
 * so that one scanner cannot fill the prompt for everybody. The total bounds the callers answered
 * (hearing prompts, typing keys): a call answered but never ACKed (a scanner's, 64*T1 long) costs
 * no prompt, so many sources' unACKed INVITEs leave the prompt open to callers. A place is given
 * back once, whichever way the call leaves.
 */

/** Where a caller's call came from, as the PIN prompt counts it. */
export interface CallerSource {
  /** Its sender's address as limits count it (an IPv4 address, or an IPv6 /64). */
  readonly source: string;
  /** Whether that is a configured peer (a trunk, an edge), whose callers are many people. */
  readonly peer: boolean;
}

export type PlaceRefusal = "prompt-full" | "source-full";

/** One caller's place: it counts towards the total once answered; given back once. */
export interface PinPromptPlace {
  answered(): void;
  giveBack(): void;
}

export class PinPromptPlaces {
  readonly #total: number;
  readonly #perSource: number;
  #held = 0;
  #answered = 0;
  readonly #bySource = new Map<string, number>();

  constructor(limits: { readonly total: number; readonly perSource: number }) {
    this.#total = limits.total;
    this.#perSource = limits.perSource;
  }

  /** Places held now, answered or not. */
  get held(): number {
    return this.#held;
  }

  /** Places held now by callers answered (at the prompt proper). */
  get answered(): number {
    return this.#answered;
  }

  /** Places held now by one source. */
  #heldBy(source: string): number {
    return this.#bySource.get(source) ?? 0;
  }

  /** Takes a place for a caller, or says why there is none. */
  take(caller: CallerSource): PinPromptPlace | PlaceRefusal {
    if (this.#answered >= this.#total) return "prompt-full";
    const held = this.#heldBy(caller.source);
    if (!caller.peer && held >= this.#perSource) return "source-full";
    this.#held++;
    this.#bySource.set(caller.source, held + 1);
    let state: "arrived" | "answered" | "given-back" = "arrived";
    return {
      answered: () => {
        if (state !== "arrived") return;
        state = "answered";
        this.#answered++;
      },
      giveBack: () => {
        if (state === "given-back") return;
        if (state === "answered") this.#answered--;
        state = "given-back";
        this.#held--;
        const left = this.#heldBy(caller.source) - 1;
        if (left === 0) this.#bySource.delete(caller.source);
        else this.#bySource.set(caller.source, left);
      },
    };
  }
}
