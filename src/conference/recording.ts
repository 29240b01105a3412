/**
 * The recording of a room's audio, as the moderator (`*8`) and the API turn it on and off: one WAV
 * file in the data directory's recordings/, named after the conference when it first starts; after a
 * pause the same file goes on. A room that took its conference over records into a part file of its
 * own, never the earlier room's file (that one may be incomplete, or on another machine's disk, and
 * opening it again would truncate it). The media does the writing; this keeps the starts and pauses
 * in order and stores the file's name once it exists.
 */
import path from "node:path";
import { recordingFileName, recordingsDirectory } from "../domain/recording.js";
import type { RoomMedia } from "./ports.js";

export interface RoomRecordingOptions {
  readonly media: RoomMedia;
  readonly dataDir: string;
  /** The conference as it is when the recording first starts (its name names the file). */
  readonly conference: () => { id: number; name: string; startedAt?: string | null };
  /**
   * Set when the room took its conference over: the lease it runs under, which names its part file
   * (`…-part<lease>.wav`, one per lease and so per room).
   */
  readonly part?: number;
  /** The file exists and the mix goes into it: the first time only. */
  readonly onStarted: (fileName: string, file: string) => void;
  readonly onFailed: (error: unknown, file: string) => void;
}

export class RoomRecording {
  readonly #options: RoomRecordingOptions;
  /** Whether the room wants its mix recorded now (false again when it could not start). */
  #on = false;
  /** Whether the media records now, as far as the last start or pause it was asked for. */
  #recording = false;
  #file: { fileName: string; file: string } | undefined;
  /** The file has been made (and its name told). */
  #made = false;
  #closed = false;
  /** Starts and pauses, one after another. */
  #changes: Promise<void> = Promise.resolve();

  constructor(options: RoomRecordingOptions) {
    this.#options = options;
  }

  get on(): boolean {
    return this.#on;
  }

  start(): void {
    if (this.#closed) return;
    this.#on = true;
    this.#follow();
  }

  pause(): void {
    this.#on = false;
    this.#follow();
  }

  /** The media stopped recording by itself (its file could not be written). */
  stopped(): void {
    this.#on = false;
    this.#recording = false;
  }

  /** The room ended: no start or pause from now on (the media's close completes the file). */
  close(): void {
    this.#closed = true;
    this.#on = false;
  }

  /** Resolves once the starts and pauses asked for so far are done. */
  async settled(): Promise<void> {
    await this.#changes;
  }

  /** Brings the media in line with what the room wants, after what was asked before. */
  #follow(): void {
    this.#changes = this.#changes.then(async () => {
      if (this.#closed || this.#on === this.#recording) return;
      const { media } = this.#options;
      if (!this.#on) {
        this.#recording = false;
        await media.pauseRecording().catch(() => undefined);
        return;
      }
      const conference = this.#options.conference();
      const directory = recordingsDirectory(this.#options.dataDir);
      const fileName = this.#file?.fileName ?? recordingFileName(conference, this.#options.part);
      this.#file ??= { fileName, file: path.join(directory, fileName) };
      const { file } = this.#file;
      try {
        await media.startRecording(file);
      } catch (error) {
        this.#on = false;
        if (!this.#closed) this.#options.onFailed(error, file);
        return;
      }
      this.#recording = true;
      if (this.#closed || this.#made) return;
      this.#made = true;
      this.#options.onStarted(fileName, file);
    });
  }
}
