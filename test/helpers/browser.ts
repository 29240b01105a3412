/**
 * Headless Chromium (Debian's `chromium`) driven by playwright-core, for end-to-end tests of the
 * console. Pages trust the test service's self-signed certificate and collect what went wrong in
 * the page (uncaught errors, console errors) for failure messages.
 */
import { accessSync, constants } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** The `skip` option for a test that needs Chromium; under CI=true a missing browser is an error. */
export function skipWithoutChromium(): string | false {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return false;
  } catch {
    if (process.env.CI === "true") throw new Error(`${CHROMIUM} is not installed, and CI=true requires it`);
    return `${CHROMIUM} is not installed (Debian: apt-get install chromium)`;
  }
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

export interface TestPage {
  page: Page;
  /** Uncaught exceptions and console errors of the page, in order. */
  problems: string[];
  close(): Promise<void>;
}

/** A page in a fresh context (its own cookies) at `baseURL`, English, desktop size unless told. */
export async function openPage(
  browser: Browser,
  baseURL: string,
  viewport = { width: 1280, height: 900 },
): Promise<TestPage> {
  const context = await browser.newContext({ baseURL, ignoreHTTPSErrors: true, locale: "en-US", viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    // Chromium logs every 4xx answer as "Failed to load resource"; the API's 404s and 409s are answers.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      problems.push(`console error: ${message.text()}`);
    }
  });
  return { page, problems, close: () => context.close() };
}

/** Signs in to the console at /console/ with the credentials (a wrong `password` to see it refused). */
export async function signIn(page: Page, auth: [string, string], password = auth[1]): Promise<void> {
  await page.goto("/console/");
  await page.getByLabel("E-mail address").fill(auth[0]);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}
