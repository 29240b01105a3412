/**
 * Where the energy of a sound lies in frequency, for tests of band limits: a short-time Fourier
 * transform (Hann-windowed blocks of 512 samples, half overlapping) summed over the whole sound.
 */

const BLOCK = 512;
const HOP = BLOCK / 2;
const HANN = Float64Array.from({ length: BLOCK }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / BLOCK));
const COS = Float64Array.from({ length: BLOCK }, (_, i) => Math.cos((2 * Math.PI * i) / BLOCK));
const SIN = Float64Array.from({ length: BLOCK }, (_, i) => Math.sin((2 * Math.PI * i) / BLOCK));

/**
 * The energy of `samples` (at `sampleRate` Hz) between `low` and `high` Hz (DC and the Nyquist
 * frequency left out), summed over its blocks; the unit is arbitrary but the same for every call with
 * the same rate, so two bands or two sounds at one rate compare.
 */
export function bandEnergy(
  samples: ArrayLike<number>,
  sampleRate: number,
  low: number,
  high: number,
): number {
  const first = Math.max(1, Math.ceil((low * BLOCK) / sampleRate));
  const last = Math.min(BLOCK / 2, Math.ceil((high * BLOCK) / sampleRate));
  const block = new Float64Array(BLOCK);
  let energy = 0;
  for (let start = 0; start + BLOCK <= samples.length; start += HOP) {
    for (let i = 0; i < BLOCK; i++) block[i] = (samples[start + i] as number) * (HANN[i] as number);
    for (let k = first; k < last; k++) {
      let re = 0;
      let im = 0;
      for (let i = 0, phase = 0; i < BLOCK; i++, phase = (phase + k) % BLOCK) {
        re += (block[i] as number) * (COS[phase] as number);
        im -= (block[i] as number) * (SIN[phase] as number);
      }
      energy += re * re + im * im;
    }
  }
  return energy;
}

/** The share of the energy of `samples` between `low` and `high` Hz, in dB (0 dB: all of it). */
export function bandShareDb(
  samples: ArrayLike<number>,
  sampleRate: number,
  low: number,
  high: number,
): number {
  const all = bandEnergy(samples, sampleRate, 0, sampleRate / 2);
  return 10 * Math.log10(bandEnergy(samples, sampleRate, low, high) / all);
}
