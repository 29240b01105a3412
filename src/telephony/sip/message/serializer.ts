/** SIP message serialization (RFC 3261 section 7): start line, one line per header value, CRLF, body. */
import { KNOWN_NAMES, type SipMessage } from "./sip-message.js";

const CRLF = "\r\n";

/** What starts the line of a known field after the line before it: one string to append instead of three. */
const LINE_STARTS = new Map(KNOWN_NAMES.map((name) => [name, `${CRLF}${name}: `]));

/**
 * The wire form of a message. Content-Length always states the body's octet count (18.3, mandatory on
 * streams): an existing Content-Length field is rewritten in place, a missing one appended.
 */
export function serializeMessage(message: SipMessage): Buffer {
  let head =
    message.kind === "request"
      ? `${message.method} ${message.uri} ${message.version}`
      : `${message.version} ${message.status} ${message.reason}`;
  const contentLength = `${CRLF}Content-Length: ${message.body.length}`;
  let lengthWritten = false;
  const headers = message.headers;
  for (let i = 0; i < headers.size; i++) {
    const name = headers.nameAt(i) as string;
    if (name === "Content-Length") {
      if (!lengthWritten) head += contentLength;
      lengthWritten = true;
    } else {
      head += LINE_STARTS.get(name) ?? `${CRLF}${name}: `;
      head += headers.valueAt(i);
    }
  }
  if (!lengthWritten) head += contentLength;
  head += CRLF + CRLF;
  const headLength = Buffer.byteLength(head);
  const wire = Buffer.allocUnsafe(headLength + message.body.length);
  // Without multi-byte characters the UTF-8 octets are the latin1 ones, which are written faster
  wire.write(head, 0, headLength === head.length ? "latin1" : "utf8");
  message.body.copy(wire, headLength);
  return wire;
}
