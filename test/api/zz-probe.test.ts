import { it } from "node:test";
import { createUser, startTestService } from "../helpers/service.js";
it("probe", async () => {
  const api = await startTestService();
  const u = await createUser(api, `<time-zone>Eastern Time (US &amp; Canada)</time-zone><phone-numbers type="array"><phone-number><subscriber-number>604-555-0100</subscriber-number><location>office</location><extension>12</extension></phone-number></phone-numbers>`);
  const c = await api.request("POST", `/users/${u.id}/conferences`, { auth: u.auth, body: `<conference><name>A</name><scheduled-to-start-at>2027-01-15T09:00:00</scheduled-to-start-at></conference>` });
  console.log(c.status, c.headers.location, c.text, JSON.stringify(c.xml));
  const a = await api.request("GET", `/users/${u.id}/conferences/1/attendees`, { auth: u.auth });
  console.log(a.text, JSON.stringify(a.xml));
  const k = await api.request("POST", `/users/${u.id}/contacts`, { auth: u.auth, body: `<contact><name>A</name><time-zone>Pacific Time (US &amp; Canada)</time-zone></contact>` });
  console.log(k.status, k.text);
  console.log(u.response.text);
  await api.close();
});
