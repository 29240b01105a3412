/**
 * Generated sounds for 16-bit linear audio at 16 kHz (wideband) or 8 kHz (narrowband), each computed
 * at the rate asked on first use and cached per rate: an entry and an exit chime, and a hold-music loop
 * (our own composition, free of any rights). Every note starts and ends on a smooth envelope, so no
 * sound clicks at a note boundary, and the hold music is rendered as one period of a periodic signal
 * (tails that run past the end are wrapped to the start), so it loops without a seam. The arrays
 * returned are shared: read them, do not change them.
 */

/** The rates sounds are made at. */
type Rate = 8000 | 16000;
/**
 * Harmonics at or above this fraction of the rate are left out: they would alias past the Nyquist
 * frequency (3,800 Hz at 8 kHz, 7,600 Hz at 16 kHz, where the arpeggio's upper harmonics reach).
 */
const HIGHEST_FREQUENCY_FRACTION = 0.475;
/**
 * Odd harmonics 1 to 9 at 1/n², the start of a triangle wave's series: a soft, round tone whose upper
 * harmonics reach past 4 kHz in the arpeggio, the air a wideband listener hears.
 */
const SOFT_TRIANGLE = [1, 1 / 9, 1 / 25, 1 / 49, 1 / 81];
const SINE = [1];

/** Linear amplitude of a level in dBFS, 0 dBFS being 32767. */
function fullScale(dbfs: number): number {
  return 32767 * 10 ** (dbfs / 20);
}

function midiFrequency(note: number): number {
  return 440 * 2 ** ((note - 69) / 12);
}

function seconds(value: number, rate: Rate): number {
  return Math.round(value * rate);
}

/** 0 to 1 over `length` samples along half a cosine: a ramp with no corner at either end. */
function raisedCosine(position: number, length: number): number {
  return 0.5 - 0.5 * Math.cos((Math.PI * position) / length);
}

/** Gain at sample `i` of a note `length` samples long. */
type Envelope = (i: number, length: number) => number;

function attackRelease(attack: number, release: number): Envelope {
  return (i, length) => {
    if (i < attack) return raisedCosine(i, attack);
    if (i >= length - release) return raisedCosine(length - i, release);
    return 1;
  };
}

/** A plucked note: quick attack, exponential decay with time constant `decay`, then a short fade to 0. */
function pluck(attack: number, decay: number, release: number): Envelope {
  const sustain = attackRelease(attack, release);
  return (i, length) => sustain(i, length) * Math.exp(-i / decay);
}

interface Note {
  /** First sample; samples past the end of the buffer wrap to its start. */
  readonly start: number;
  readonly length: number;
  readonly frequency: number;
  readonly amplitude: number;
  readonly envelope: Envelope;
  /** Amplitudes of the odd harmonics 1, 3, 5, ... */
  readonly harmonics: readonly number[];
}

function render(out: Float64Array, rate: Rate, note: Note): void {
  const { start, length, frequency, amplitude, envelope, harmonics } = note;
  const highest = HIGHEST_FREQUENCY_FRACTION * rate;
  const gain = new Float64Array(length);
  for (let i = 0; i < length; i++) gain[i] = amplitude * envelope(i, length);
  for (let h = 0; h < harmonics.length; h++) {
    const multiple = 2 * h + 1;
    if (frequency * multiple >= highest) break;
    const weight = harmonics[h] as number;
    // A unit phasor turned by a fixed step each sample: a sine at a multiply-add per sample, where
    // Math.sin would make the hold music take a noticeable fraction of a second to render.
    const step = (2 * Math.PI * frequency * multiple) / rate;
    const stepCos = Math.cos(step);
    const stepSin = Math.sin(step);
    let cos = 1;
    let sin = 0;
    for (let i = 0; i < length; i++) {
      const at = (start + i) % out.length;
      out[at] = (out[at] as number) + weight * (gain[i] as number) * sin;
      const nextCos = cos * stepCos - sin * stepSin;
      sin = cos * stepSin + sin * stepCos;
      cos = nextCos;
    }
  }
}

function toInt16(samples: Float64Array, gain: number): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    out[i] = Math.max(-32768, Math.min(32767, Math.round((samples[i] as number) * gain)));
  }
  return out;
}

/** Two 150 ms notes, each with a 10 ms attack and a 40 ms release, peaking at -12 dBFS. */
function chime(rate: Rate, firstFrequency: number, secondFrequency: number): Int16Array {
  const noteLength = seconds(0.15, rate);
  const out = new Float64Array(2 * noteLength);
  const envelope = attackRelease(seconds(0.01, rate), seconds(0.04, rate));
  const note = { length: noteLength, amplitude: fullScale(-12), envelope, harmonics: SINE };
  render(out, rate, { ...note, start: 0, frequency: firstFrequency });
  render(out, rate, { ...note, start: noteLength, frequency: secondFrequency });
  return toInt16(out, 1);
}

/** One sound per rate, each made the first time it is asked for. */
class PerRate {
  readonly #made = new Map<Rate, Int16Array>();

  constructor(private readonly make: (rate: Rate) => Int16Array) {}

