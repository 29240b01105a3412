import path from "node:path";

/** Most UTF-8 bytes of the conference name kept in a file name (file systems allow 255 in all). */
const MAX_NAME_BYTES = 120;

/**
 * Characters no file name may hold: path separators, characters Windows refuses (a download is
 * saved there too), control and format characters (U+202E and its kind can disguise an extension),
 * line and paragraph separators, and unpaired surrogates.
 */
const UNSAFE = /[/\\<>:"|?*\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;

/** Where recordings are kept: `<dataDir>/recordings/<recording file>` (the room writes, the API reads). */
export function recordingsDirectory(dataDir: string): string {
  return path.join(dataDir, "recordings");
}

export interface RecordedConference {
  id: number;
  name: string;
  startedAt?: string | null;
}

/**
 * The file name of a conference's recording, named after the conference as the spec asks ("used
 * in the names of recordings"), with the UTC start date when known and the id, which keeps it
 * unique: "Quarterly Review 2027-03-01 (42).wav". The name is stripped of anything unsafe in a
 * file name, of leading dots (hidden files) and of trailing dots and spaces, and shortened.
 *
 * A room that took the conference over records a later part into a file of its own, named for the
 * lease it runs under (unique per conference): "Quarterly Review 2027-03-01 (42)-part3.wav".
 */
export function recordingFileName(conference: RecordedConference, part?: number): string {
  const date = conference.startedAt ? ` ${new Date(conference.startedAt).toISOString().slice(0, 10)}` : "";
  const suffix = part === undefined ? "" : `-part${part}`;
  return `${safeName(conference.name)}${date} (${conference.id})${suffix}.wav`;
}

function safeName(name: string): string {
  const cleaned = name
    .normalize("NFC")
    .replace(UNSAFE, " ")
    .replace(/\s+/g, " ")
    .replace(/^[. ]+/, "");
  let kept = "";
  let bytes = 0;
  for (const character of cleaned) {
    bytes += Buffer.byteLength(character);
    if (bytes > MAX_NAME_BYTES) break;
    kept += character;
  }
  kept = kept.replace(/[. ]+$/, "");
  return kept === "" ? "Conference" : kept;
}
