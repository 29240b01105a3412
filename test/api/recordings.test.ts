import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import { recordingFileName, recordingsDirectory } from "../../src/domain/recording.js";
import type { Store } from "../../src/store/database.js";
import { getRecordingFiles, setRecordingFile } from "../../src/store/recordings.js";
import { readWav, wavHeader } from "../../src/telephony/media/wav.js";
import { WavRecorder } from "../../src/telephony/media/wav-recorder.js";
import { tone } from "../helpers/audio.js";
import { createUser, startTestService, type TestResponse, type TestService } from "../helpers/service.js";
import { type Auth, assertErrorMatches, textOf, type XmlNode } from "../helpers/xml.js";

interface Download {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function assertXmlError(response: TestResponse, status: number, pattern: RegExp): void {
  assert.equal(response.status, status, response.text);
  assert.match(String(response.headers["content-type"]), /^application\/xml/);
  assertErrorMatches(response, pattern);
}

describe("recording API", () => {
  let api: TestService;
  let alice: { id: number; auth: Auth };
  let bob: { id: number; auth: Auth };
  let recordings: string;

  const recordingPath = (user: { id: number }, conferenceId: number) =>
    `/users/${user.id}/conferences/${conferenceId}/recording`;

  async function createConference(owner: { id: number; auth: Auth }, name: string): Promise<number> {
    const response = await api.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: `<conference><name>${name}</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at><no-moderator type="boolean">true</no-moderator></conference>`,
    });
    assert.equal(response.status, 201, response.text);
    return Number(textOf(response.xml.conference as XmlNode, "id"));
  }

  /** A GET whose body is kept as bytes. */
  async function download(urlPath: string, auth: Auth | null, accept?: string): Promise<Download> {
    const headers: Record<string, string> = accept === undefined ? {} : { accept };
    if (auth) headers.authorization = `Basic ${Buffer.from(`${auth[0]}:${auth[1]}`).toString("base64")}`;
    const response = await request(`${api.httpUrl}${urlPath}`, { headers });
    return {
      status: response.statusCode,
      headers: response.headers,
      body: Buffer.from(await response.body.arrayBuffer()),
    };
  }

  /** Runs a store function on the service's database (SQLite), as the conference runtime would. */
  function withStore<T>(use: (store: Store) => Promise<T>): Promise<T> {
    return api.inspect((db) => use({ db, dialect: "sqlite", close: async () => {} }));
  }

  before(async () => {
    api = await startTestService();
    alice = await createUser(api);
    bob = await createUser(api);
    recordings = recordingsDirectory(api.dataDir);
    fs.mkdirSync(recordings, { recursive: true });
  });
  after(() => api?.close());

  it("answers 404 before any recording exists", async () => {
    const conferenceId = await createConference(alice, "Weekly Sync");
    const response = await api.request("GET", recordingPath(alice, conferenceId), {
      auth: alice.auth,
      headers: { accept: "audio/wav" },
    });
    assertXmlError(response, 404, /recording not found/);
  });

  it("serves the WAV file with its bytes, type, length and name once it exists", async () => {
    const conferenceId = await createConference(alice, "Quarterly Review");
    const fileName = recordingFileName({ id: conferenceId, name: "Quarterly Review" });
    const wav = Buffer.concat([wavHeader(8000, 1600), Buffer.alloc(1600, 7)]);
    fs.writeFileSync(path.join(recordings, fileName), wav);
    await withStore((store) => setRecordingFile(store, { conferenceId }, fileName));

    for (const accept of [
      undefined,
      "audio/wav",
      "*/*",
      "audio/*",
      "audio/x-wav",
      "application/xml, audio/wav",
    ]) {
      const response = await download(recordingPath(alice, conferenceId), alice.auth, accept);
      assert.equal(response.status, 200, `Accept: ${accept}: ${response.body.toString()}`);
      assert.equal(response.headers["content-type"], "audio/wav");
      assert.equal(response.headers["content-length"], String(wav.length));
      assert.equal(
        response.headers["content-disposition"],
        `attachment; filename="Quarterly Review (${conferenceId}).wav"`,
      );
      assert.deepEqual(response.body, wav);
    }
    const withSlash = await download(`${recordingPath(alice, conferenceId)}/`, alice.auth);
    assert.deepEqual(withSlash.body, wav, "a trailing slash is ignored as everywhere");
    const withXmlSuffix = await download(`${recordingPath(alice, conferenceId)}.xml`, alice.auth);
    assert.deepEqual(withXmlSuffix.body, wav, "every path answers with a .xml suffix too");
  });

