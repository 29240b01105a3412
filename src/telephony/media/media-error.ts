/**
 * Why a media request failed, by code: a media thread answers a failed request with the code and the
 * cause's words, and the main thread makes the same MediaError of them, so that what it does next is
 * decided by code, never by wording (an Error's class does not cross a thread).
 */
export const MEDIA_ERRORS = {
  MEDIA_ERR_NO_FREE_PORT: "every RTP port pair of the thread's range is in use",
  MEDIA_ERR_PORT_TAKEN: "the RTP port pair asked for (a stream moving here keeps its port) cannot be bound",
  MEDIA_ERR_NO_STREAM: "the stream named is not on the thread (closed, or moved away)",
  MEDIA_ERR_NO_MIX: "the mix named is not on the thread (closed, or failed)",
  MEDIA_ERR_MIX_CLOSED: "the mix closed while the request was being carried out",
  MEDIA_ERR_RECORDING: "the recording's file could not be made or written, now or earlier",
  MEDIA_ERR_THREAD_FAILED: "the media thread died (said by the main thread, to what was waiting on it)",
  MEDIA_ERR_NOT_MOVABLE:
    "the stream cannot move to another thread (a WebRTC peer's transport stays where it began)",
  MEDIA_ERR_OFFER: "a WebRTC offer that cannot be answered (not SDP, or no audio in Opus)",
  MEDIA_ERR_INTERNAL: "anything else: a bug, or a part of the installation missing (a prompt file)",
} as const;

export type MediaErrorCode = keyof typeof MEDIA_ERRORS;

export class MediaError extends Error {
  constructor(
    readonly code: MediaErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "MediaError";
  }
}

/** The code a failure is answered with: a MediaError's own, anything else's MEDIA_ERR_INTERNAL. */
export function mediaErrorCode(error: unknown): MediaErrorCode {
  return error instanceof MediaError ? error.code : "MEDIA_ERR_INTERNAL";
}
