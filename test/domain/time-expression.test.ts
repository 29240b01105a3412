import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DateTime } from "luxon";
import { parseStartTime, type TimeContext, timeZoneNamed } from "../../src/domain/time-expression.js";
import {
  CASES,
  CONTEXTS,
  type ContextName,
  DEPARTURES,
  type Group,
  UNREADABLE,
} from "./time-expression.cases.js";

const GROUPS: Group[] = [
  "relative words",
  "complex expressions",
  "specific dates",
  "specific times",
  "ISO 8601",
];

function contextOf(name: ContextName): TimeContext {
  const { timeZone, now } = CONTEXTS[name];
  const zone = timeZoneNamed(timeZone);
  if (!zone) throw new Error(`no zone for ${timeZone}`);
  return { now: DateTime.fromISO(now, { zone }).toJSDate(), timeZone: zone };
}

/** The instant as ISO 8601 in the reader's zone, the way the table writes it. */
function readIn(expression: string, context: TimeContext): string | null {
  const instant = parseStartTime(expression, context);
  if (!instant) return null;
  return DateTime.fromJSDate(instant, { zone: context.timeZone }).toISO({ suppressMilliseconds: true });
}

describe("parseStartTime reads each form with the meaning Chronic gives it", () => {
  for (const group of GROUPS) {
    describe(group, () => {
      for (const example of CASES.filter((candidate) => candidate.group === group)) {
        const departure = example.departure
          ? ` (Chronic: ${example.chronic}; ${DEPARTURES[example.departure]})`
          : "";
        it(`${example.form}: "${example.expression}" at ${example.context} is ${example.expected}${departure}`, () => {
          assert.equal(readIn(example.expression, contextOf(example.context)), example.expected);
        });
      }
    });
  }

  it("covers the four groups of the spec with at least 150 cases", () => {
    assert.ok(CASES.length >= 150, `only ${CASES.length} cases`);
    for (const group of GROUPS.slice(0, 4)) {
      assert.ok(CASES.filter((example) => example.group === group).length >= 30, group);
    }
  });
});

describe("parseStartTime refuses what it cannot read", () => {
  for (const { context, expression } of UNREADABLE) {
    it(`"${expression}" at ${context}`, () => {
      assert.equal(parseStartTime(expression, contextOf(context)), null);
    });
  }
});

describe("parseStartTime in the owner's zone", () => {
  it("ignores case and surrounding or repeated spaces", () => {
    const context = contextOf("chronic");
    assert.equal(readIn("  TOMORROW   at 6:45PM ", context), readIn("tomorrow at 6:45pm", context));
  });

  it("reads the same words as different instants in different zones", () => {
    const now = new Date("2024-02-14T19:00:00Z");
    const read = (timeZone: string) => parseStartTime("january 5 at 7pm", { now, timeZone })?.toISOString();
    assert.equal(read("Etc/UTC"), "2025-01-05T19:00:00.000Z");
    assert.equal(read("America/St_Johns"), "2025-01-05T22:30:00.000Z");
    assert.equal(read("Asia/Kolkata"), "2025-01-05T13:30:00.000Z");
  });

  it("keeps 9 am local after the spring change when scheduled before it", () => {
    const context = contextOf("eastern");
    const before = parseStartTime("march 8 at 9am", context);
    const after = parseStartTime("march 11 at 9am", context);
    assert.equal(before?.toISOString(), "2024-03-08T14:00:00.000Z");
    assert.equal(after?.toISOString(), "2024-03-11T13:00:00.000Z");
  });

  it("accepts a time in the past", () => {
    assert.equal(readIn("yesterday at 4:00", contextOf("chronic")), "2006-08-15T16:00:00+00:00");
  });
});

describe("timeZoneNamed", () => {
  it("maps the spec's user time-zone names to IANA zones", () => {
    assert.equal(timeZoneNamed("Newfoundland"), "America/St_Johns");
    assert.equal(timeZoneNamed("Eastern Time (US & Canada)"), "America/New_York");
  });

  it("accepts IANA names and refuses unknown ones", () => {
    assert.equal(timeZoneNamed("Europe/Berlin"), "Europe/Berlin");
    assert.equal(timeZoneNamed("Mars/Olympus_Mons"), null);
  });
});