  it("names a non-ASCII download with filename* in UTF-8 (RFC 6266)", async () => {
    const name = 'Équipe "Nord" 東京';
    const conferenceId = await createConference(alice, "Équipe &quot;Nord&quot; 東京");
    const fileName = recordingFileName({ id: conferenceId, name, startedAt: "2030-01-01T10:00:05Z" });
    assert.equal(fileName, `Équipe Nord 東京 2030-01-01 (${conferenceId}).wav`);
    fs.writeFileSync(path.join(recordings, fileName), wavHeader(8000, 0));
    await withStore((store) => setRecordingFile(store, { conferenceId }, fileName));

    const response = await download(recordingPath(alice, conferenceId), alice.auth);
    assert.equal(response.status, 200);
    assert.equal(
      response.headers["content-disposition"],
      `attachment; filename="_quipe Nord __ 2030-01-01 (${conferenceId}).wav"; ` +
        `filename*=UTF-8''%C3%89quipe%20Nord%20%E6%9D%B1%E4%BA%AC%202030-01-01%20%28${conferenceId}%29.wav`,
    );
    assert.equal(response.body.length, 44);
  });

  it("serves what the header counts of a recording still being written", async () => {
    const conferenceId = await createConference(alice, "Live");
    const fileName = recordingFileName({ id: conferenceId, name: "Live" });
    const recorder = await WavRecorder.open(path.join(recordings, fileName));
    await withStore((store) => setRecordingFile(store, { conferenceId }, fileName));
    const sine = tone(440, 1.5);
    for (let offset = 0; offset < sine.length; offset += 160)
      recorder.write(sine.subarray(offset, offset + 160));
    await recorder.flush();
    // Half a second more reaches the file ahead of the header, as in the middle of an append.
    fs.appendFileSync(path.join(recordings, fileName), Buffer.alloc(8000, 1));

    const response = await download(recordingPath(alice, conferenceId), alice.auth);
    assert.equal(response.status, 200);
    assert.equal(response.headers["content-length"], String(44 + 24_000));
    assert.equal(response.body.length, 44 + 24_000);
    assert.deepEqual(readWav(response.body).samples, sine);
    await recorder.close();
  });

  it("answers 404 when the recording's file is missing", async () => {
    const conferenceId = await createConference(alice, "Lost");
    await withStore((store) => setRecordingFile(store, { conferenceId }, "Lost (missing).wav"));
    const response = await api.request("GET", recordingPath(alice, conferenceId), {
      auth: alice.auth,
      headers: { accept: "audio/wav" },
    });
    assertXmlError(response, 404, /recording not found/);
  });

  it("never serves a file outside the recordings folder", async () => {
    const conferenceId = await createConference(alice, "Escape");
    fs.writeFileSync(path.join(api.dataDir, "secret.wav"), wavHeader(8000, 0));
    await withStore((store) => setRecordingFile(store, { conferenceId }, "../secret.wav"));
    const response = await download(recordingPath(alice, conferenceId), alice.auth);
    assert.equal(response.status, 404);
  });

  it("applies the API's authentication and ownership rules", async () => {
    const bobsConference = await createConference(bob, "Bob's");
    const fileName = recordingFileName({ id: bobsConference, name: "Bob's" });
    fs.writeFileSync(path.join(recordings, fileName), wavHeader(8000, 0));
    await withStore((store) => setRecordingFile(store, { conferenceId: bobsConference }, fileName));
    const audio = { accept: "audio/wav" };

    const anonymous = await api.request("GET", recordingPath(bob, bobsConference), { headers: audio });
    assert.equal(anonymous.status, 401, anonymous.text);
    assert.match(String(anonymous.headers["www-authenticate"]), /^Basic/);

    const othersPath = await api.request("GET", recordingPath(bob, bobsConference), {
      auth: alice.auth,
      headers: audio,
    });
    assertXmlError(othersPath, 403, /own resources/);

    const underOwnPath = await api.request("GET", recordingPath(alice, bobsConference), {
      auth: alice.auth,
      headers: audio,
    });
    assertXmlError(underOwnPath, 404, /conference not found/);

    assert.equal((await download(recordingPath(bob, bobsConference), bob.auth)).status, 200);
    assert.deepEqual(await withStore((store) => getRecordingFiles(store, bob.id, bobsConference)), [
      fileName,
    ]);
    await assert.rejects(
      withStore((store) => getRecordingFiles(store, alice.id, bobsConference)),
      /conference not found/,
    );
  });

  it("answers 406 to an Accept that admits no WAV type", async () => {
    const conferenceId = await createConference(alice, "Picky");
    for (const accept of ["application/xml", "text/html", "audio/wav;q=0", "audio/mpeg"]) {
      const response = await api.request("GET", recordingPath(alice, conferenceId), {
        auth: alice.auth,
        headers: { accept },
      });
      assertXmlError(response, 406, /answers only audio\/wav/);
    }
  });

