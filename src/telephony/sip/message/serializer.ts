/** SIP message serialization (RFC 3261 section 7): start line, one line per header value, CRLF, body. */
import type { SipMessage } from "./sip-message.js";

const CRLF = "\r\n";

/**
 * The wire form of a message. Content-Length always states the body's octet count (18.3, mandatory on
 * streams): an existing Content-Length field is rewritten in place, a missing one appended.
 */
export function serializeMessage(message: SipMessage): Buffer {
  let head =
    message.kind === "request"
      ? `${message.method} ${message.uri} ${message.version}${CRLF}`
      : `${message.version} ${message.status} ${message.reason}${CRLF}`;
  const contentLength = `Content-Length: ${message.body.length}${CRLF}`;
  let lengthWritten = false;
  for (const [name, value] of message.headers) {
    if (name === "Content-Length") {
      if (!lengthWritten) head += contentLength;
      lengthWritten = true;
    } else {
      head += `${name}: ${value}${CRLF}`;
    }
  }
  if (!lengthWritten) head += contentLength;
  head += CRLF;
  const headLength = Buffer.byteLength(head);
  const wire = Buffer.allocUnsafe(headLength + message.body.length);
  // Without multi-byte characters the UTF-8 octets are the latin1 ones, which are written faster
  wire.write(head, 0, headLength === head.length ? "latin1" : "utf8");
  message.body.copy(wire, headLength);
  return wire;
}
