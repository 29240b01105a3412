/**
 * Conference mixing of 20 ms frames of 16-bit linear audio at one room rate (8 or 16 kHz), as the
 * big engines do it (Asterisk's bridge_softmix, FreeSWITCH's conference): every tick each port is
 * read and its level measured, and only the few loudest participants above a speech threshold, the
 * talkers, are mixed. Each talker hears the sum less itself (N-1); everyone else hears one shared
 * frame, the same array for all of them, and is told so, so that the frame can be encoded once per
 * codec rather than once per participant. The sum is taken in a 32-bit accumulator and saturated to
 * 16 bits (a wrapped sum would turn a loud peak into a loud click of the opposite sign). A tick costs
 * a read of every port and O(talkers) frame sums; all buffers are allocated when a participant or
 * sound is added or the rate changes, none per tick.
 */

import type { AudioRate } from "./codec/audio-codec.js";
import { createResampler } from "./resampler.js";

/** Samples in one 20 ms frame at `rate`. */
export function frameSamples(rate: AudioRate): number {
  return rate / 50;
}

/**
 * A frame at or above this level (dBFS) is speech and its participant may be mixed. Telephone speech
 * sits around -20 to -30 dBFS, and its soft onsets, unvoiced consonants and tails down to about
 * -50; line and comfort noise lie below -60 (A-law's idle ±8 codes are -72 dBFS). The talk
 * detector's -40 dBFS decides when to tell that someone talks; mixing from -55 does not cut quiet
 * speech, and leaves a room of open lines that say nothing out of the sum.
 */
export const SPEECH_THRESHOLD_DB = -55;

/**
 * Quiet ticks (200 ms) a talker keeps its place after its last frame of speech, unless a louder
 * newcomer needs it: pauses between words and the tails of speech are not cut, and a participant
 * whose codec keeps state (G.722, Opus) is not switched between its own and the shared frame with
 * every syllable.
 */
export const TALKER_HANGOVER_TICKS = 10;

/** Talkers mixed at once unless the mixer is told otherwise. */
const DEFAULT_TALKERS = 3;

/** Mean square of a full-scale square wave, the 0 dBFS reference. */
const FULL_SCALE_SQUARE = 32768 * 32768;
const SPEECH_MEAN_SQUARE = FULL_SCALE_SQUARE * 10 ** (SPEECH_THRESHOLD_DB / 10);
/** A newcomer takes a talker's place only when this much louder in power: 6 dB. */
const INCUMBENT_ADVANTAGE = 4;

/** Where a participant's audio comes from and goes to, one frame per tick at the mixer's rate. */
export interface MixerPort {
  /**
   * Fills `out` (one frame at the mixer's current rate) with the next frame; false when there is
   * nothing to contribute (silence), `out` is then ignored.
   */
  read(out: Int16Array): boolean;
  /**
   * Takes the frame this participant hears, one frame at the mixer's current rate. The frame is the
   * mixer's: use it (encode, copy) before returning and do not change it. `shared`: it is the one
   * frame every participant that is not a talker and has no sound of its own hears this tick (the
   * same array for all of them, and what onMix got), so what is made of it can be made once.
   */
  write(frame: Int16Array, shared: boolean): void;
}

export interface MixerSlot {
  /** A muted participant's port is still read each tick (draining its jitter buffer) but not heard. */
  muted: boolean;
  /**
   * Level of the last frame read from the port in dBFS (RMS against full scale), muted or not, so a
   * muted talker can be noticed; -Infinity when the port had nothing to contribute.
   */
  readonly level: number;
  /** Whether the participant was mixed in the last tick (and heard a frame of its own). */
  readonly talker: boolean;
  /** Leaves the mix; no-op when already removed. */
  remove(): void;
}

export interface MixerOptions {
  /** The rate the mixer starts at; 8000 unless given. */
  sampleRate?: AudioRate;
  /** The most participants mixed at once (a whole number, at least 1, or Infinity); 3 unless given. */
  talkers?: number;
  /**
   * Receives the full mix each tick, the talkers and the sounds played to everyone (what a recording
   * hears): the shared frame, so use it before returning and do not change it.
   */
  onMix?: (mix: Int16Array) => void;
}

export interface PlayOptions {
  /** Play only to this participant instead of to everyone. */
  to?: MixerSlot;
}

