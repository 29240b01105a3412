#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so there is no build step to forget.
import { register } from "tsx/esm/api";

register();
const { runCli } = await import("../src/cli.ts");
const status = await runCli(process.argv.slice(2));
if (status !== 0) process.exitCode = status;
