#!/usr/bin/env node
// Runs the compiled service: the JavaScript that `npm install` (or `npm run build`) makes from src/
// into dist/, with no TypeScript loader in the process.
import { existsSync } from "node:fs";

const entry = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write("bridgeline: dist/cli.js is missing: build the service with `npm run build`\n");
  process.exit(1);
}
const { runCli } = await import(entry.href);
const status = await runCli(process.argv.slice(2));
if (status !== 0) process.exitCode = status;
