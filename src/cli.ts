import { runFromEnvironment } from "./main.js";

const USAGE = "usage: bridgeline start";

/** The `bridgeline` command: `start` runs the service. */
export async function runCli(args: string[]): Promise<number> {
  const [command] = args;
  if (command === "start") {
    await runFromEnvironment();
    return 0;
  }
  process.stderr.write(`${USAGE}\n`);
  return command === undefined || command === "help" || command === "--help" ? 0 : 1;
}
