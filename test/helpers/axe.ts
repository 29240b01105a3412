/**
 * axe-core's accessibility rules run in a page under test: its script (node_modules/axe-core,
 * axe.min.js) is evaluated in the page through the browser's protocol, which the page's
 * Content-Security-Policy does not stop (a script tag would be refused), and stays for the
 * document's life, so each view of a single-page app is checked where it stands.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { AxeResults } from "axe-core";
import type { Page } from "playwright-core";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** The serious and critical violations axe finds in the page as it is, one line each (rule, what, where). */
export async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate(() =>
    (window as unknown as { axe: { run(context: Document, options: object): Promise<AxeResults> } }).axe.run(
      document,
      { resultTypes: ["violations"] },
    ),
  );
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help}, at ${violation.nodes
          .map((node) => node.target.join(" "))
          .join("; ")}`,
    );
}
