import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { NotFound } from "../../domain/errors.js";
import { recordingsDirectory } from "../../domain/recording.js";
import { getRecordingFile } from "../../store/recordings.js";
import { type ApiContext, idParam, resource } from "../server.js";

const WAV_TYPE = "audio/wav";
const HEADER_BYTES = 44;

/** The names WAV goes by: audio/wav in browsers and most tools, audio/vnd.wave in RFC 2361. */
const WAV_MEDIA_TYPES = [WAV_TYPE, "audio/wave", "audio/x-wav", "audio/vnd.wave"];

export async function recordingRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users/:userId/conferences/:conferenceId/recording",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const fileName = await getRecordingFile(api.store, userId, idParam(request, "conferenceId"));
        // A name is one file in the folder, never a path out of it.
        if (!fileName || fileName !== path.basename(fileName)) throw new NotFound("recording");
        const filePath = path.join(recordingsDirectory(api.dataDir), fileName);
        const { header, dataBytes } = await readRecordingHeader(filePath);
        const body =
          dataBytes === 0
            ? header
            : Readable.from(concat(header, filePath, HEADER_BYTES, HEADER_BYTES + dataBytes - 1));
        return reply
          .type(WAV_TYPE)
          .header("content-length", HEADER_BYTES + dataBytes)
          .header("content-disposition", attachment(fileName))
          .send(body);
      },
    },
    { produces: WAV_MEDIA_TYPES },
  );
}

/**
 * The header as it is now, and the data bytes it counts. A recording still being written grows
 * behind it: its samples reach the file before the header that counts them, so serving exactly
 * what this header counts gives a consistent file even while the conference runs.
 */
async function readRecordingHeader(filePath: string): Promise<{ header: Buffer; dataBytes: number }> {
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(filePath, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new NotFound("recording");
    throw error;
  }
  try {
    const header = Buffer.alloc(HEADER_BYTES);
    const { bytesRead } = await file.read(header, 0, HEADER_BYTES, 0);
    const { size } = await file.stat();
    if (
      bytesRead < HEADER_BYTES ||
      header.toString("latin1", 0, 4) !== "RIFF" ||
      header.toString("latin1", 36, 40) !== "data"
    ) {
      throw new Error(`${filePath} does not start with a canonical WAV header`);
    }
    return { header, dataBytes: Math.min(header.readUInt32LE(40), size - HEADER_BYTES) };
  } finally {
    await file.close();
  }
}

async function* concat(header: Buffer, filePath: string, start: number, end: number) {
  yield header;
  yield* createReadStream(filePath, { start, end });
}

/**
 * Content-Disposition for a download (RFC 6266): a quoted ASCII filename for every client, and
 * filename* in UTF-8 (RFC 8187) when the name is not plain ASCII.
 */
export function attachment(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "\\$&");
  if (ascii === fileName) return `attachment; filename="${ascii}"`;
  // RFC 8187 attr-char leaves only ALPHA / DIGIT / "!#$&+-.^_`|~" unencoded.
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
