/** What every view of the console does the same way: its title, its heading's focus, its errors. */
import { useEffect, useRef } from "preact/hooks";
import { ApiError } from "./api.js";

/**
 * Names the document after the view and moves focus to its heading when the view opens, so that a
 * screen reader announces where the person is and Tab continues from the top of the new view.
 */
export function useViewHeading(title: string) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} — Bridgeline console`;
  }, [title]);
  useEffect(() => {
    heading.current?.focus();
  }, []);
  return heading;
}

/** The service's own messages for a refused request (its `errors`), else what went wrong. */
export function messagesOf(caught: unknown): string[] {
  if (caught instanceof ApiError && caught.messages.length > 0) return caught.messages;
  return [caught instanceof Error ? caught.message : String(caught)];
}
