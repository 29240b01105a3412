import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { XMLValidator } from "fast-xml-parser";
import {
  array,
  boolean,
  datetime,
  integer,
  MAX_ELEMENT_DEPTH,
  nested,
  parseDocument,
  renderDocument,
  text,
} from "../../src/api/xml.js";
import { BadRequest } from "../../src/domain/errors.js";

describe("renderDocument", () => {
  it("writes Rails-style typed, nil, nested and array elements, indented", () => {
    const document = renderDocument("user", {
      id: integer(7),
      name: text("Ann"),
      im: text(null),
      "started-at": datetime(null),
      "created-at": datetime("2026-11-21T10:00:05.000Z"),
      "terms-of-service": boolean(true),
      "credit-card": nested(null),
      address: nested({ country: text("CA") }),
      "phone-numbers": array("phone-number", [{ id: integer(1) }, { id: integer(2) }]),
      contacts: array("contact", []),
    });
    assert.equal(
      document,
      `<?xml version="1.0" encoding="UTF-8"?>
<user>
  <id type="integer">7</id>
  <name>Ann</name>
  <im nil="true"/>
  <started-at type="datetime" nil="true"/>
  <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
  <terms-of-service type="boolean">true</terms-of-service>
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
</user>
`,
    );
  });

  it("escapes markup in text and attributes, and reads back what it wrote", () => {
    const name = 'Pacific Time (US & Canada) <b> "quoted" & more';
    const document = renderDocument("contact", {
      name: text(name),
      note: { "@_label": 'a"&<b', "#text": "x" },
    });
    assert.match(document, /<name>Pacific Time \(US &amp; Canada\) &lt;b&gt; "quoted" &amp; more<\/name>/);
    assert.match(document, /<note label="a&quot;&amp;&lt;b">x<\/note>/);
    assert.equal(parseDocument(document, "contact").name, name);
  });
  it("writes characters XML 1.0 forbids, stored before they were refused, as U+FFFD", () => {
    const document = renderDocument("contact", {
      name: text("a\u0000b\u001Fc\uFFFEd\uD800e\u{1F600}"),
      note: { "@_label": "x\u000By", "#text": "z" },
    });
    assert.equal(XMLValidator.validate(document), true);
    assert.match(document, /<name>a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\u{1F600}<\/name>/u);
    assert.match(document, /<note label="x\uFFFDy">z<\/note>/);
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
