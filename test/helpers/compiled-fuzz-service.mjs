/**
 * bench/fuzz/service.ts over the compiled service (dist/, `npm run build:service`): the same service
 * from the environment and the same heap readings over the IPC channel, in plain JavaScript so that
 * its process runs without tsx's loader (which costs a second of start-up, most of it CPU, on a
 * loaded machine). The fuzz test starts the service with it (FuzzOptions.service.module).
 */
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { runFromEnvironment } from "../../dist/main.js";

const collect = globalThis.gc;
if (collect === undefined) throw new Error("start the fuzzed service with --expose-gc");
process.on("message", (message) => {
  if (message?.type !== "heap") return;
  collect();
  if (message.file !== undefined) writeHeapSnapshot(message.file);
  collect();
  const { heapUsed, rss } = process.memoryUsage();
  const spaces = Object.fromEntries(
    getHeapSpaceStatistics().map((space) => [space.space_name, space.space_used_size]),
  );
  process.send?.({ type: "heap", heapUsed, rss, spaces });
});
process.on("disconnect", () => process.kill(process.pid, "SIGTERM"));
await runFromEnvironment();