class Slot implements MixerSlot {
  muted: boolean;
  removed = false;
  input: Int16Array;
  output: Int16Array;
  /** Sounds played to this participant alone, summed for the current tick. */
  ownSounds: Int32Array;
  hasOwnSounds = false;
  /** Whether the port gave a frame this tick (`input` holds it). */
  hasFrame = false;
  talker = false;
  /** Ticks since the last frame of speech, counted while a talker. */
  quietTicks = 0;
  meanSquare = 0;

  constructor(
    /** Identifies the mixer the slot belongs to. */
    readonly owner: object,
    readonly port: MixerPort,
    muted: boolean,
    samples: number,
    private readonly onRemove: () => void,
  ) {
    this.muted = muted;
    this.input = new Int16Array(samples);
    this.output = new Int16Array(samples);
    this.ownSounds = new Int32Array(samples);
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

  /** New buffers for frames of `samples`; what they held belonged to the old rate. */
  resize(samples: number): void {
    this.input = new Int16Array(samples);
    this.output = new Int16Array(samples);
    this.ownSounds = new Int32Array(samples);
    this.hasOwnSounds = false;
  }

  /** Whether this slot should be mixed rather than `other`, both wanting a place. */
  outranks(other: Slot): boolean {
    // A talker keeps its place against anyone less than 6 dB louder, so that talkers of about one
    // level do not swap places tick by tick (cutting each other's words into 20 ms pieces, and
    // switching G.722 and Opus listeners between encoders); on equal footing the one mixed stays.
    const mine = this.talker ? this.meanSquare * INCUMBENT_ADVANTAGE : this.meanSquare;
    const theirs = other.talker ? other.meanSquare * INCUMBENT_ADVANTAGE : other.meanSquare;
    return mine > theirs || (mine === theirs && this.talker && !other.talker);
  }
}

interface Sound {
  samples: Int16Array;
  position: number;
  /** null: to everyone. */
  readonly to: Slot | null;
}

function saturate(value: number): number {
  return Math.min(32767, Math.max(-32768, value));
}

/** Throws a RangeError unless `talkers` is a count of talkers to mix: a whole number from 1, or Infinity. */
export function checkTalkers(talkers: number): void {
  if (!(talkers >= 1 && (Number.isInteger(talkers) || talkers === Number.POSITIVE_INFINITY))) {
    throw new RangeError(`talkers must be a whole number from 1, or Infinity, not ${talkers}`);
  }
}

function checkRate(rate: AudioRate): void {
  if (rate !== 8000 && rate !== 16000) throw new RangeError(`a mixer runs at 8000 or 16000 Hz, not ${rate}`);
}

/**
 * What is left of `samples` from `position` on, at `to` instead of `from`, starting at the same
 * instant: the resampler is fed from one frame before `position` (when there is one), so its filter
 * is already full of the sound where the rest begins, and with silence after the end to flush the
 * filter's delay, which is then dropped.
 */
function resampleRest(samples: Int16Array, position: number, from: AudioRate, to: AudioRate): Int16Array {
  const resampler = createResampler(from, to);
  const lead = Math.min(position, frameSamples(from));
  const rest = Math.ceil(((samples.length - position) * to) / from);
  const skip = (lead * to) / from + resampler.delay;
  // Whole steps of the decimation factor when halving (an even count), any count when doubling.
  const input = new Int16Array(Math.ceil(((skip + rest) * from) / to));
  input.set(samples.subarray(position - lead));
  const output = new Int16Array((input.length * to) / from);
  resampler.process(input, output);
  return output.slice(skip, skip + rest);
}

export class Mixer {
  readonly #slots: Slot[] = [];
  #removedSlots = 0;
  readonly #sounds: Sound[] = [];
  readonly #talkers: number;
  /**
   * The slots that want to be mixed this tick, the chosen talkers first: `#talkerCount` of them.
   * Grows to the most that ever wanted at once, and is emptied when slots leave.
   */
  readonly #candidates: Slot[] = [];
  #talkerCount = 0;
  #sharedFrames = 0;
  #ownFrames = 0;
  #sampleRate: AudioRate;
  #samples: number;
  /** This tick's sum of the talkers and of the sounds played to everyone. */
  #sum: Int32Array;
  /** The sum saturated: the shared frame, and what onMix gets. */
  #mix: Int16Array;
  readonly #onMix: ((mix: Int16Array) => void) | undefined;
  /** A tick is running: the rate cannot change under it. */
  #ticking = false;

