import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { linearToMulaw, mulawToLinear } from "../../../../src/telephony/media/codec/g711.js";
import { InbandDtmfDetector } from "../../../../src/telephony/media/dtmf/inband-detector.js";
import { keypadTones } from "../../../../src/telephony/media/dtmf/keypad-tones.js";
import { createResampler } from "../../../../src/telephony/media/resampler.js";

/** The keys the in-band detector hears in `audio`, fed in 20 ms frames. */
function heard(audio: Int16Array): string {
  const keys: string[] = [];
  const detector = new InbandDtmfDetector((key) => keys.push(key));
  for (let i = 0; i < audio.length; i += 160) detector.process(audio.subarray(i, i + 160));
  return keys.join("");
}

describe("keypad tones", () => {
  it("are heard as the same keys, every key of the pad, once each", () => {
    assert.equal(heard(keypadTones("123A456B789C*0#D")), "123A456B789C*0#D");
  });

  it("survive G.711 and repeat a key pressed twice", () => {
    const tones = keypadTones("5,5#");
    const line = Int16Array.from(tones, (sample) => mulawToLinear(linearToMulaw(sample)));
    assert.equal(heard(line), "55#");
  });

  it("last 200 ms a key and one second a pause, at either rate", () => {
    assert.equal(keypadTones("1").length, 1600);
    assert.equal(keypadTones("1,2").length, 1600 + 8000 + 1600);
    assert.equal(keypadTones("1,2", 16000).length, 3200 + 16000 + 3200);
  });

  it("at 16 kHz are the same keys, heard after a narrowband leg's conversion to 8 kHz", () => {
    const wideband = keypadTones("19*0#D", 16000);
    const narrowband = new Int16Array(wideband.length / 2);
    createResampler(16000, 8000).process(wideband, narrowband);
    assert.equal(heard(narrowband), "19*0#D");
  });

  it("refuse what is not a key, or a rate they are not made at", () => {
    assert.throws(() => keypadTones("12x"), RangeError);
    assert.throws(() => keypadTones("1", 44100 as 16000), RangeError);
  });
});
