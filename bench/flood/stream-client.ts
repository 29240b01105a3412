/**
 * The event-stream client of bench/flood/api-streams.ts: a child process of its own that opens the
 * streams (GET /users/{id}/events, Server-Sent Events) and notes when each attendee-added event
 * arrives on each. `startStreamClient` forks this file, which loads no part of the service.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import { fileURLToPath } from "node:url";

const STREAM_CLIENT_ARG = "--stream-client";
/** Streams the client opens at once while it sets them up. */
const OPENING_AT_ONCE = 50;

/** From the parent to the stream client. */
export type ClientCommand =
  | { type: "open"; baseUrl: string; users: { id: string; authorization: string }[]; perUser: number }
  | { type: "report" };
/** From the stream client: the streams' statuses once open; then each stream's events so far. */
export type ClientReport =
  | { type: "opened"; statuses: Record<string, number> }
  | { type: "events"; perStream: { user: string; arrivals: Record<string, number> }[] };

/** The stream client, ready for commands; killing it closes its streams. */
export async function startStreamClient(): Promise<ChildProcess> {
  const client = fork(fileURLToPath(import.meta.url), [STREAM_CLIENT_ARG]);
  await once(client, "message");
  return client;
}

function runStreamClient(): void {
  const streams: { user: string; arrivals: Record<string, number>; request: http.ClientRequest }[] = [];
  const open = (baseUrl: string, user: { id: string; authorization: string }) =>
    new Promise<number>((resolve) => {
      const arrivals: Record<string, number> = {};
      const request = http.get(
        `${baseUrl}/users/${user.id}/events`,
        { agent: false, headers: { accept: "text/event-stream", authorization: user.authorization } },
        (response) => {
          resolve(response.statusCode ?? 0);
          response.setEncoding("utf8");
          let buffer = "";
          response.on("data", (chunk: string) => {
            buffer += chunk;
            for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
              const block = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              if (!block.includes("event: attendee-added")) continue;
              const data = /^data: (.*)$/m.exec(block)?.[1];
              const attendeeId =
                data === undefined ? undefined : (JSON.parse(data) as { attendeeId: number }).attendeeId;
              if (attendeeId !== undefined) arrivals[attendeeId] = Date.now();
            }
          });
        },
      );
      request.on("error", () => resolve(0));
      streams.push({ user: user.id, arrivals, request });
    });
  process.on("message", async (command: ClientCommand) => {
    if (command.type === "open") {
      const statuses: Record<string, number> = {};
      const all = command.users.flatMap((user) => Array.from({ length: command.perUser }, () => user));
      for (let i = 0; i < all.length; i += OPENING_AT_ONCE) {
        const batch = await Promise.all(
          all.slice(i, i + OPENING_AT_ONCE).map((user) => open(command.baseUrl, user)),
        );
        for (const status of batch) statuses[status] = (statuses[status] ?? 0) + 1;
      }
      process.send?.({ type: "opened", statuses } satisfies ClientReport);
    } else {
      // The streams stay open: the parent may ask again, and kills this process when done.
      process.send?.({
        type: "events",
        perStream: streams.map(({ user, arrivals }) => ({ user, arrivals })),
      } satisfies ClientReport);
    }
  });
  process.send?.("ready");
}

if (process.argv.includes(STREAM_CLIENT_ARG)) runStreamClient();