  at(rate: Rate): Int16Array {
    if (rate !== 8000 && rate !== 16000) throw new RangeError(`sounds at ${rate} Hz (8000 or 16000)`);
    let sound = this.#made.get(rate);
    if (!sound) {
      sound = this.make(rate);
      this.#made.set(rate, sound);
    }
    return sound;
  }
}

const entryTones = new PerRate((rate) => chime(rate, 660, 880));
const exitTones = new PerRate((rate) => chime(rate, 880, 660));

/** A rising chime, 660 Hz then 880 Hz (a fifth apart), 300 ms, at `rate` Hz. */
export function entryTone(rate: Rate = 16000): Int16Array {
  return entryTones.at(rate);
}

/** A falling chime, 880 Hz then 660 Hz, 300 ms, at `rate` Hz. */
export function exitTone(rate: Rate = 16000): Int16Array {
  return exitTones.at(rate);
}

/** Seconds per chord of the hold music; four chords make the 16 s loop. */
const CHORD_SECONDS = 4;
/** C, Am, F, G (I-vi-IV-V in C major) as MIDI notes: close-voiced pad around middle C, and a bass. */
const PROGRESSION = [
  { pad: [60, 64, 67], bass: 48 },
  { pad: [60, 64, 69], bass: 45 },
  { pad: [60, 65, 69], bass: 41 },
  { pad: [59, 62, 67], bass: 43 },
];
/** Arpeggio over the pad an octave up plus the octave above its lowest note, eight notes per chord. */
const ARPEGGIO_PATTERN = [0, 1, 2, 3, 2, 1, 2, 1];
/** RMS level of the hold music. */
const HOLD_MUSIC_DBFS = -18;

function renderHoldMusic(rate: Rate): Int16Array {
  const chordLength = seconds(CHORD_SECONDS, rate);
  const out = new Float64Array(PROGRESSION.length * chordLength);
  // The pad and bass ring one second into the next chord, fading out as it fades in.
  const padEnvelope = attackRelease(seconds(0.8, rate), seconds(1, rate));
  const bassEnvelope = attackRelease(seconds(0.1, rate), seconds(1, rate));
  const arpeggioEnvelope = pluck(seconds(0.008, rate), seconds(0.3, rate), seconds(0.1, rate));
  const arpeggioStep = chordLength / ARPEGGIO_PATTERN.length;
  PROGRESSION.forEach(({ pad, bass }, chord) => {
    const start = chord * chordLength;
    const length = chordLength + seconds(1, rate);
    for (const note of pad) {
      render(out, rate, {
        start,
        length,
        frequency: midiFrequency(note),
        amplitude: 0.2,
        envelope: padEnvelope,
        harmonics: SOFT_TRIANGLE,
      });
    }
    render(out, rate, {
      start,
      length,
      frequency: midiFrequency(bass),
      amplitude: 0.35,
      envelope: bassEnvelope,
      harmonics: SOFT_TRIANGLE,
    });
    const arpeggio = [...pad.map((note) => note + 12), (pad[0] as number) + 24];
    ARPEGGIO_PATTERN.forEach((index, step) => {
      render(out, rate, {
        start: start + step * arpeggioStep,
        length: 2 * arpeggioStep,
        frequency: midiFrequency(arpeggio[index] as number),
        amplitude: 0.3,
        envelope: arpeggioEnvelope,
        harmonics: SOFT_TRIANGLE,
      });
    });
  });
  let squares = 0;
  for (const sample of out) squares += sample * sample;
  const rms = Math.sqrt(squares / out.length);
  return toInt16(out, fullScale(HOLD_MUSIC_DBFS) / rms);
}

const holdMusics = new PerRate(renderHoldMusic);

/**
 * A 16 s loop of I-vi-IV-V in C major at `rate` Hz: a soft pad that cross-fades from chord to chord, a
 * bass, and a plucked arpeggio in eighth notes at 60 beats per minute; RMS at -18 dBFS. At 16 kHz the
 * arpeggio keeps the harmonics above 4 kHz that the 8 kHz loop leaves out. The first call at a rate
 * renders it, about 0.1-0.4 s of CPU: make it before the media clock starts, not inside a tick.
 */
export function holdMusic(rate: Rate = 16000): Int16Array {
  return holdMusics.at(rate);
}

/** Plays a sound over and over, one frame at a time. */
export class LoopingPlayer {
  #position: number;

  /** Plays `samples` in a loop from `position` (a sample of it, taken modulo its length). */
  constructor(
    private readonly samples: Int16Array,
    position = 0,
  ) {
    if (samples.length === 0) throw new RangeError("LoopingPlayer needs at least one sample");
    this.#position = ((Math.round(position) % samples.length) + samples.length) % samples.length;
  }

  /** The sample that plays next: where the same sound at another rate goes on from, scaled. */
  get position(): number {
    return this.#position;
  }

  /**
   * Fills all of `out` (a frame of any length, at the sound's rate) with the next samples, going back
   * to the start of the sound at its end.
   */
  next(out: Int16Array): void {
    const samples = this.samples;
    let position = this.#position;
    for (let i = 0; i < out.length; i++) {
      out[i] = samples[position] as number;
      position = position + 1 === samples.length ? 0 : position + 1;
    }
    this.#position = position;
  }
}
