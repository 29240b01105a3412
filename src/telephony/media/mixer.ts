/**
 * N-1 audio mixing of 20 ms frames of 8 kHz 16-bit linear audio: each participant hears everyone
 * but themselves, plus any sounds being played. Every tick the contributions are summed once into a
 * 32-bit accumulator and each participant's own part is taken out again, so a tick costs O(N), and
 * the result is saturated to 16 bits (a wrapped sum would turn a loud peak into a loud click of the
 * opposite sign). All buffers are allocated when a participant or sound is added, none per tick.
 */

/** Samples in one 20 ms frame at 8 kHz. */
export const FRAME_SAMPLES = 160;

/** Where a participant's audio comes from and goes to, one frame per tick. */
export interface MixerPort {
  /** Fills `out` with the next frame; false when there is nothing to contribute (silence), `out` is then ignored. */
  read(out: Int16Array): boolean;
  /**
   * Takes the frame this participant hears. The frame is the mixer's and may be shared with other
   * participants: use it (encode, copy) before returning and do not change it.
   */
  write(frame: Int16Array): void;
}

export interface MixerSlot {
  /** A muted participant's port is still read each tick (draining its jitter buffer) but not heard. */
  muted: boolean;
  /**
   * Level of the last frame read from the port in dBFS (RMS against full scale), muted or not, so a
   * muted talker can be noticed; -Infinity when the port had nothing to contribute.
   */
  readonly level: number;
  /** Leaves the mix; no-op when already removed. */
  remove(): void;
}

export interface MixerOptions {
  /**
   * Receives the full mix of every contribution plus the sounds played to everyone, each tick; the
   * frame is the one participants who say nothing hear: use it before returning, do not change it.
   */
  onMix?: (mix: Int16Array) => void;
}

export interface PlayOptions {
  /** Play only to this participant instead of to everyone. */
  to?: MixerSlot;
}

/** Mean square of a full-scale square wave, the 0 dBFS reference. */
const FULL_SCALE_SQUARE = 32768 * 32768;

class Slot implements MixerSlot {
  muted: boolean;
  removed = false;
  readonly input = new Int16Array(FRAME_SAMPLES);
  readonly output = new Int16Array(FRAME_SAMPLES);
  /** Sounds played to this participant alone, summed for the current tick. */
  readonly ownSounds = new Int32Array(FRAME_SAMPLES);
  hasOwnSounds = false;
  /** Whether `input` is in this tick's sum. */
  contributing = false;
  meanSquare = 0;

  constructor(
    /** Identifies the mixer the slot belongs to. */
    readonly owner: object,
    readonly port: MixerPort,
    muted: boolean,
    private readonly onRemove: () => void,
  ) {
    this.muted = muted;
  }

  get level(): number {
    return this.meanSquare === 0
      ? Number.NEGATIVE_INFINITY
      : 10 * Math.log10(this.meanSquare / FULL_SCALE_SQUARE);
  }

  remove(): void {
    if (this.removed) return;
    this.removed = true;
    this.onRemove();
  }
}

interface Sound {
  readonly samples: Int16Array;
  position: number;
  /** null: to everyone. */
  readonly to: Slot | null;
}

function saturate(value: number): number {
  return Math.min(32767, Math.max(-32768, value));
}

export class Mixer {
  readonly #slots: Slot[] = [];
  #removedSlots = 0;
  readonly #sounds: Sound[] = [];
  /** This tick's sum of all contributions and of the sounds played to everyone. */
  readonly #sum = new Int32Array(FRAME_SAMPLES);
  /** Everything: what a participant who contributes nothing hears, and what onMix gets. */
  readonly #mix = new Int16Array(FRAME_SAMPLES);
  readonly #onMix: ((mix: Int16Array) => void) | undefined;

  constructor(options: MixerOptions = {}) {
    this.#onMix = options.onMix;
  }

  /** Participants in the mix. */
  get size(): number {
    return this.#slots.length - this.#removedSlots;
  }

