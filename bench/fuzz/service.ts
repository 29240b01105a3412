/**
 * The service under fuzzing, as `npm start` runs it (runFromEnvironment: configuration from the
 * environment, its own handlers for unhandled rejections and uncaught exceptions, logs on stdout),
 * in a child process started with --expose-gc. The fuzzer asks over the IPC channel for the heap
 * after a full collection.
 */
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { runFromEnvironment } from "../../src/main.js";

const collect = (globalThis as { gc?: () => void }).gc;
if (collect === undefined) throw new Error("start the fuzzed service with --expose-gc");
process.on("message", (message: { type?: string; file?: string }) => {
  if (message.type !== "heap") return;
  collect();
  // FUZZ_SNAPSHOTS=<dir>: a heap snapshot with each reading, to see what grew.
  if (message.file !== undefined) writeHeapSnapshot(message.file);
  collect();
  const { heapUsed, rss } = process.memoryUsage();
  const spaces = Object.fromEntries(
    getHeapSpaceStatistics().map((space) => [space.space_name, space.space_used_size]),
  );
  process.send?.({ type: "heap", heapUsed, rss, spaces });
});
// A fuzzer that died (killed, say) leaves the channel closed: stop as on SIGTERM rather than linger.
process.on("disconnect", () => process.kill(process.pid, "SIGTERM"));
await runFromEnvironment();
