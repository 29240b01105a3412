import type { StreamStatus } from "./live.js";

const WORDS: Record<StreamStatus, string> = {
  connecting: "Connecting…",
  live: "Live",
  lost: "Connection lost — reconnecting…",
  reconnected: "Reconnected",
};

/** The event stream's state in words, announced when it changes. */
export function StreamState({ status }: { status: StreamStatus }) {
  return (
    <p class={`stream stream-${status}`} role="status" aria-live="polite">
      <span class="dot" aria-hidden="true" />
      {WORDS[status]}
    </p>
  );
}
