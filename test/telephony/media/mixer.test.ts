import assert from "node:assert/strict";
import { PerformanceObserver } from "node:perf_hooks";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { FRAME_SAMPLES, Mixer, type MixerPort } from "../../../src/telephony/media/mixer.js";

/** A participant that says `source` (null: nothing to say) and keeps a copy of everything it hears. */
class TestPort implements MixerPort {
  readonly heard: Int16Array[] = [];
  reads = 0;

  constructor(public source: Int16Array | null) {}

  read(out: Int16Array): boolean {
    this.reads++;
    if (this.source === null) {
      out.fill(12345); // must be ignored
      return false;
    }
    out.set(this.source);
    return true;
  }

  write(frame: Int16Array): void {
    this.heard.push(frame.slice());
  }

  get last(): Int16Array {
    const frame = this.heard.at(-1);
    assert.ok(frame, "nothing heard");
    return frame;
  }
}

function constant(value: number, length = FRAME_SAMPLES): Int16Array {
  return new Int16Array(length).fill(value);
}

function sine(frequency: number, amplitude: number): Int16Array {
  return Int16Array.from({ length: FRAME_SAMPLES }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / 8000)),
  );
}

function sum(...frames: Int16Array[]): Int16Array {
  return Int16Array.from({ length: FRAME_SAMPLES }, (_, i) =>
    frames.reduce((total, f) => total + (f[i] ?? 0), 0),
  );
}

const SILENCE = constant(0);

