import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createUser, startTestService, type TestService } from "../helpers/service.js";

describe("service smoke", () => {
  let api: TestService;
  before(async () => {
    api = await startTestService();
  });
  after(() => api.close());

  it("answers GET /billing-packages over HTTPS", async () => {
    const response = await api.request("GET", "/billing-packages", { https: true });
    assert.equal(response.status, 200);
    assert.match(response.text, /<billing-packages type="array">/);
  });

  it("signs up a user and shows it at its Location", async () => {
    const { auth, response } = await createUser(api);
    const location = response.headers.location as string;
    const shown = await api.request("GET", location, { auth });
    assert.equal(shown.status, 200);
    assert.equal(shown.text, response.text);
  });
});
