/**
 * The recordings disk fills up mid-conference: the recording stops with a log line and a
 * "recording-stopped" event that says why, the conference shows record-audio false, its phones keep
 * hearing each other, and the file holds a playable WAV of what fitted.
 *
 * The disk is a real one: a tmpfs of 64 KiB mounted on the data directory's recordings/ (a WAV
 * takes 16 KB a second, so it fills in about four seconds). Mounting needs root (CAP_SYS_ADMIN);
 * without it the test is skipped, and under CI=true that fails the run.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { EventStream } from "../helpers/event-stream.js";
import { createUser, startTestService } from "../helpers/service.js";
import { skipWithout } from "../helpers/sipp.js";
import { textOf } from "../helpers/xml.js";
import {
  allConnected,
  assertHeardEachOther,
  conferenceOf,
  sipCallingPhones,
  startPhone,
  startRoom,
} from "./rooms.js";

const DISK_BYTES = 64 * 1024;

/** Mounts a tmpfs of `bytes` on `dir`; a reason to skip when this machine does not let us. */
function mountSmallDisk(dir: string, bytes: number): string | undefined {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir], { stdio: "pipe" });
    return undefined;
  } catch (error) {
    const reason = `cannot mount a tmpfs (needs root): ${String((error as Error).message).split("\n")[0]}`;
    if (process.env.CI === "true") throw new Error(reason);
    return reason;
  }
}

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-disk-full-"));
const recordings = path.join(dataDir, "recordings");
fs.mkdirSync(recordings);
cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
const skip = skipWithout("baresip") || mountSmallDisk(recordings, DISK_BYTES) || false;
// Undone first (cleanups run last to first): the directory cannot be removed while mounted on.
if (!skip) cleanups.push(async () => execFileSync("umount", [recordings]));

describe("the recordings disk full", { skip }, () => {
  test("the recording stops with a log line and an event, the conference and its audio go on", async (t) => {
    const phones = [
      await startPhone(cleanups, "+16045550401", 440),
      await startPhone(cleanups, "+16045550402", 880),
    ];
    const api = await startTestService({
      dataDir,
      sip: sipCallingPhones(phones),
    });
    cleanups.push(() => api.close());
    const owner = await createUser(api);
    const stream = await EventStream.open(`${api.httpUrl}/users/${owner.id}/events`, { auth: owner.auth });
    cleanups.push(async () => stream.close());
    const room = await startRoom(api, owner, phones, '<record-audio type="boolean">true</record-audio>');
    await allConnected(api, owner, [room]);

    const stopped = await stream.waitFor(
      "the recording stopping",
      (event) => event.type === "recording-stopped" && event.data.conferenceId === room.id,
      30_000,
    );
    assert.match(stopped.data.reason ?? "", /could not be written.*ENOSPC|no space left/i);
    assert.ok(
      api.logs.some(
        (line) =>
          line.includes("recording stopped: its file could not be written") &&
          line.includes(`"conferenceId":${room.id}`) &&
          /ENOSPC|no space left/i.test(line),
      ),
      "a log line names the conference and the full disk",
    );
    const conference = await conferenceOf(api, owner, room);
    assert.equal(textOf(conference, "state"), "started");
    assert.equal(textOf(conference, "record-audio"), "false");

    // The room goes on after the failure: two more seconds of each phone hearing the other.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(textOf(await conferenceOf(api, owner, room), "state"), "started");
    await assertHeardEachOther(room, 2);

    // What fitted is a playable WAV: its header counts the whole seconds the file holds (a second
    // cut short by the full disk may trail them, uncounted).
    const [file] = fs.readdirSync(recordings);
    assert.ok(file !== undefined, "the recording's file exists");
    const bytes = fs.readFileSync(path.join(recordings, file));
    assert.ok(bytes.length <= DISK_BYTES, `the file has ${bytes.length} bytes`);
    assert.equal(bytes.toString("ascii", 0, 4), "RIFF");
    const dataBytes = bytes.readUInt32LE(40);
    assert.ok(dataBytes > 0 && dataBytes <= bytes.length - 44, `the header counts ${dataBytes} bytes`);
    t.diagnostic(
      `disk ${DISK_BYTES} bytes: the file holds ${bytes.length} bytes, ${dataBytes / 16_000} s of audio counted`,
    );
  });
});