  addParticipant(port: MixerPort, options: { muted?: boolean } = {}): MixerSlot {
    const slot = new Slot(this, port, options.muted ?? false, this.#slotRemoved);
    this.#slots.push(slot);
    return slot;
  }

  /**
   * Mixes a one-shot sound into what everyone (or only `to`) hears, a frame per tick from the next
   * tick until it ends. Sounds are never read back as any participant's contribution.
   */
  play(sound: Int16Array, options: PlayOptions = {}): void {
    const { to } = options;
    if (to !== undefined && !(to instanceof Slot && to.owner === this)) {
      throw new Error("play: `to` is not a participant of this mixer");
    }
    if (sound.length === 0 || to?.removed) return;
    this.#sounds.push({ samples: sound, position: 0, to: to ?? null });
  }

  /** One 20 ms step: reads every participant, mixes, and writes each one what it hears. */
  tick(): void {
    this.#compact();
    // Participants added by a port during this tick join at the next one.
    const count = this.#slots.length;
    const sum = this.#sum;
    sum.fill(0);
    // Sounds first: a play() made by a port during the tick starts at the next one, like a new slot.
    this.#mixSounds();
    for (let s = 0; s < count; s++) {
      const slot = this.#slots[s] as Slot;
      if (slot.removed) continue;
      this.#read(slot);
    }
    const mix = this.#mix;
    for (let i = 0; i < FRAME_SAMPLES; i++) mix[i] = saturate(sum[i] as number);
    this.#onMix?.(mix);
    for (let s = 0; s < count; s++) {
      const slot = this.#slots[s] as Slot;
      if (slot.removed) continue;
      slot.port.write(this.#hears(slot));
    }
  }

  /** A removed slot is taken out of the list at the next tick. */
  readonly #slotRemoved = (): void => {
    this.#removedSlots++;
  };

  #read(slot: Slot): void {
    const input = slot.input;
    slot.contributing = false;
    slot.meanSquare = 0;
    if (!slot.port.read(input)) return;
    let squares = 0;
    if (slot.muted) {
      for (let i = 0; i < FRAME_SAMPLES; i++) {
        const sample = input[i] as number;
        squares += sample * sample;
      }
    } else {
      const sum = this.#sum;
      for (let i = 0; i < FRAME_SAMPLES; i++) {
        const sample = input[i] as number;
        squares += sample * sample;
        sum[i] = (sum[i] as number) + sample;
      }
      // A silent frame added nothing; leaving it out of the slot's own part lets the slot share the
      // full mix.
      slot.contributing = squares !== 0;
    }
    slot.meanSquare = squares / FRAME_SAMPLES;
  }

  /** Adds this tick's frame of every sound to the sum or to its one listener's sounds, and drops the sounds that ended. */
  #mixSounds(): void {
    const sounds = this.#sounds;
    let kept = 0;
    for (let n = 0; n < sounds.length; n++) {
      const sound = sounds[n] as Sound;
      const to = sound.to;
      if (to?.removed) continue;
      let target = this.#sum;
      if (to !== null) {
        target = to.ownSounds;
        if (!to.hasOwnSounds) {
          target.fill(0);
          to.hasOwnSounds = true;
        }
      }
      const samples = sound.samples;
      const end = Math.min(samples.length, sound.position + FRAME_SAMPLES);
      for (let i = 0, p = sound.position; p < end; i++, p++)
        target[i] = (target[i] as number) + (samples[p] as number);
      sound.position = end;
      if (end < samples.length) sounds[kept++] = sound;
    }
    sounds.length = kept;
  }

  /** The frame a participant hears this tick: everything but its own contribution. */
  #hears(slot: Slot): Int16Array {
    if (!slot.contributing && !slot.hasOwnSounds) return this.#mix;
    const { output, input, ownSounds } = slot;
    const sum = this.#sum;
    if (!slot.hasOwnSounds) {
      for (let i = 0; i < FRAME_SAMPLES; i++) output[i] = saturate((sum[i] as number) - (input[i] as number));
    } else if (slot.contributing) {
      for (let i = 0; i < FRAME_SAMPLES; i++) {
        output[i] = saturate((sum[i] as number) - (input[i] as number) + (ownSounds[i] as number));
      }
    } else {
      for (let i = 0; i < FRAME_SAMPLES; i++)
        output[i] = saturate((sum[i] as number) + (ownSounds[i] as number));
    }
    slot.hasOwnSounds = false;
    return output;
  }

  /** Takes removed slots out of the list, in place. */
  #compact(): void {
    if (this.#removedSlots === 0) return;
    const slots = this.#slots;
    let kept = 0;
    for (let s = 0; s < slots.length; s++) {
      const slot = slots[s] as Slot;
      if (!slot.removed) slots[kept++] = slot;
    }
    slots.length = kept;
    this.#removedSlots = 0;
  }
}