  it("answers 405 with Allow to other methods", async () => {
    const conferenceId = await createConference(alice, "Methods");
    for (const method of ["POST", "PUT", "DELETE"]) {
      const response = await api.request(method, recordingPath(alice, conferenceId), {
        auth: alice.auth,
        ...(method !== "DELETE" && { body: "<recording/>" }),
      });
      assertXmlError(response, 405, /allows GET, HEAD/);
      assert.equal(response.headers.allow, "GET, HEAD");
    }
  });

  it("answers HEAD with the headers and no body", async () => {
    const conferenceId = await createConference(alice, "Head");
    const fileName = recordingFileName({ id: conferenceId, name: "Head" });
    fs.writeFileSync(
      path.join(recordings, fileName),
      Buffer.concat([wavHeader(8000, 320), Buffer.alloc(320)]),
    );
    await withStore((store) => setRecordingFile(store, { conferenceId }, fileName));
    const response = await request(`${api.httpUrl}${recordingPath(alice, conferenceId)}`, {
      method: "HEAD",
      headers: { authorization: `Basic ${Buffer.from(alice.auth.join(":")).toString("base64")}` },
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers["content-type"], "audio/wav");
    assert.equal(response.headers["content-length"], String(44 + 320));
    assert.equal((await response.body.arrayBuffer()).byteLength, 0);
  });

  it("records through WavRecorder into a file the API serves", async () => {
    const conferenceId = await createConference(alice, "Recorded");
    const fileName = recordingFileName({ id: conferenceId, name: "Recorded" });
    const recorder = await WavRecorder.open(path.join(recordings, fileName));
    await withStore((store) => setRecordingFile(store, { conferenceId }, fileName));
    const sine = tone(1000, 2.5);
    for (let offset = 0; offset < sine.length; offset += 160)
      recorder.write(sine.subarray(offset, offset + 160));
    await recorder.close();
    const response = await download(recordingPath(alice, conferenceId), alice.auth, "audio/wav");
    assert.equal(response.status, 200);
    const wav = readWav(response.body);
    assert.equal(wav.sampleRate, 8000);
    assert.deepEqual(wav.samples, sine);
  });

  describe("a recording in parts (rooms that took the conference over)", () => {
    /** Records `samples` into the recordings folder as the media does: through WavRecorder. */
    async function record(fileName: string, samples: Int16Array, sampleRate = 8000): Promise<void> {
      const recorder = await WavRecorder.open(path.join(recordings, fileName), undefined, sampleRate);
      const frame = sampleRate / 50;
      for (let offset = 0; offset < samples.length; offset += frame)
        recorder.write(samples.subarray(offset, offset + frame));
      await recorder.close();
    }

    /** The files stored as the rooms store them: the first, then each part. */
    async function stored(conferenceId: number, fileNames: readonly string[]): Promise<void> {
      for (const fileName of fileNames)
        await withStore((store) => setRecordingFile(store, { conferenceId }, fileName));
    }

    const joined = (...parts: Int16Array[]) => {
      const all = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
      let offset = 0;
      for (const part of parts) {
        all.set(part, offset);
        offset += part.length;
      }
      return all;
    };

    it("serves one WAV of the first file and each part in order, its header counting them all", async () => {
      const conferenceId = await createConference(alice, "Taken Over");
      const conference = { id: conferenceId, name: "Taken Over" };
      const names = [
        recordingFileName(conference),
        recordingFileName(conference, 3),
        recordingFileName(conference, 5),
      ];
      const sounds = [tone(440, 1.5), tone(880, 0.5), tone(660, 1.02)];
      for (const [i, name] of names.entries()) await record(name, sounds[i] as Int16Array);
      await stored(conferenceId, names);
      const dataBytes = 2 * (12_000 + 4_000 + 8_160);

      const response = await download(recordingPath(alice, conferenceId), alice.auth);
      assert.equal(response.status, 200, response.body.toString());
      assert.equal(response.headers["content-length"], String(44 + dataBytes));
      assert.equal(
        response.headers["content-disposition"],
        `attachment; filename="Taken Over (${conferenceId}).wav"`,
      );
      assert.equal(response.body.length, 44 + dataBytes);
      assert.equal(response.body.readUInt32LE(4), 36 + dataBytes, "RIFF size");
      assert.equal(response.body.readUInt32LE(40), dataBytes, "data size");
      const wav = readWav(response.body);
      assert.equal(wav.sampleRate, 8000);
      assert.deepEqual(wav.samples, joined(...sounds));

      const head = await request(`${api.httpUrl}${recordingPath(alice, conferenceId)}`, {
        method: "HEAD",
        headers: { authorization: `Basic ${Buffer.from(alice.auth.join(":")).toString("base64")}` },
      });
      assert.equal(head.headers["content-length"], String(44 + dataBytes));
      assert.equal((await head.body.arrayBuffer()).byteLength, 0);
    });

    it("leaves out a file missing from the folder or empty, logged, and answers 404 once none is left", async () => {
      const conferenceId = await createConference(alice, "Scattered");
      const conference = { id: conferenceId, name: "Scattered" };
      const [first, lost, empty, last] = [
        recordingFileName(conference),
        recordingFileName(conference, 2),
        recordingFileName(conference, 3),
        recordingFileName(conference, 4),
      ] as [string, string, string, string];
      const sounds = { first: tone(440, 1), last: tone(880, 0.6) };
      await record(first, sounds.first);
      await record(last, sounds.last);
      // Made by a room that went before it wrote a header.
      fs.writeFileSync(path.join(recordings, empty), "");
      await stored(conferenceId, [first, lost, empty, last]);
      const missingLogged = (fileName: string) =>
        api.logs.some(
          (line) =>
            line.includes('"level":40') &&
            line.includes("is not in the recordings folder, or holds no audio") &&
            line.includes(JSON.stringify(fileName)),
        );

      const withoutOne = await download(recordingPath(alice, conferenceId), alice.auth);
      assert.equal(withoutOne.status, 200);
      assert.equal(withoutOne.headers["content-length"], String(44 + 2 * (8_000 + 4_800)));
      assert.deepEqual(readWav(withoutOne.body).samples, joined(sounds.first, sounds.last));
      assert.ok(missingLogged(lost), "the missing part is logged as a warning");
      assert.ok(missingLogged(empty), "and the empty one");

      fs.rmSync(path.join(recordings, first));
      const lastOnly = await download(recordingPath(alice, conferenceId), alice.auth);
      assert.equal(lastOnly.status, 200);
      assert.deepEqual(readWav(lastOnly.body).samples, sounds.last, "the parts play without the first");
      assert.equal(
        lastOnly.headers["content-disposition"],
        `attachment; filename="Scattered (${conferenceId}).wav"`,
        "named as the recording still",
      );
      assert.ok(missingLogged(first));

      fs.rmSync(path.join(recordings, last));
      const none = await api.request("GET", recordingPath(alice, conferenceId), {
        auth: alice.auth,
        headers: { accept: "audio/wav" },
      });
      assertXmlError(none, 404, /recording not found/);
    });

    it("joins a part at half the first's rate by doubling its samples (a room's recording opens at its rate then)", async () => {
      const conferenceId = await createConference(alice, "Two Rates");
      const conference = { id: conferenceId, name: "Two Rates" };
      const names = [recordingFileName(conference), recordingFileName(conference, 2)];
      const wideband = tone(440, 0.2).map((sample) => sample >> 1);
      const narrowband = Int16Array.from([100, 300, -100, 1001, 7]);
      await record(names[0] as string, wideband, 16_000);
      await record(names[1] as string, narrowband, 8000);
      await stored(conferenceId, names);
      const response = await download(recordingPath(alice, conferenceId), alice.auth);
      assert.equal(response.status, 200, response.body.toString());
      assert.equal(response.headers["content-length"], String(44 + 2 * (wideband.length + 10)));
      const wav = readWav(response.body);
      assert.equal(wav.sampleRate, 16_000);
      // Each narrowband sample, then the mean of it and the next; the last twice.
      const doubled = Int16Array.from([100, 200, 300, 100, -100, 451, 1001, 504, 7, 7]);
      assert.deepEqual([...wav.samples], [...joined(wideband, doubled)]);
    });

    it("refuses to join parts whose rates doubling does not make good, saying so", async () => {
      const conferenceId = await createConference(alice, "Far Rates");
      const conference = { id: conferenceId, name: "Far Rates" };
      const names = [recordingFileName(conference), recordingFileName(conference, 2)];
      await record(names[0] as string, tone(440, 0.2), 48_000);
      await record(names[1] as string, tone(440, 0.2), 16_000);
      await stored(conferenceId, names);
      const response = await api.request("GET", recordingPath(alice, conferenceId), {
        auth: alice.auth,
        headers: { accept: "audio/wav" },
      });
      assertXmlError(
        response,
        500,
        /parts differ in format \(48000 Hz, 1 channel, 16-bit, 16000 Hz, 1 channel, 16-bit\): they cannot be joined/,
      );
    });
  });
});
