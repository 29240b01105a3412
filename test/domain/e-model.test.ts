import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  CODEC_IMPAIRMENTS,
  DEFAULT_RATING,
  delayImpairment,
  effectiveEquipmentImpairment,
  meanOpinionScore,
  mosOfRating,
  rating,
} from "../../src/domain/e-model.js";

const g711 = CODEC_IMPAIRMENTS.PCMU;
const near = (actual: number, expected: number, tolerance: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual}, not ${expected} ± ${tolerance}`);

describe("the E-model (G.107)", () => {
  it("R 93.2, the default connection's rating, is a MOS of 4.41", () => {
    near(mosOfRating(DEFAULT_RATING), 4.41, 0.005, "MOS of R 93.2");
    near(meanOpinionScore(g711, 0, 0), 4.41, 0.005, "G.711, no loss, no delay");
  });

  it("R maps to MOS by G.107 Annex B: 1 at or below 0, 4.5 at or above 100, 3.1 near R 60", () => {
    assert.equal(mosOfRating(-5), 1);
    assert.equal(mosOfRating(0), 1);
    assert.equal(mosOfRating(100), 4.5);
    assert.equal(mosOfRating(120), 4.5);
    near(mosOfRating(60), 3.1, 1e-9, "MOS of R 60");
    near(mosOfRating(50), 2.58, 0.005, "MOS of R 50");
  });

  it("loss raises Ie,eff as Ie + (95 - Ie) Ppl / (Ppl + Bpl): G.711 with PLC loses 10.1 at 3 %", () => {
    assert.equal(effectiveEquipmentImpairment(g711, 0), 0);
    near(effectiveEquipmentImpairment(g711, 0.03), (95 * 3) / (3 + 25.1), 1e-9, "Ie,eff at 3 %");
    near(effectiveEquipmentImpairment(g711, 0.03), 10.14, 0.01, "Ie,eff at 3 %");
    near(effectiveEquipmentImpairment(g711, 0.1), (95 * 10) / (10 + 25.1), 1e-9, "Ie,eff at 10 %");
    // All lost: 95 * 100 / 125.1; shares beyond 0-1 are bounded.
    near(effectiveEquipmentImpairment(g711, 2), (95 * 100) / 125.1, 1e-9, "Ie,eff past all");
    assert.equal(effectiveEquipmentImpairment(g711, -1), 0);
    // A codec with an impairment of its own starts from it.
    near(effectiveEquipmentImpairment({ ie: 11, bpl: 19 }, 0.02), 11 + (84 * 2) / (2 + 19), 1e-9, "G.729");
    assert.ok(meanOpinionScore(g711, 0.05, 50) < meanOpinionScore(g711, 0.01, 50));
  });

  it("delay costs 0.024 a ms up to 177.3 ms and 0.134 a ms past it", () => {
    assert.equal(delayImpairment(0), 0);
    near(delayImpairment(100), 2.4, 1e-9, "Id at 100 ms");
    near(delayImpairment(177.3), 0.024 * 177.3, 1e-9, "Id at the knee");
    const before = delayImpairment(170) - delayImpairment(150);
    const after = delayImpairment(220) - delayImpairment(200);
    near(before, 0.48, 1e-9, "20 ms below the knee");
    near(after, 20 * 0.134, 1e-9, "20 ms above the knee");
    near(rating(g711, 0, 300), DEFAULT_RATING - 7.2 - 0.11 * (300 - 177.3), 1e-9, "R at 300 ms");
  });

  it("a clean call with a LAN's delay rates above 4.3, one losing 3 % near 4.0", () => {
    const clean = meanOpinionScore(g711, 0, 90);
    const lossy = meanOpinionScore(g711, 0.03, 90);
    assert.ok(clean > 4.3, `clean: ${clean}`);
    near(lossy, 4.04, 0.05, "3 % lost");
  });
});
