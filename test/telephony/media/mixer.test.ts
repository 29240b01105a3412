import assert from "node:assert/strict";
import { PerformanceObserver } from "node:perf_hooks";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  frameSamples,
  Mixer,
  type MixerPort,
  SPEECH_THRESHOLD_DB,
  TALKER_HANGOVER_TICKS,
} from "../../../src/telephony/media/mixer.js";

const FRAME_SAMPLES = frameSamples(8000);

/** A participant that says `source` (null: nothing to say) and keeps a copy of everything it hears. */
class TestPort implements MixerPort {
  readonly heard: Int16Array[] = [];
  /** The length of the buffer each read was given. */
  readonly readLengths: number[] = [];
  /** The mixer's own array last written, and whether it was the shared one. */
  lastFrame: Int16Array | null = null;
  lastShared: boolean | null = null;

  constructor(public source: Int16Array | null) {}

  get reads(): number {
    return this.readLengths.length;
  }

  read(out: Int16Array): boolean {
    this.readLengths.push(out.length);
    if (this.source === null) {
      out.fill(12345); // must be ignored
      return false;
    }
    out.set(this.source);
    return true;
  }

  write(frame: Int16Array, shared: boolean): void {
    this.heard.push(frame.slice());
    this.lastFrame = frame;
    this.lastShared = shared;
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

function sine(frequency: number, amplitude: number, length = FRAME_SAMPLES, rate = 8000): Int16Array {
  return Int16Array.from({ length }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / rate)),
  );
}

function sum(...frames: Int16Array[]): Int16Array {
  return Int16Array.from({ length: frames[0]?.length ?? 0 }, (_, i) =>
    frames.reduce((total, f) => total + (f[i] ?? 0), 0),
  );
}

/** The level of a constant frame of `value`, in dBFS, as the mixer measures it. */
function levelOf(value: number): number {
  return 20 * Math.log10(Math.abs(value) / 32768);
}

