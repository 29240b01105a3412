import { after } from "node:test";

export interface Stoppable {
  stop(): Promise<unknown>;
}

/**
 * A test file's register of what it started (peers, services, captures): `stopAfter(thing)` keeps
 * it, and returns it, to be stopped once the file's tests are over, the last started first (a
 * service before the peers it calls).
 */
export function stoppedAfterTests(): <T extends Stoppable>(thing: T) => T {
  const started: Stoppable[] = [];
  after(async () => {
    for (const thing of started.reverse()) await thing.stop();
  });
  return (thing) => {
    started.push(thing);
    return thing;
  };
}
