/**
 * Trusted sources at the running service: requests only from the configured addresses (or, by
 * default, the trunk's), 403 or silence for the rest, and a refused caller never becomes a call.
 * Loopback has many addresses (127.0.0.0/8): the "trunk" and the strangers are 127.0.0.2 and 127.0.0.1.
 */
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { after, describe, it } from "node:test";
import { type Config, loadConfig } from "../../../src/config.js";
import { parseMessage } from "../../../src/telephony/sip/message/parser.js";
import { startTestService, type TestService } from "../../helpers/service.js";

const services: TestService[] = [];
after(async () => {
  for (const service of services) await service.close();
});

async function service(sip: Partial<Config["sip"]>): Promise<TestService> {
  const started = await startTestService({
    sip: {
      ...loadConfig({}).sip,
      bindAddress: "127.0.0.1",
      port: 0,
      accessNumbers: ["+16045550199"],
      ...sip,
    },
  });
  services.push(started);
  return started;
}

/** Sends `method` from `address` to the service; resolves with the final status, or null after 1.5 s. */
async function ask(
  api: TestService,
  address: string,
  method: "OPTIONS" | "INVITE",
  options: { viaTransport?: "UDP" | "TLS"; sdp?: string } = {},
): Promise<number | null> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, address, resolve));
  const { port } = socket.address();
  const status = new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), 1500);
    socket.on("message", (bytes) => {
      const parsed = parseMessage(bytes, { stream: false });
      if (parsed.ok && parsed.message.kind === "response" && parsed.message.status >= 200) {
        clearTimeout(timer);
        resolve(parsed.message.status);
      }
    });
  });
  const target = `sip:+16045550199@127.0.0.1:${api.service.sipPort}`;
  const sdp =
    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n";
  const body = method === "INVITE" ? (options.sdp ?? sdp) : "";
  const request = [
    `${method} ${target} SIP/2.0`,
    `Via: SIP/2.0/${options.viaTransport ?? "UDP"} ${address}:${port};branch=z9hG4bK${Math.random().toString(36).slice(2)};rport`,
    "From: <sip:+16045550150@127.0.0.1>;tag=stranger",
    `To: <${target}>`,
    `Call-ID: ${Math.random().toString(36).slice(2)}@${address}`,
    `CSeq: 1 ${method}`,
    `Contact: <sip:stranger@${address}:${port}>`,
    "Max-Forwards: 70",
    ...(method === "INVITE" ? ["Content-Type: application/sdp"] : []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    "",
    body,
  ].join("\r\n");
  socket.send(Buffer.from(request), api.service.sipPort, "127.0.0.1");
  try {
    return await status;
  } finally {
    socket.close();
  }
}

describe("trusted SIP sources", () => {
  it("by default only the trunk's address is trusted: others get 403, and their INVITE never becomes a call", async () => {
    const api = await service({ trunk: "sip:127.0.0.2:5070" });
    assert.equal(await ask(api, "127.0.0.2", "OPTIONS"), 200);
    assert.equal(await ask(api, "127.0.0.1", "OPTIONS"), 403);
    assert.equal(await ask(api, "127.0.0.1", "INVITE"), 403);
    assert.equal(api.service.telephony.activeCalls, 0);
    assert.ok(!api.logs.some((line) => line.includes('"msg":"incoming call"')), "no call was taken");
    assert.ok(api.logs.some((line) => line.includes("SIP request from an untrusted source refused")));
  });

  it("BRIDGELINE_SIP_TRUSTED lists the sources, and with drop a stranger hears nothing", async () => {
    const api = await service({ trusted: ["127.0.0.1/32", "10.0.0.0/8"], untrusted: "drop" });
    assert.equal(await ask(api, "127.0.0.1", "OPTIONS"), 200);
    assert.equal(await ask(api, "127.0.0.3", "OPTIONS"), null);
    assert.equal(await ask(api, "127.0.0.3", "INVITE"), null);
    assert.ok(api.logs.some((line) => line.includes("SIP request from an untrusted source dropped")));
  });

  it("without a trunk or a list, anyone is heard (with a warning at start)", async () => {
    const api = await service({});
    assert.equal(await ask(api, "127.0.0.4", "OPTIONS"), 200);
    assert.ok(api.logs.some((line) => line.includes("SIP requests are taken from anywhere")));
  });

  it("SRTP keys follow the transport a call truly came on, not what its Via claims", async () => {
    const api = await service({ dialInSrtp: "required" });
    const savp = [
      "v=0",
      "o=- 1 1 IN IP4 127.0.0.1",
      "s=-",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      "m=audio 40002 RTP/SAVP 0",
      `a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${Buffer.alloc(30, 7).toString("base64")}`,
      "",
    ].join("\r\n");
    // Over UDP, SRTP required cannot be had: 488, even when the Via says TLS.
    assert.equal(await ask(api, "127.0.0.1", "INVITE", { viaTransport: "TLS", sdp: savp }), 488);
    assert.ok(
      api.logs.some((line) => line.includes("call refused: SRTP is required, and needs SIP over TLS")),
    );
  });
});
