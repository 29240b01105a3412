import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../../src/config.js";
import { startTestApi, type TestApi } from "../helpers/service.js";

describe("GET /access-numbers", () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({
      sip: {
        ...loadConfig({}).sip,
        bindAddress: "127.0.0.1",
        port: 0,
        accessNumbers: ["+16045550199", "+12125550188"],
      },
    });
  });
  after(() => api.close());

  it("lists the configured dial-in numbers without credentials", async () => {
    const response = await api.request("GET", "/access-numbers");
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.xml["access-numbers"], {
      "@_type": "array",
      "access-number": [{ number: "+16045550199" }, { number: "+12125550188" }],
    });
  });

  it("answers 405 with Allow for other methods", async () => {
    const response = await api.request("POST", "/access-numbers", { body: "<x/>" });
    assert.equal(response.status, 405);
    assert.match(String(response.headers.allow), /GET/);
  });
});
