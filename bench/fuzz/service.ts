/**
 * The service under fuzzing, as `npm start` runs it (runFromEnvironment: configuration from the
 * environment, its own handlers for unhandled rejections and uncaught exceptions, logs on stdout),
 * in a child process started with --expose-gc. The fuzzer asks over the IPC channel for the heap
 * after a full collection.
 */
import { runFromEnvironment } from "../../src/main.js";

const collect = (globalThis as { gc?: () => void }).gc;
if (collect === undefined) throw new Error("start the fuzzed service with --expose-gc");
process.on("message", (message: { type?: string }) => {
  if (message.type !== "heap") return;
  collect();
  collect();
  const { heapUsed, rss } = process.memoryUsage();
  process.send?.({ type: "heap", heapUsed, rss });
});
await runFromEnvironment();