  constructor(options: MixerOptions = {}) {
    const rate = options.sampleRate ?? 8000;
    checkRate(rate);
    const talkers = options.talkers ?? DEFAULT_TALKERS;
    checkTalkers(talkers);
    this.#talkers = talkers;
    this.#sampleRate = rate;
    this.#samples = frameSamples(rate);
    this.#sum = new Int32Array(this.#samples);
    this.#mix = new Int16Array(this.#samples);
    this.#onMix = options.onMix;
  }

  /** Participants in the mix. */
  get size(): number {
    return this.#slots.length - this.#removedSlots;
  }

  get sampleRate(): AudioRate {
    return this.#sampleRate;
  }

  /** Participants mixed in the last tick (each heard a frame of its own). */
  get talkerCount(): number {
    return this.#talkerCount;
  }

  /** Frames written with `shared` true since the mixer was made. */
  get sharedFramesWritten(): number {
    return this.#sharedFrames;
  }

  /** Frames written with `shared` false (a talker's, or a listener's with sounds of its own) since the mixer was made. */
  get ownFramesWritten(): number {
    return this.#ownFrames;
  }

  /**
   * Mixes at `rate` from the next tick on: every buffer is made again for the new frame size, and the
   * sounds still playing go on from where they were, resampled, at the same pitch. Ports read and
   * write frames of the new size from then on. Not allowed from a port during a tick.
   */
  setSampleRate(rate: AudioRate): void {
    checkRate(rate);
    if (this.#ticking) throw new Error("setSampleRate: not during a tick");
    const from = this.#sampleRate;
    if (rate === from) return;
    this.#sampleRate = rate;
    this.#samples = frameSamples(rate);
    this.#sum = new Int32Array(this.#samples);
    this.#mix = new Int16Array(this.#samples);
    for (const slot of this.#slots) slot.resize(this.#samples);
    for (const sound of this.#sounds) {
      sound.samples = resampleRest(sound.samples, sound.position, from, rate);
      sound.position = 0;
    }
  }

  addParticipant(port: MixerPort, options: { muted?: boolean } = {}): MixerSlot {
    const slot = new Slot(this, port, options.muted ?? false, this.#samples, this.#slotRemoved);
    this.#slots.push(slot);
    return slot;
  }

  /**
   * Mixes a one-shot sound, at the mixer's rate, into what everyone (or only `to`) hears, a frame per
   * tick from the next tick until it ends. Sounds are never read back as any participant's
   * contribution.
   */
  play(sound: Int16Array, options: PlayOptions = {}): void {
    const { to } = options;
    if (to !== undefined && !(to instanceof Slot && to.owner === this)) {
      throw new Error("play: `to` is not a participant of this mixer");
    }
    if (sound.length === 0 || to?.removed) return;
    this.#sounds.push({ samples: sound, position: 0, to: to ?? null });
  }

  /** One 20 ms step: reads every participant, chooses the talkers, mixes, and writes each one what it hears. */
  tick(): void {
    this.#ticking = true;
    try {
      this.#compact();
      // Participants added by a port during this tick join at the next one.
      const count = this.#slots.length;
      const sum = this.#sum;
      sum.fill(0);
      // Sounds first: a play() made by a port during the tick starts at the next one, like a new slot.
      this.#mixSounds();
      for (let s = 0; s < count; s++) {
        const slot = this.#slots[s] as Slot;
        if (slot.removed) {
          // Removed by another port earlier in this tick: not read, so not heard.
          slot.hasFrame = false;
          slot.meanSquare = 0;
        } else {
          this.#read(slot);
        }
      }
      this.#chooseTalkers(count);
      const samples = this.#samples;
      for (let t = 0; t < this.#talkerCount; t++) {
        const talker = this.#candidates[t] as Slot;
        if (!talker.hasFrame) continue;
        const input = talker.input;
        for (let i = 0; i < samples; i++) sum[i] = (sum[i] as number) + (input[i] as number);
      }
      const mix = this.#mix;
      for (let i = 0; i < samples; i++) mix[i] = saturate(sum[i] as number);
      this.#onMix?.(mix);
      for (let s = 0; s < count; s++) {
        const slot = this.#slots[s] as Slot;
        if (!slot.removed) this.#write(slot);
      }
    } finally {
      this.#ticking = false;
    }
  }

  /** A removed slot is taken out of the list at the next tick. */
  readonly #slotRemoved = (): void => {
    this.#removedSlots++;
  };

  /** Reads the slot's frame and measures its level. */
  #read(slot: Slot): void {
    const input = slot.input;
    slot.meanSquare = 0;
    slot.hasFrame = slot.port.read(input);
    if (!slot.hasFrame) return;
    let squares = 0;
    for (let i = 0; i < input.length; i++) {
      const sample = input[i] as number;
      squares += sample * sample;
    }
    slot.meanSquare = squares / input.length;
  }

  /**
   * Marks the talkers of this tick and puts them first among the candidates: the unmuted slots whose
   * frame is speech, and the talkers in their hangover, the loudest first (a newcomer's speech is
   * louder than any hangover's quiet, so it takes the place of the quietest), at most `talkers`.
   */
  #chooseTalkers(count: number): void {
    const candidates = this.#candidates;
    let wanting = 0;
    for (let s = 0; s < count; s++) {
      const slot = this.#slots[s] as Slot;
      // One that left while its frame was read, or after, is still heard this tick.
      if (slot.removed && !slot.hasFrame) {
        slot.talker = false;
        continue;
      }
      const speaks = !slot.muted && slot.meanSquare >= SPEECH_MEAN_SQUARE;
      if (speaks) slot.quietTicks = 0;
      else if (slot.talker) slot.quietTicks++;
      if (speaks || (slot.talker && !slot.muted && slot.quietTicks <= TALKER_HANGOVER_TICKS)) {
        candidates[wanting++] = slot;
      } else {
        slot.talker = false;
      }
    }
    const chosen = Math.min(wanting, this.#talkers);
    // Partial selection sort: `chosen` passes over the candidates, a handful in a usual room; when
    // all of them have a place there is nothing to sort.
    if (chosen < wanting) {
      for (let k = 0; k < chosen; k++) {
        let best = k;
        for (let c = k + 1; c < wanting; c++) {
          if ((candidates[c] as Slot).outranks(candidates[best] as Slot)) best = c;
        }
        const first = candidates[k] as Slot;
        candidates[k] = candidates[best] as Slot;
        candidates[best] = first;
      }
    }
    for (let c = 0; c < wanting; c++) (candidates[c] as Slot).talker = c < chosen;
    this.#talkerCount = chosen;
  }

  /** Writes the slot what it hears: its own frame when it is a talker or has sounds of its own, else the shared one. */
  #write(slot: Slot): void {
    if (!slot.talker && !slot.hasOwnSounds) {
      this.#sharedFrames++;
      slot.port.write(this.#mix, true);
      return;
    }
    const { output, input, ownSounds } = slot;
    const sum = this.#sum;
    const samples = this.#samples;
    const own = slot.talker && slot.hasFrame;
    if (!slot.hasOwnSounds) {
      if (own) {
        for (let i = 0; i < samples; i++) output[i] = saturate((sum[i] as number) - (input[i] as number));
      } else {
        output.set(this.#mix);
      }
    } else if (own) {
      for (let i = 0; i < samples; i++) {
        output[i] = saturate((sum[i] as number) - (input[i] as number) + (ownSounds[i] as number));
      }
    } else {
      for (let i = 0; i < samples; i++) output[i] = saturate((sum[i] as number) + (ownSounds[i] as number));
    }
    slot.hasOwnSounds = false;
    this.#ownFrames++;
    slot.port.write(output, false);
  }

  /** Adds this tick's frame of every sound to the sum or to its one listener's sounds, and drops the sounds that ended. */
  #mixSounds(): void {
    const sounds = this.#sounds;
    const samplesPerFrame = this.#samples;
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
      const end = Math.min(samples.length, sound.position + samplesPerFrame);
      for (let i = 0, p = sound.position; p < end; i++, p++)
        target[i] = (target[i] as number) + (samples[p] as number);
      sound.position = end;
      if (end < samples.length) sounds[kept++] = sound;
    }
    sounds.length = kept;
  }

  /** Takes removed slots out of the list, in place, and out of the candidates' references. */
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
    this.#candidates.length = 0;
  }
}
