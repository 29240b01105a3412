/**
 * A media thread: a MediaEngine fed by the main thread's messages. An exception nothing catches
 * ends the thread; the main thread sees it exit and replaces it.
 */
import { parentPort, workerData } from "node:worker_threads";
import { MediaEngine } from "./media-engine.js";
import type { MediaDown, MediaThreadOptions } from "./protocol.js";

const port = parentPort;
if (port === null) throw new Error("media-worker.ts runs as a worker thread");
const engine = new MediaEngine(workerData as MediaThreadOptions, (message, transfer) =>
  port.postMessage(message, transfer),
);
port.on("message", (message: MediaDown | { type: "shutdown" }) => {
  if (message.type === "shutdown") {
    void engine.close().then(() => port.close());
    return;
  }
  engine.receive(message);
});
