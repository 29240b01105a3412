/**
 * The calls in progress a stack takes (`maxCalls`): an INVITE past them is refused 503 with
 * Retry-After before any call is made of it (and the observer told, for the metrics), and a call
 * that ends makes room. Raw INVITEs over UDP.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createSocket } from "node:dgram";
import { test } from "node:test";
import type { IncomingCall } from "../../../src/telephony/call.js";
import { parseMessage } from "../../../src/telephony/sip/message/parser.js";
import type { SipResponse } from "../../../src/telephony/sip/message/sip-message.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import { rtpPortRange } from "../../helpers/sipp.js";

test("past the calls in progress allowed, an INVITE gets 503 with Retry-After; a call ended makes room", async () => {
  let refusedAtLimit = 0;
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    rtpPorts: rtpPortRange(),
    maxCalls: 1,
    observer: {
      placed: () => {},
      answered: () => {},
      failed: () => {},
      received: () => {},
      refusedAtLimit: () => refusedAtLimit++,
    },
  });
  const calls: IncomingCall[] = [];
  telephony.onIncomingCall((call) => {
    calls.push(call);
    call.ring();
  });
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const port = socket.address().port;
  const finals = new Map<string, (response: SipResponse) => void>();
  socket.on("message", (bytes) => {
    const parsed = parseMessage(bytes, { stream: false });
    if (!parsed.ok || parsed.message.kind !== "response") return;
    const { message } = parsed;
    if (message.status >= 180) finals.get(message.headers.callId ?? "")?.(message);
  });
  /** Sends an INVITE and resolves with its 180 or final response. */
  const invite = (callId: string): Promise<SipResponse> => {
    const answered = new Promise<SipResponse>((resolve) => finals.set(callId, resolve));
    const text = [
      `INVITE sip:+16045550199@127.0.0.1:${telephony.sipPort} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK${callId}`,
      "Max-Forwards: 70",
      `From: <sip:+16045550111@127.0.0.1>;tag=${callId}`,
      "To: <sip:+16045550199@127.0.0.1>",
      `Call-ID: ${callId}`,
      "CSeq: 1 INVITE",
      `Contact: <sip:caller@127.0.0.1:${port}>`,
      "Content-Length: 0",
      "",
      "",
    ].join("\r\n");
    socket.send(text, telephony.sipPort, "127.0.0.1");
    return answered;
  };
  try {
    const id = () => randomBytes(6).toString("hex");
    assert.equal((await invite(id())).status, 180);
    const refused = await invite(id());
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("Retry-After"), "60");
    assert.equal(calls.length, 1, "the refused INVITE never became a call");
    assert.equal(refusedAtLimit, 1);
    calls[0]?.reject(486, "Busy Here");
    assert.equal((await invite(id())).status, 180, "room again once the first call ended");
    assert.equal(calls.length, 2);
  } finally {
    socket.close();
    await telephony.close();
  }
});