const SILENCE = constant(0);
/** Below the speech threshold: what an open line with nothing to say sends (line noise). */
const HUM = 20;

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

  it("mixes only the talkers: 10 in the room, 2 talking, the 8 others get one shared frame", () => {
    const first = new TestPort(sine(400, 3000));
    const second = new TestPort(constant(-2000));
    // Half the listeners send line noise below the threshold, half nothing: neither is mixed.
    const listeners = Array.from({ length: 8 }, (_, n) => new TestPort(n % 2 === 0 ? constant(HUM) : null));
    assert.ok(levelOf(HUM) < SPEECH_THRESHOLD_DB);
    const mixes: Int16Array[] = [];
    const mixer = new Mixer({ onMix: (mix) => mixes.push(mix) });
    const firstSlot = mixer.addParticipant(first);
    // The talkers are not the first two slots: the choice is by level, not by order.
    for (const port of listeners.slice(0, 4)) mixer.addParticipant(port);
    const secondSlot = mixer.addParticipant(second);
    for (const port of listeners.slice(4)) mixer.addParticipant(port);
    mixer.tick();
    mixer.tick();

    assert.equal(mixer.talkerCount, 2);
    assert.ok(firstSlot.talker && secondSlot.talker);
    assert.deepEqual(first.last, second.source, "the first hears the second, not itself");
    assert.deepEqual(second.last, first.source, "the second hears the first, not itself");
    assert.equal(first.lastShared, false);
    assert.equal(second.lastShared, false);
    assert.notEqual(first.lastFrame, second.lastFrame);

    const shared = listeners[0]?.lastFrame;
    assert.ok(shared);
    for (const [n, port] of listeners.entries()) {
      assert.equal(port.lastShared, true, `listener ${n}`);
      assert.equal(port.lastFrame, shared, `listener ${n} got the one shared array`);
      assert.deepEqual(port.last, sum(first.source as Int16Array, second.source as Int16Array));
    }
    assert.notEqual(shared, first.lastFrame);
    assert.equal(mixes[1], shared, "onMix gets the shared frame");
    assert.equal(mixer.sharedFramesWritten, 16);
    assert.equal(mixer.ownFramesWritten, 4);
  });

  it("mixes at most `talkers`, the loudest", () => {
    const loud = [1000, 5000, 2000, 4000, 3000].map((value) => new TestPort(constant(value)));
    const listener = new TestPort(null);
    const mixer = new Mixer({ talkers: 3 });
    const slots = loud.map((port) => mixer.addParticipant(port));
    mixer.addParticipant(listener);
    mixer.tick();
    assert.equal(mixer.talkerCount, 3);
    assert.deepEqual(
      slots.map((slot) => slot.talker),
      [false, true, false, true, true],
    );
    assert.deepEqual(listener.last, constant(12000), "the 3 loudest, not the 2 quieter");
    assert.deepEqual(loud[1]?.last, constant(7000), "the loudest hears the other two");
    assert.deepEqual(loud[0]?.last, constant(12000), "one left out hears the talkers...");
    assert.equal(loud[0]?.lastShared, true, "...in the shared frame");
    assert.equal(loud[0]?.lastFrame, listener.lastFrame);
  });

  it("keeps its talkers against one a little louder, and gives a place to one 6 dB louder", () => {
    const talkers = [1000, 1000, 1000].map((value) => new TestPort(constant(value)));
    const listener = new TestPort(null);
    const mixer = new Mixer({ talkers: 3 });
    const slots = talkers.map((port) => mixer.addParticipant(port));
    mixer.addParticipant(listener);
    mixer.tick();
    // A fourth voice 5 dB louder: not enough to take a place, tick after tick.
    const newcomer = new TestPort(constant(1778));
    const newcomerSlot = mixer.addParticipant(newcomer);
    for (let tick = 0; tick < 5; tick++) {
      mixer.tick();
      assert.deepEqual(
        [...slots, newcomerSlot].map((slot) => slot.talker),
        [true, true, true, false],
        `tick ${tick}`,
      );
    }
    assert.deepEqual(listener.last, constant(3000));
    // 7 dB louder: it takes the place of one of them.
    newcomer.source = constant(2239);
    mixer.tick();
    assert.equal(newcomerSlot.talker, true);
    assert.equal(mixer.talkerCount, 3);
    assert.deepEqual(listener.last, constant(2239 + 2000));
  });

  it("keeps a talker through a pause for the hangover, then lets it go", () => {
    const talker = new TestPort(constant(1000));
    const listener = new TestPort(null);
    const mixer = new Mixer();
    const slot = mixer.addParticipant(talker);
    mixer.addParticipant(listener);
    mixer.tick();
    assert.deepEqual(listener.last, constant(1000));

    // The tail of speech below the threshold is still heard for the hangover.
    talker.source = constant(HUM);
    for (let tick = 1; tick <= TALKER_HANGOVER_TICKS; tick++) {
      mixer.tick();
      assert.ok(slot.talker, `still a talker ${tick} ticks into the pause`);
      assert.equal(talker.lastShared, false);
      assert.deepEqual(listener.last, constant(HUM), `the tail heard ${tick} ticks into the pause`);
    }
    mixer.tick();
    assert.ok(!slot.talker);
    assert.equal(mixer.talkerCount, 0);
    assert.deepEqual(listener.last, SILENCE, "line noise is not mixed once the hangover ran out");
    assert.equal(talker.lastShared, true);

    // Speech again: mixed at once, and a pause with nothing received keeps the place too.
    talker.source = constant(1000);
    mixer.tick();
    talker.source = null;
    mixer.tick();
    assert.ok(slot.talker);
    assert.deepEqual(talker.last, SILENCE);
    assert.equal(talker.lastShared, false);
  });

  it("gives a talker's place in its hangover to a louder newcomer", () => {
    const first = new TestPort(constant(1000));
    const newcomer = new TestPort(null);
    const listener = new TestPort(null);
    const mixer = new Mixer({ talkers: 1 });
    const firstSlot = mixer.addParticipant(first);
    const newcomerSlot = mixer.addParticipant(newcomer);
    mixer.addParticipant(listener);
    mixer.tick();
    first.source = constant(HUM);
    mixer.tick();
    mixer.tick();
    assert.ok(firstSlot.talker);
    newcomer.source = constant(500);
    mixer.tick();
    assert.ok(newcomerSlot.talker && !firstSlot.talker);
    assert.deepEqual(listener.last, constant(500));
    assert.deepEqual(first.last, constant(500));
    assert.equal(first.lastShared, true);
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
    assert.ok(Math.abs(slotA.level - levelOf(1000)) < 0.01, String(slotA.level));

    slotA.muted = false;
    mixer.tick();
    assert.deepEqual(b.last, constant(700));
  });

  it("never makes a muted participant a talker, however loud, and still reports its level", () => {
    const shouting = new TestPort(constant(20000));
    const quiet = new TestPort(constant(300));
    const listener = new TestPort(null);
    const mixer = new Mixer({ talkers: 1 });
    const shoutingSlot = mixer.addParticipant(shouting, { muted: true });
    const quietSlot = mixer.addParticipant(quiet);
    mixer.addParticipant(listener);
    for (let tick = 0; tick < 3; tick++) mixer.tick();
    assert.ok(!shoutingSlot.talker);
    assert.ok(quietSlot.talker, "the one place goes to the unmuted one");
    assert.deepEqual(listener.last, constant(300));
    assert.deepEqual(shouting.last, constant(300));
    assert.equal(shouting.lastShared, true);
    assert.ok(Math.abs(shoutingSlot.level - levelOf(20000)) < 0.01, String(shoutingSlot.level));

    // Muting a talker takes it out at once, without a hangover.
    quietSlot.muted = true;
    mixer.tick();
    assert.ok(!quietSlot.talker);
    assert.deepEqual(listener.last, SILENCE);
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

  it("plays a sound to one participant only when told to, in a frame of its own", () => {
    const a = new TestPort(constant(100));
    const b = new TestPort(constant(200));
    const c = new TestPort(null);
    const d = new TestPort(null);
    const mixes: Int16Array[] = [];
    const mixer = new Mixer({ onMix: (mix) => mixes.push(mix.slice()) });
    const slotA = mixer.addParticipant(a);
    mixer.addParticipant(b);
    const slotC = mixer.addParticipant(c);
    mixer.addParticipant(d);
    mixer.play(constant(1000), { to: slotA });
    mixer.play(constant(50), { to: slotC });
    mixer.tick();
    assert.deepEqual(a.last, constant(1200));
    assert.deepEqual(b.last, constant(100));
    assert.deepEqual(c.last, constant(350));
    assert.equal(c.lastShared, false, "a listener with a sound of its own gets its own frame");
    assert.deepEqual(d.last, constant(300));
    assert.equal(d.lastShared, true);
    assert.deepEqual(mixes[0], constant(300), "sounds to one participant are not in the mix");
    mixer.tick();
    assert.deepEqual(a.last, constant(200), "the sound ended after one frame");
    assert.deepEqual(c.last, constant(300));
    assert.equal(c.lastShared, true);
  });

  it("switches rate mid-prompt: frames of the new size, the prompt goes on at its pitch and place", () => {
    const amplitude = 10000;
    // One second of 1 kHz at 8 kHz: 50 frames, whatever the rate they are heard at.
    const prompt = sine(1000, amplitude, 8000, 8000);
    const talker = new TestPort(constant(1000));
    const listener = new TestPort(null);
    const mixer = new Mixer();
    assert.equal(mixer.sampleRate, 8000);
    mixer.addParticipant(talker);
    mixer.addParticipant(listener);
    mixer.play(prompt);
    for (let tick = 0; tick < 10; tick++) mixer.tick();
    mixer.setSampleRate(16000);
    assert.equal(mixer.sampleRate, 16000);
    talker.source = constant(1000, 320);
    for (let tick = 10; tick < 20; tick++) mixer.tick();
    mixer.setSampleRate(8000);
    talker.source = constant(1000);
    for (let tick = 20; tick < 52; tick++) mixer.tick();

    const sizes = [...Array(10).fill(160), ...Array(10).fill(320), ...Array(32).fill(160)];
    assert.deepEqual(talker.readLengths, sizes, "ports read frames at the mixer's rate");
    assert.deepEqual(
      listener.heard.map((frame) => frame.length),
      sizes,
    );
    // The talker hears the prompt alone; the listener the prompt and the talker.
    for (let tick = 0; tick < 52; tick++) {
      const heard = talker.heard[tick] as Int16Array;
      assert.deepEqual(
        listener.heard[tick],
        heard.map((v) => v + 1000),
        `tick ${tick}`,
      );
    }
    // After each switch the sound is the same 1 kHz sine, in phase with where it was: the prompt at
    // 0.2 s (and 0.4 s), a whole number of cycles in, sounds as sin(2π · 1000 · t). Each conversion's
    // passband ripple (±0.1 dB) allows about 1.2 % of the amplitude, and after the second switch the
    // prompt has been through two (measured: 1.0 % and 2.0 %); a wrong pitch or place is off by
    // about the whole amplitude.
    const tolerance = 0.03 * amplitude;
    const check = (from: number, to: number, rate: number) => {
      const heard = talker.heard.slice(from, to);
      let worst = 0;
      heard.forEach((frame, f) => {
        frame.forEach((sample, i) => {
          const t = (f * frame.length + i) / rate;
          worst = Math.max(worst, Math.abs(sample - amplitude * Math.sin(2 * Math.PI * 1000 * t)));
        });
      });
      assert.ok(worst < tolerance, `ticks ${from}-${to} at ${rate} Hz: off by ${worst}`);
    };
    check(0, 10, 8000);
    check(10, 20, 16000);
    // The last frame holds the filter's tail at the sound's end.
    check(20, 49, 8000);
    assert.ok(
      talker.heard[49]?.some((v) => v !== 0),
      "the prompt lasts its second",
    );
    assert.deepEqual(talker.heard[50], SILENCE, "and ends when it would have at one rate");
  });

  it("refuses a rate other than 8000 or 16000, a cap below one talker, and a switch during a tick", () => {
    assert.throws(() => new Mixer({ sampleRate: 48000 as 8000 }), RangeError);
    assert.throws(() => new Mixer({ talkers: 0 }), RangeError);
    assert.throws(() => new Mixer({ talkers: 1.5 }), RangeError);
    assert.equal(new Mixer({ talkers: Number.POSITIVE_INFINITY, sampleRate: 16000 }).sampleRate, 16000);
    const mixer = new Mixer();
    mixer.addParticipant({
      read: () => false,
      write: () => mixer.setSampleRate(16000),
    });
    assert.throws(() => mixer.tick(), /not during a tick/);
    assert.equal(mixer.sampleRate, 8000);
  });

  it("refuses to play to a participant of another mixer", () => {
    const slot = new Mixer().addParticipant(new TestPort(null));
    assert.throws(() => new Mixer().play(constant(1), { to: slot }));
  });

  it("lets a participant leave between ticks and during one", () => {
    const a = new TestPort(constant(1000));
    const b = new TestPort(constant(2000));
    const c = new TestPort(constant(4000));
    const mixer = new Mixer();
    const slotA = mixer.addParticipant(a);
    const slotB = mixer.addParticipant(b);
    mixer.addParticipant(c);
    mixer.tick();
    assert.deepEqual(c.last, constant(3000));

    slotA.remove();
    slotA.remove();
    assert.equal(mixer.size, 2);
    mixer.tick();
    assert.equal(a.heard.length, 1, "a removed participant hears nothing more");
    assert.equal(a.reads, 1, "and is not read");
    assert.deepEqual(c.last, constant(2000));
    assert.deepEqual(b.last, constant(4000));

    // b hangs up while its frame is read: it is heard this tick, then gone, and gets no frame.
    const read = b.read.bind(b);
    b.read = (out) => {
      slotB.remove();
      return read(out);
    };
    mixer.tick();
    assert.equal(b.heard.length, 2);
    assert.deepEqual(c.last, constant(2000));
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

  it("allocates nothing per tick, even with 500 participants and talkers coming and going", async () => {
    const mixer = new Mixer({ sampleRate: 16000, onMix: () => {} });
    const talking = sine(300, 3000, frameSamples(16000), 16000);
    let tick = 0;
    let heard = 0;
    for (let n = 0; n < 500; n++) {
      mixer.addParticipant({
        // Half the room talks, a different half every 7 ticks: talkers are chosen, kept and let go.
        read: (out) => {
          const talks = (n + Math.floor(tick / 7)) % 2 === 0;
          if (talks) out.set(talking);
          return talks;
        },
        write: (frame) => {
          heard += frame[0] as number;
        },
      });
    }
    mixer.play(constant(7, 1_000_000));
    for (; tick < 200; tick++) mixer.tick(); // compiled before counting
    // Each tick reads and writes 500 frames: a single small object per frame would fill the young
    // generation many times over in 2000 ticks and show as garbage collections.
    const collections: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) collections.push(entry.startTime);
    });
    observer.observe({ entryTypes: ["gc"] });
    const start = performance.now();
    for (; tick < 2200; tick++) mixer.tick();
    const end = performance.now();
    await sleep(200); // garbage collection entries reach observers a little later
    observer.disconnect();
    const during = collections.filter((at) => at >= start && at <= end).length;
    assert.ok(during <= 1, `${during} garbage collections during 2000 ticks`);
    assert.notEqual(heard, 0);
    assert.equal(mixer.talkerCount, 3);
  });
});
