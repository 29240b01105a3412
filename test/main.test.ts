/** The service as `npm start` wires it: the SIP stack runs beside the API and answers on its port. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createSocket } from "node:dgram";
import { once } from "node:events";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../src/config.js";
import { startTestService, type TestService } from "./helpers/service.js";

function sipRequest(method: string, port: number, transport: "UDP" | "TCP", localPort: number): string {
  return [
    `${method} sip:+16045550199@127.0.0.1:${port} SIP/2.0`,
    `Via: SIP/2.0/${transport} 127.0.0.1:${localPort};branch=z9hG4bK${randomBytes(6).toString("hex")}`,
    "Max-Forwards: 70",
    "From: <sip:probe@127.0.0.1>;tag=probe",
    "To: <sip:+16045550199@127.0.0.1>",
    `Call-ID: ${randomBytes(8).toString("hex")}`,
    `CSeq: 1 ${method}`,
    `Contact: <sip:probe@127.0.0.1:${localPort}>`,
    "Content-Length: 0",
    "",
    "",
  ].join("\r\n");
}

/** Sends one request over UDP and collects the status lines of the responses for `waitMs`. */
async function overUdp(method: string, port: number, waitMs = 400): Promise<number[]> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const statuses: number[] = [];
  socket.on("message", (bytes) => statuses.push(Number(/^SIP\/2\.0 (\d{3})/.exec(String(bytes))?.[1])));
  socket.send(sipRequest(method, port, "UDP", socket.address().port), port, "127.0.0.1");
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  socket.close();
  return statuses;
}

describe("the service's SIP stack", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  it("logs its SIP port and warns that no trunk is configured", () => {
    const started = service.logs
      .map((line) => JSON.parse(line))
      .find((entry) => entry.msg === "bridgeline started");
    assert.equal(started?.sipPort, service.service.sipPort);
    assert.ok(service.logs.some((line) => line.includes("no SIP trunk configured (BRIDGELINE_SIP_TRUNK)")));
  });

  it("answers OPTIONS 200 over UDP", async () => {
    assert.deepEqual(await overUdp("OPTIONS", service.service.sipPort), [200]);
  });

  it("answers OPTIONS 200 over TCP", async () => {
    const socket = connect(service.service.sipPort, "127.0.0.1");
    await once(socket, "connect");
    socket.write(sipRequest("OPTIONS", service.service.sipPort, "TCP", socket.localPort ?? 0));
    const [data] = await once(socket, "data");
    socket.destroy();
    assert.match(String(data), /^SIP\/2\.0 200 OK\r\n/);
  });

  it("refuses an INVITE no one claims 404, and a REGISTER 405", async () => {
    const invite = await overUdp("INVITE", service.service.sipPort);
    assert.equal(invite.at(-1), 404);
    assert.deepEqual(await overUdp("REGISTER", service.service.sipPort), [405]);
  });

  it("does not warn when a trunk is configured", async () => {
    const withTrunk = await startTestService({
      sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, trunk: "sip:127.0.0.1:5070" },
    });
    try {
      assert.ok(!withTrunk.logs.some((line) => line.includes("no SIP trunk configured")));
    } finally {
      await withTrunk.close();
    }
  });
});
