import assert from "node:assert/strict";
import type { TestResponse } from "./service.js";

/** A parsed XML element: child elements by name, attributes as `@_name`, text as `#text`. */
export type XmlNode = Record<string, unknown>;

/** [email, password] for HTTP Basic, as `TestService.request` takes it. */
export type Auth = [string, string];

/** Every child element of a parsed element, as name -> its type attribute ("text" when untyped). */
export function typesOf(element: XmlNode): Record<string, string> {
  return Object.fromEntries(
    Object.entries(element)
      .filter(([name]) => !name.startsWith("@_"))
      .map(([name, child]) => [name, String((child as XmlNode)?.["@_type"] ?? "text")]),
  );
}

/** A child element's text; null when it is nil. */
export function textOf(element: XmlNode, name: string): string | null {
  const child = element[name];
  if (typeof child === "string") return child;
  assert.ok(child && typeof child === "object", `<${name}> is missing`);
  const node = child as XmlNode;
  if (node["@_nil"] === "true") return null;
  return String(node["#text"] ?? "");
}

/** The items of a type="array" child element, which the parser gives as one object when there is one. */
export function itemsIn(parent: unknown, listName: string, itemName: string): XmlNode[] {
  const list = (parent as XmlNode)[listName] as XmlNode;
  assert.equal(list?.["@_type"], "array", `<${listName}> must be type="array"`);
  const found = list[itemName];
  return found === undefined ? [] : ([] as XmlNode[]).concat(found as XmlNode);
}

/** The items of a 200 response whose root is a type="array" element, e.g. ("attendees", "attendee"). */
export function itemsOf(response: TestResponse, root: string, item: string): XmlNode[] {
  assert.equal(response.status, 200, response.text);
  return itemsIn(response.xml, root, item);
}

/** The messages of a response's <errors> document; none when the response is not one. */
export function errorsOf(response: TestResponse): string[] {
  const errors = (response.xml.errors as XmlNode | undefined)?.error;
  return errors === undefined ? [] : ([] as unknown[]).concat(errors).map(String);
}

/** The messages of a response's <errors> document, failing the test when the response is not one. */
export function errorMessages(response: TestResponse): string[] {
  assert.ok(response.xml.errors, `expected an <errors> document, got ${response.status} ${response.text}`);
  return errorsOf(response);
}

/** Fails unless some message of the response's <errors> document matches the pattern. */
export function assertErrorMatches(response: TestResponse, pattern: RegExp): void {
  const messages = errorMessages(response);
  assert.ok(
    messages.some((message) => pattern.test(message)),
    `no error matches ${pattern}: ${messages.join(" | ")}`,
  );
}