describe("Mixer", () => {
  it("gives each participant the sum of the others, not itself", () => {
    const a = new TestPort(constant(1000));
    const b = new TestPort(sine(400, 2000));
    const c = new TestPort(constant(-300));
    const mixer = new Mixer();
    for (const port of [a, b, c]) mixer.addParticipant(port);
    mixer.tick();
    mixer.tick();
    for (const port of [a, b, c]) assert.equal(port.heard.length, 2);
    assert.deepEqual(a.last, sum(b.source as Int16Array, c.source as Int16Array));
    assert.deepEqual(b.last, sum(a.source as Int16Array, c.source as Int16Array));
    assert.deepEqual(c.last, sum(a.source as Int16Array, b.source as Int16Array));
  });

  it("reads a muted participant but does not mix it in, and the muted one still hears", () => {
    const a = new TestPort(constant(1000));
    const b = new TestPort(constant(200));
    const c = new TestPort(constant(-300));
    const mixer = new Mixer();
    const slotA = mixer.addParticipant(a, { muted: true });
    mixer.addParticipant(b);
    mixer.addParticipant(c);
    mixer.tick();
    assert.equal(a.reads, 1, "the muted port is drained");
    assert.deepEqual(b.last, constant(-300));
    assert.deepEqual(c.last, constant(200));
    assert.deepEqual(a.last, constant(-100));
    // Its level still shows that it talks: 1000 of 32768 is -30.3 dBFS.
    assert.ok(Math.abs(slotA.level - 20 * Math.log10(1000 / 32768)) < 0.01, String(slotA.level));

    slotA.muted = false;
    mixer.tick();
    assert.deepEqual(b.last, constant(700));
  });

  it("ignores a participant with nothing to say and reports its level as -Infinity", () => {
    const a = new TestPort(constant(1000));
    const quiet = new TestPort(null);
    const mixer = new Mixer();
    const slotA = mixer.addParticipant(a);
    const quietSlot = mixer.addParticipant(quiet);
    mixer.tick();
    assert.deepEqual(quiet.last, constant(1000));
    assert.deepEqual(a.last, SILENCE);
    assert.equal(quietSlot.level, Number.NEGATIVE_INFINITY);
    assert.ok(slotA.level > -31 && slotA.level < -30);
  });

  it("saturates a sum past 16 bits instead of wrapping it", () => {
    const mixer = new Mixer();
    const loud = [new TestPort(constant(30000)), new TestPort(constant(30000))];
    const listener = new TestPort(null);
    for (const port of [...loud, listener]) mixer.addParticipant(port);
    mixer.tick();
    assert.deepEqual(listener.last, constant(32767));
    assert.deepEqual(loud[0]?.last, constant(30000), "one's own part is taken out before saturating");

    for (const port of loud) port.source = constant(-30000);
    mixer.tick();
    assert.deepEqual(listener.last, constant(-32768));

    // A sine through two loud talkers keeps its sign sample by sample.
    const loudSine = sine(500, 25000);
    for (const port of loud) port.source = loudSine;
    mixer.tick();
    const expected = loudSine.map((v) => Math.max(-32768, Math.min(32767, 2 * v)));
    assert.deepEqual(listener.last, expected);
  });

  it("plays a sound to everyone for its length, then stops", () => {
    const talker = new TestPort(constant(100));
    const listener = new TestPort(null);
    const mixes: Int16Array[] = [];
    const mixer = new Mixer({ onMix: (mix) => mixes.push(mix.slice()) });
    mixer.addParticipant(talker);
    mixer.addParticipant(listener);
    // Two and a half frames.
    const sound = Int16Array.from({ length: 400 }, (_, i) => i + 1);
    mixer.play(sound);
    for (let tick = 0; tick < 4; tick++) mixer.tick();
    const soundFrame = (n: number): Int16Array => {
      const frame = new Int16Array(FRAME_SAMPLES);
      frame.set(sound.subarray(n * FRAME_SAMPLES, (n + 1) * FRAME_SAMPLES));
      return frame;
    };
    for (let n = 0; n < 4; n++) {
      assert.deepEqual(talker.heard[n], soundFrame(n), `talker, tick ${n}`);
      assert.deepEqual(listener.heard[n], sum(constant(100), soundFrame(n)), `listener, tick ${n}`);
      assert.deepEqual(mixes[n], sum(constant(100), soundFrame(n)), `mix, tick ${n}`);
    }
  });

  it("plays a sound to one participant only when told to", () => {
    const a = new TestPort(constant(100));
    const b = new TestPort(constant(200));
    const c = new TestPort(null);
    const mixes: Int16Array[] = [];
    const mixer = new Mixer({ onMix: (mix) => mixes.push(mix.slice()) });
    const slotA = mixer.addParticipant(a);
    mixer.addParticipant(b);
    const slotC = mixer.addParticipant(c);
    mixer.play(constant(1000), { to: slotA });
    mixer.play(constant(50), { to: slotC });
    mixer.tick();
    assert.deepEqual(a.last, constant(1200));
    assert.deepEqual(b.last, constant(100));
    assert.deepEqual(c.last, constant(350));
    assert.deepEqual(mixes[0], constant(300), "sounds to one participant are not in the mix");
    mixer.tick();
    assert.deepEqual(a.last, constant(200), "the sound ended after one frame");
    assert.deepEqual(c.last, constant(300));
  });

  it("refuses to play to a participant of another mixer", () => {
    const slot = new Mixer().addParticipant(new TestPort(null));
    assert.throws(() => new Mixer().play(constant(1), { to: slot }));
  });

  it("lets a participant leave between ticks and during one", () => {
    const a = new TestPort(constant(1));
    const b = new TestPort(constant(10));
    const c = new TestPort(constant(100));
    const mixer = new Mixer();
    const slotA = mixer.addParticipant(a);
    const slotB = mixer.addParticipant(b);
    mixer.addParticipant(c);
    mixer.tick();
    assert.deepEqual(c.last, constant(11));

    slotA.remove();
    slotA.remove();
    assert.equal(mixer.size, 2);
    mixer.tick();
    assert.equal(a.heard.length, 1, "a removed participant hears nothing more");
    assert.equal(a.reads, 1, "and is not read");
    assert.deepEqual(c.last, constant(10));
    assert.deepEqual(b.last, constant(100));

    // b hangs up while its frame is read: it is heard this tick, then gone, and gets no frame.
    const read = b.read.bind(b);
    b.read = (out) => {
      slotB.remove();
      return read(out);
    };
    mixer.tick();
    assert.equal(b.heard.length, 2);
    assert.deepEqual(c.last, constant(10));
    mixer.tick();
    assert.deepEqual(c.last, SILENCE);
    assert.equal(mixer.size, 1);
  });

  it("drops a sound meant for a participant who left", () => {
    const a = new TestPort(null);
    const b = new TestPort(null);
    const mixer = new Mixer();
    const slotA = mixer.addParticipant(a);
    mixer.addParticipant(b);
    mixer.play(constant(500, 800), { to: slotA });
    mixer.tick();
    slotA.remove();
    mixer.tick();
    assert.deepEqual(b.last, SILENCE);
    mixer.play(constant(500), { to: slotA });
    mixer.tick();
    assert.deepEqual(b.last, SILENCE);
  });

  it("allocates nothing per tick, even with 500 participants", async () => {
    const mixer = new Mixer({ onMix: () => {} });
    const talking = sine(300, 3000);
    let heard = 0;
    for (let n = 0; n < 500; n++) {
      const talks = n % 2 === 0;
      mixer.addParticipant({
        read: (out) => {
          if (talks) out.set(talking);
          return talks;
        },
        write: (frame) => {
          heard += frame[0] as number;
        },
      });
    }
    mixer.play(constant(7, 1_000_000));
    for (let tick = 0; tick < 200; tick++) mixer.tick(); // compiled before counting
    // Each tick reads and writes 500 frames: a single small object per frame would fill the young
    // generation many times over in 2000 ticks and show as garbage collections.
    const collections: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) collections.push(entry.startTime);
    });
    observer.observe({ entryTypes: ["gc"] });
    const start = performance.now();
    for (let tick = 0; tick < 2000; tick++) mixer.tick();
    const end = performance.now();
    await sleep(200); // garbage collection entries reach observers a little later
    observer.disconnect();
    const during = collections.filter((at) => at >= start && at <= end).length;
    assert.ok(during <= 1, `${during} garbage collections during 2000 ticks`);
    assert.notEqual(heard, 0);
  });
});
