import type { FastifyInstance } from "fastify";
import { resource } from "../server.js";

/**
 * What readiness depends on, each checked when asked: a problem's description, or undefined when
 * the part works. Checks run together and each is given `READINESS_TIMEOUT_MS`.
 */
export type ReadinessChecks = Readonly<Record<string, () => Promise<string | undefined>>>;

/** A check that has not answered by then counts as failed: a load balancer's probe will not wait. */
const READINESS_TIMEOUT_MS = 2000;

/**
 * Probes for load balancers and orchestrators, without credentials: `/health/live` says the process
 * answers; `/health/ready` says whether it can serve (200) or not (503), naming each check.
 */
export async function healthRoutes(
  app: FastifyInstance,
  { checks }: { checks: ReadinessChecks },
): Promise<void> {
  const json = { produces: ["application/json"] };
  resource(
    app,
    "/health/live",
    {
      GET: async (_request, reply) => {
        reply.header("cache-control", "no-store").type("application/json");
        return { status: "live" };
      },
    },
    json,
  );
  resource(
    app,
    "/health/ready",
    {
      GET: async (_request, reply) => {
        const results = await runReadinessChecks(checks);
        const ready = results.every(([, result]) => result === "ok");
        reply
          .status(ready ? 200 : 503)
          .header("cache-control", "no-store")
          .type("application/json");
        return { status: ready ? "ready" : "not ready", checks: Object.fromEntries(results) };
      },
    },
    json,
  );
}

/** Every check, at once, each given READINESS_TIMEOUT_MS: its name and "ok" or the problem. */
export function runReadinessChecks(checks: ReadinessChecks): Promise<(readonly [string, string])[]> {
  return Promise.all(
    Object.entries(checks).map(async ([name, check]) => [name, (await withTimeout(check)) ?? "ok"] as const),
  );
}

async function withTimeout(check: () => Promise<string | undefined>): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer in ${READINESS_TIMEOUT_MS / 1000} s`), READINESS_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      check().catch((error: unknown) => (error instanceof Error ? error.message : String(error))),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
