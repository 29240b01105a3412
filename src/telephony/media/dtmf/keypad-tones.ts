/**
 * The DTMF keypad (ITU-T Q.23): each key is a row tone and a column tone sounded together. The
 * detector listens for these pairs; keypadTones makes them, for trunks that take keys in the audio.
 */

/** Keys by row (697, 770, 852, 941 Hz) then column (1209, 1336, 1477, 1633 Hz). */
export const KEYPAD = "123A456B789C*0#D";
export const ROW_FREQUENCIES: readonly number[] = [697, 770, 852, 941];
export const COLUMN_FREQUENCIES: readonly number[] = [1209, 1336, 1477, 1633];

/** Q.24 asks receivers to take 40 ms tones and pauses; 100 ms of each is what phones send. */
const TONE_MS = 100;
const GAP_MS = 100;
/** A `,` in the keys: one second of silence (as RFC 4733 sending pauses). */
const PAUSE_MS = 1000;
/** Each tone's peak, -9 dBFS (the pair peaks at -3 dBFS): near the -6 dBm0 per tone phones send. */
const TONE_AMPLITUDE = 32767 * 10 ** (-9 / 20);

/**
 * `keys` (0-9, *, #, A-D, `,` for a pause) as linear audio at `rate` Hz (8000 unless given): 100 ms of
 * each key's two tones, then 100 ms of silence. Throws a RangeError for any other character.
 */
export function keypadTones(keys: string, rate: 8000 | 16000 = 8000): Int16Array {
  if (rate !== 8000 && rate !== 16000) throw new RangeError(`keypad tones at ${rate} Hz (8000 or 16000)`);
  const toneSamples = (TONE_MS * rate) / 1000;
  const gapSamples = (GAP_MS * rate) / 1000;
  const pauseSamples = (PAUSE_MS * rate) / 1000;
  let length = 0;
  for (const key of keys) {
    if (key === ",") length += pauseSamples;
    else if (KEYPAD.includes(key.toUpperCase())) length += toneSamples + gapSamples;
    else throw new RangeError(`not a keypad key: ${JSON.stringify(key)}`);
  }
  const out = new Int16Array(length);
  let at = 0;
  for (const key of keys) {
    if (key === ",") {
      at += pauseSamples;
      continue;
    }
    const index = KEYPAD.indexOf(key.toUpperCase());
    const row = (2 * Math.PI * (ROW_FREQUENCIES[index >> 2] as number)) / rate;
    const column = (2 * Math.PI * (COLUMN_FREQUENCIES[index & 3] as number)) / rate;
    for (let i = 0; i < toneSamples; i++)
      out[at + i] = Math.round(TONE_AMPLITUDE * (Math.sin(row * i) + Math.sin(column * i)));
    at += toneSamples + gapSamples;
  }
  return out;
}
