import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Static, Type } from "@sinclair/typebox";
import { XMLValidator } from "fast-xml-parser";
import { documentType, readJsonInput } from "../../src/api/documents.js";
import { errorsDocument, MAX_ELEMENT_DEPTH, parseDocument } from "../../src/api/xml.js";
import { BadRequest, ValidationFailed } from "../../src/domain/errors.js";

describe("documentType", () => {
  const Phone = Type.Object({ id: Type.Integer() }, { xml: { name: "phone-number" } });
  const Sample = Type.Object(
    {
      id: Type.Integer(),
      name: Type.Union([Type.String(), Type.Null()]),
      im: Type.Union([Type.String(), Type.Null()]),
      "started-at": Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
      "created-at": Type.String({ format: "date-time" }),
      "terms-of-service": Type.Boolean(),
      mos: Type.Union([Type.Number(), Type.Null()]),
      "credit-card": Type.Union([Type.Object({ brand: Type.String() }), Type.Null()]),
      address: Type.Union([Type.Object({ country: Type.String() }), Type.Null()]),
      "phone-numbers": Type.Array(Phone),
      contacts: Type.Array(Phone),
      tags: Type.Union([Type.Array(Type.String({ xml: { name: "tag" } })), Type.Null()]),
      secret: Type.Optional(Type.String()),
    },
    { xml: { name: "user" } },
  );
  const sample = documentType<Static<typeof Sample>>(Sample);
  const value: Static<typeof Sample> = {
    id: 7,
    name: "Ann",
    im: null,
    "started-at": null,
    "created-at": "2026-11-21T10:00:05Z",
    "terms-of-service": true,
    mos: 4.25,
    "credit-card": null,
    address: { country: "CA" },
    "phone-numbers": [{ id: 1 }, { id: 2 }],
    contacts: [],
    tags: null,
  };

  it("writes Rails-style typed, nil, nested and array elements, indented, from the schema", () => {
    assert.equal(
      sample.xml(value),
      `<?xml version="1.0" encoding="UTF-8"?>
<user>
  <id type="integer">7</id>
  <name>Ann</name>
  <im nil="true"/>
  <started-at type="datetime" nil="true"/>
  <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
  <terms-of-service type="boolean">true</terms-of-service>
  <mos type="float">4.25</mos>
  <credit-card nil="true"/>
  <address>
    <country>CA</country>
  </address>
  <phone-numbers type="array">
    <phone-number>
      <id type="integer">1</id>
    </phone-number>
    <phone-number>
      <id type="integer">2</id>
    </phone-number>
  </phone-numbers>
  <contacts type="array"/>
  <tags type="array" nil="true"/>
</user>
`,
    );
  });

  it("writes the same document as JSON with native types, and an optional field only when given", () => {
    assert.deepEqual(JSON.parse(sample.json({ ...value, secret: "s" })), { ...value, secret: "s" });
    assert.doesNotMatch(sample.xml(value), /secret/);
    assert.match(sample.xml({ ...value, secret: "s" }), /<secret>s<\/secret>\n<\/user>/);
  });

  it("escapes markup in text, and reads back what it wrote", () => {
    const name = 'Pacific Time (US & Canada) <b> "quoted" & more';
    const document = sample.xml({ ...value, name });
    assert.match(document, /<name>Pacific Time \(US &amp; Canada\) &lt;b&gt; "quoted" &amp; more<\/name>/);
    assert.equal(parseDocument(document, "user").name, name);
  });

  it("writes characters XML 1.0 forbids, stored before they were refused, as U+FFFD", () => {
    const document = sample.xml({ ...value, name: "a\u0000b\u001Fc\uFFFEd\uD800e\u{1F600}" });
    assert.equal(XMLValidator.validate(document), true);
    assert.match(document, /<name>a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\u{1F600}<\/name>/u);
    assert.match(errorsDocument(["x\u000By <"]), /<error>x\uFFFDy &lt;<\/error>/);
  });
});

describe("readJsonInput", () => {
  const Write = Type.Object(
    {
      name: Type.Union([Type.String(), Type.Null()]),
      count: Type.Optional(Type.Integer()),
      on: Type.Optional(Type.Boolean()),
      card: Type.Optional(Type.Object({ month: Type.Integer() })),
    },
    { xml: { name: "thing" } },
  );

  it("gives the domain the text the XML reader would, null for null, unknown fields passed on", () => {
    assert.deepEqual(
      readJsonInput(
        { name: "A", count: 3, on: false, card: { month: 12 }, other: 1.5, list: [true] },
        Write,
        "thing",
      ),
      { name: "A", count: "3", on: "false", card: { month: "12" }, other: "1.5", list: ["true"] },
    );
    assert.deepEqual(readJsonInput({ name: null }, Write, "thing"), { name: null });
  });

  it("refuses a JSON type other than the field's, naming every field (422)", () => {
    assert.throws(
      () => readJsonInput({ name: 5, count: "3", on: "true", card: { month: "x" } }, Write, "thing"),
      (error: ValidationFailed) => {
        assert.ok(error instanceof ValidationFailed);
        assert.deepEqual(error.messages, [
          "name must be a string or null, not a number",
          "count must be an integer (a JSON number) or null, not a string",
          "on must be true or false or null, not a string",
          "card month must be an integer (a JSON number) or null, not a string",
        ]);
        return true;
      },
    );
  });

  it("refuses a body that is not an object, or the fields wrapped in the root's name (400)", () => {
    for (const body of [[], "x", 3, null])
      assert.throws(() => readJsonInput(body, Write, "thing"), BadRequest);
    assert.throws(
      () => readJsonInput({ thing: { name: "A" } }, Write, "thing"),
      (error: BadRequest) => /at the top level/.test(error.messages[0] ?? ""),
    );
  });
});

describe("parseDocument", () => {
  it("reads text, nil, empty elements, arrays of one and many, and character references", () => {
    const input = parseDocument(
      `<?xml version="1.0"?><user><name>A &amp; B &#233;&#x41;</name><im nil="true"/><e/>
        <one type="array"><p><id>1</id></p></one><many type="array"><p><id>1</id></p><p><id>2</id></p></many></user>`,
      "user",
    );
    assert.deepEqual(input, {
      name: "A & B éA",
      im: null,
      e: "",
      one: [{ id: "1" }],
      many: [{ id: "1" }, { id: "2" }],
    });
  });

  it("refuses a wrong root, malformed XML and any DOCTYPE", () => {
    assert.throws(() => parseDocument("<contact/>", "user"), /root element must be <user>/);
    assert.throws(() => parseDocument("<user><name>x</user>", "user"), /malformed XML/);
    assert.throws(() => parseDocument('<!DOCTYPE user [<!ENTITY a "b">]><user/>', "user"), /DOCTYPE/);
  });

  it("refuses elements nested deeper than any document holds as a bad request (it was a 500)", () => {
    const deep = `<user><name>${"<a>".repeat(MAX_ELEMENT_DEPTH)}x${"</a>".repeat(MAX_ELEMENT_DEPTH)}</name></user>`;
    assert.throws(
      () => parseDocument(deep, "user"),
      (error) => error instanceof BadRequest && /nested/.test(error.messages.join()),
    );
    const deepest = `<user>${"<a>".repeat(MAX_ELEMENT_DEPTH - 1)}x${"</a>".repeat(MAX_ELEMENT_DEPTH - 1)}</user>`;
    assert.deepEqual(Object.keys(parseDocument(deepest, "user")), ["a"]);
  });
});
