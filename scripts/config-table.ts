/**
 * The README's table of BRIDGELINE_* variables, made from the one in src/config.ts:
 * `npm run docs:config` writes it between the markers; test/config.test.ts fails when the two differ.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { variableRows } from "../src/config.js";

export const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "README.md");
const START = "<!-- configuration table: made from src/config.ts by `npm run docs:config` -->";
const END = "<!-- end of configuration table -->";

/** The variables as a Markdown table, its columns padded to line up in plain text. */
export function configTable(): string {
  const rows = [
    ["Variable", "Default", "Meaning"],
    ...variableRows().map(({ name, row }) => [`\`${name}\``, row.default, row.meaning]),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => (row[column] as string).length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ")} |`;
  const [head, ...body] = rows;
  return [line(head as string[]), line(widths.map((width) => "-".repeat(width))), ...body.map(line)].join(
    "\n",
  );
}

/** The README's text with the table between the markers replaced by `table`. */
export function withTable(readme: string, table: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${START} ... ${END} markers`);
  return `${readme.slice(0, start + START.length)}\n\n${table}\n\n${readme.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(README, withTable(fs.readFileSync(README, "utf8"), configTable()));
}
