/**
 * RFC 4475 at the user agent: every torture request of shared/sip-torture, sent as one UDP datagram
 * to the running service, gets a final answer the index names (see its README.md); the torture
 * responses are dropped without a word; and the service still answers afterwards. The messages name
 * hosts like 192.0.2.x in Via, so the answers are read off the wire (tshark), whatever they go to.
 */
import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { parseMessage } from "../../../src/telephony/sip/message/parser.js";
import { startTestService, type TestService } from "../../helpers/service.js";
import { optionsRequest } from "../../helpers/sip-options.js";
import { skipWithout } from "../../helpers/sipp.js";
import { TORTURE_CASES, tortureBytes } from "../../helpers/torture.js";
import { WireCapture } from "../../helpers/wire.js";

const cases = TORTURE_CASES;
const skip = skipWithout("tshark");

/**
 * Sends an OPTIONS from `socket` (bound on 127.0.0.1) to the service and resolves with the status
 * of its answer, the response that names its Call-ID (answers to torture requests whose Via asks for
 * rport come to this socket too); rejects when none comes within 10 s.
 */
async function optionsAnswer(socket: Socket, sipPort: number, callId: string): Promise<number> {
  const { port } = socket.address();
  const answered = new Promise<number>((resolve, reject) => {
    const answer = (bytes: Buffer) => {
      const parsed = parseMessage(bytes, { stream: false });
      if (!parsed.ok || parsed.message.kind !== "response" || parsed.message.headers.callId !== callId)
        return;
      clearTimeout(timer);
      socket.off("message", answer);
      resolve(parsed.message.status);
    };
    const timer = setTimeout(() => {
      socket.off("message", answer);
      reject(new Error(`no answer to OPTIONS ${callId} within 10 s`));
    }, 10_000);
    socket.on("message", answer);
  });
  const options = optionsRequest({ address: "127.0.0.1", port }, sipPort, callId);
  socket.send(Buffer.from(options), sipPort, "127.0.0.1");
  return answered;
}

/** The Call-ID of a torture message, read the way a lenient eye would (some do not parse). */
function callIdOf(bytes: Buffer): string | undefined {
  return /^(?:Call-ID|i)[ \t]*:[ \t]*(\S+)/im.exec(bytes.toString("latin1"))?.[1];
}

describe("RFC 4475 torture requests at the running service", { skip }, () => {
  let api: TestService;
  /** Final statuses the service sent, by Call-ID. */
  const answers = new Map<string, number[]>();

  before(async () => {
    api = await startTestService({
      sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, accessNumbers: ["+16045550199"] },
    });
    const port = api.service.sipPort;
    const capture = await WireCapture.start(`udp src port ${port}`);
    const socket = createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
    try {
      for (const torture of cases) {
        const bytes = tortureBytes(torture);
        await new Promise<void>((resolve, reject) =>
          socket.send(bytes, port, "127.0.0.1", (error) => (error ? reject(error) : resolve())),
        );
      }
      // The service reads its socket in order and answers each of these as it reads it (none waits
      // on the store): the answer to an OPTIONS sent after them comes after theirs. Well within its
      // burst of requests from one source (twice BRIDGELINE_SIP_REQUEST_RATE).
      assert.equal(await optionsAnswer(socket, port, "after-the-torture-requests"), 200);
    } finally {
      socket.close();
      await capture.stop();
    }
    // Read leniently: an answer to a broken request echoes its broken header fields.
    for (const datagram of capture.datagrams(({ source }) => source === port)) {
      const status = Number(/^SIP\/2\.0 (\d{3}) /.exec(datagram.toString("latin1"))?.[1] ?? 0);
      if (status < 200) continue;
      const callId = callIdOf(datagram) ?? "";
      answers.set(callId, [...(answers.get(callId) ?? []), status]);
    }
    await capture.dispose();
  });
  after(() => api?.close());

  for (const torture of cases) {
    const label = `${torture.section} ${torture.name}: ${torture.title}`;
    const bytes = tortureBytes(torture);
    if (torture.kind === "response") {
      it(`${label}: a stray response is dropped without an answer`, () => {
        assert.deepEqual(answers.get(callIdOf(bytes) ?? "") ?? [], []);
      });
      continue;
    }
    it(`${label}: answered ${torture.uas_status.length > 0 ? torture.uas_status.join(" or ") : "normally"}`, () => {
      const statuses = answers.get(callIdOf(bytes) ?? "") ?? [];
      assert.ok(statuses.length > 0, "no final answer");
      const status = statuses[0] as number;
      if (torture.valid) {
        if (torture.uas_status.length > 0)
          assert.ok(torture.uas_status.includes(status), `answered ${status}`);
        else assert.notEqual(status, 400, "a valid request refused as malformed");
      } else if (!torture.liberal_ok) {
        assert.ok(torture.uas_status.includes(status), `answered ${status}`);
      }
    });
  }

  it("still answers OPTIONS afterwards", async () => {
    const socket = createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
    assert.equal(await optionsAnswer(socket, api.service.sipPort, "after-torture"), 200);
    socket.close();
  });
});
