import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { NotFound } from "../../domain/errors.js";
import { recordingsDirectory } from "../../domain/recording.js";
import {
  blockBytes,
  describeWavFormat,
  doubledRate,
  joinedWavFormat,
  maxWavDataBytes,
  readWavHeader,
  sameWavFormat,
  WAV_HEADER_BYTES,
  type WavFormat,
  writeWavHeader,
} from "../../domain/wav-header.js";
import { getRecordingFiles } from "../../store/recordings.js";
import { HttpError } from "../http-errors.js";
import { type ApiContext, idParam, resource } from "../server.js";

const WAV_TYPE = "audio/wav";

/** The names WAV goes by: audio/wav in browsers and most tools, audio/vnd.wave in RFC 2361. */
const WAV_MEDIA_TYPES = [WAV_TYPE, "audio/wave", "audio/x-wav", "audio/vnd.wave"];

/** One file of a recording as the download serves it: its samples, as far as its header counts them. */
interface RecordingPart {
  readonly filePath: string;
  readonly format: WavFormat;
  /** The bytes it gives the download (twice those read when `doubled`). */
  readonly dataBytes: number;
  /** At half the download's rate: its samples doubled as they are read. */
  readonly doubled?: boolean;
}

/** The part as the download in `format` serves it. */
function atRate(format: WavFormat): (part: RecordingPart) => RecordingPart {
  return (part) =>
    part.format.sampleRate === format.sampleRate
      ? part
      : { ...part, dataBytes: part.dataBytes * 2, doubled: true };
}

export async function recordingRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users/:userId/conferences/:conferenceId/recording",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const conferenceId = idParam(request, "conferenceId");
        const fileNames = await getRecordingFiles(api.store, userId, conferenceId);
        const parts = await presentParts(recordingsDirectory(api.dataDir), fileNames, (fileName) =>
          request.log.warn(
            { conferenceId, file: fileName },
            "a recording's part is not in the recordings folder, or holds no audio: the download goes on without it",
          ),
        );
        const [first] = parts;
        if (first === undefined) throw new NotFound("recording");
        // Samples of another width, or a rate not made good by doubling, would play as noise.
        const format = joinedWavFormat(parts.map((part) => part.format));
        if (format === undefined) {
          const other = parts.find((part) => !sameWavFormat(part.format, first.format)) ?? first;
          throw new HttpError(
            "BL_ERR_INTERNAL",
            `The recording's parts differ in format (${describeWavFormat(first.format)}, ` +
              `${describeWavFormat(other.format)}): they cannot be joined into one WAV file`,
          );
        }
        const served = fitted(parts.map(atRate(format)), maxWavDataBytes(format), request.log, conferenceId);
        const dataBytes = served.reduce((sum, part) => sum + part.dataBytes, 0);
        const header = writeWavHeader(format, dataBytes);
        const body = dataBytes === 0 ? header : Readable.from(joined(header, served));
        return reply
          .type(WAV_TYPE)
          .header("content-length", WAV_HEADER_BYTES + dataBytes)
          .header("content-disposition", attachment(fileNames[0] ?? ""))
          .send(body);
      },
    },
    {
      GET: {
        summary: "The conference's recording (WAV)",
        media: { type: "audio/wav", description: "The recording" },
      },
    },
    { produces: WAV_MEDIA_TYPES },
  );
}

/**
 * The recording's files in the folder, in order, each with what its header says now. A name that
 * is not one file in the folder (never a path out of it), or whose file is gone or shorter than a
 * header, is told and left out.
 */
async function presentParts(
  directory: string,
  fileNames: readonly string[],
  missing: (fileName: string) => void,
): Promise<RecordingPart[]> {
  const parts: RecordingPart[] = [];
  for (const fileName of fileNames) {
    const part =
      fileName === path.basename(fileName) ? await readPart(path.join(directory, fileName)) : undefined;
    if (part === undefined) missing(fileName);
    else parts.push(part);
  }
  return parts;
}

/**
 * The header as it is now, and the data bytes it counts (in whole blocks); undefined when the file
 * is not there, or is shorter than a header (made by a room that went before writing one). A
 * recording still being written grows behind its header: its samples reach the file before the
 * header that counts them, so serving exactly what this header counts gives a consistent file even
 * while the conference runs.
 */
async function readPart(filePath: string): Promise<RecordingPart | undefined> {
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(filePath, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const header = Buffer.alloc(WAV_HEADER_BYTES);
    const { bytesRead } = await file.read(header, 0, WAV_HEADER_BYTES, 0);
    if (bytesRead < WAV_HEADER_BYTES) return undefined;
    const { size } = await file.stat();
    let read: ReturnType<typeof readWavHeader>;
    try {
      read = readWavHeader(header);
    } catch (error) {
      throw new Error(`${filePath}: ${(error as Error).message}`, { cause: error });
    }
    const counted = Math.min(read.dataBytes, size - WAV_HEADER_BYTES);
    const block = blockBytes(read.format);
    return { filePath, format: read.format, dataBytes: counted - (counted % block) };
  } finally {
    await file.close();
  }
}

/** The parts as far as one WAV header can count their data together (4 GiB); the rest is left out, told. */
function fitted(
  parts: readonly RecordingPart[],
  maxDataBytes: number,
  log: FastifyBaseLogger,
  conferenceId: number,
): readonly RecordingPart[] {
  const total = parts.reduce((sum, part) => sum + part.dataBytes, 0);
  if (total <= maxDataBytes) return parts;
  log.warn(
    { conferenceId, bytesLeftOut: total - maxDataBytes },
    "the recording's parts together pass what a WAV file can hold: the download ends there",
  );
  let room = maxDataBytes;
  return parts.map((part) => {
    // A doubled part gives 4 bytes a sample read.
    const step = part.doubled ? 4 : blockBytes(part.format);
    const dataBytes = Math.min(part.dataBytes, room - (room % step));
    room -= dataBytes;
    return { ...part, dataBytes };
  });
}

/** The header, then each part's samples in order, read as they are sent. */
async function* joined(header: Buffer, parts: readonly RecordingPart[]) {
  yield header;
  for (const { filePath, dataBytes, doubled } of parts) {
    if (dataBytes === 0) continue;
    const read = doubled ? dataBytes / 2 : dataBytes;
    const samples = createReadStream(filePath, { start: WAV_HEADER_BYTES, end: WAV_HEADER_BYTES + read - 1 });
    yield* doubled ? doubledRate(samples) : samples;
  }
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
