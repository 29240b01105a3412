import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  CONTACT_TIME_ZONES,
  IM_NETWORKS,
  isValidPostalCode,
  SUBDIVISIONS,
  USER_TIME_ZONES,
} from "../../src/domain/reference-data.js";

// Copied verbatim from "User time-zone allowed values" in conference-api.md.
const SPEC_USER_TIME_ZONES =
  "International Date Line West, Midway Island, Samoa, Hawaii, Alaska, Pacific Time (US & Canada), Tijuana, Arizona, Chihuahua, Mazatlan, Mountain Time (US & Canada), Central America, Central Time (US & Canada), Guadalajara, Mexico City, Monterrey, Saskatchewan, Bogota, Eastern Time (US & Canada), Indiana (East), Lima, Quito, Atlantic Time (Canada), Caracas, La Paz, Santiago, Newfoundland, Brasilia, Buenos Aires, Georgetown, Greenland, Mid-Atlantic, Azores, Cape Verde Is., Casablanca, Dublin, Edinburgh, Lisbon, London, Monrovia, UTC, Amsterdam, Belgrade, Berlin, Bern, Bratislava, Brussels, Budapest, Copenhagen, Ljubljana, Madrid, Paris, Prague, Rome, Sarajevo, Skopje, Stockholm, Vienna, Warsaw, West Central Africa, Zagreb, Athens, Bucharest, Cairo, Harare, Helsinki, Istanbul, Jerusalem, Kyev, Minsk, Pretoria, Riga, Sofia, Tallinn, Vilnius, Baghdad, Kuwait, Moscow, Nairobi, Riyadh, St. Petersburg, Volgograd, Tehran, Abu Dhabi, Baku, Muscat, Tbilisi, Yerevan, Kabul, Ekaterinburg, Islamabad, Karachi, Tashkent, Chennai, Kolkata, Mumbai, New Delhi, Kathmandu, Almaty, Astana, Dhaka, Novosibirsk, Sri Jayawardenepura, Rangoon, Bangkok, Hanoi, Jakarta, Krasnoyarsk, Beijing, Chongqing, Hong Kong, Irkutsk, Kuala Lumpur, Perth, Singapore, Taipei, Ulaan Bataar, Urumqi, Osaka, Sapporo, Seoul, Tokyo, Yakutsk, Adelaide, Darwin, Brisbane, Canberra, Guam, Hobart, Melbourne, Port Moresby, Sydney, Vladivostok, Magadan, New Caledonia, Solomon Is., Auckland, Fiji, Kamchatka, Marshall Is., Wellington, Nuku'alofa".split(
    ", ",
  );

describe("USER_TIME_ZONES", () => {
  it("holds exactly the spec's names, in the spec's order", () => {
    assert.equal(SPEC_USER_TIME_ZONES.length, 142);
    assert.deepEqual([...USER_TIME_ZONES.keys()], SPEC_USER_TIME_ZONES);
  });

  it("maps every name to a zone Intl accepts", () => {
    for (const [name, zone] of USER_TIME_ZONES) {
      assert.doesNotThrow(() => new Intl.DateTimeFormat(undefined, { timeZone: zone }), `${name} -> ${zone}`);
    }
  });

  const railsMappings: Array<[string, string]> = [
    ["International Date Line West", "Etc/GMT+12"],
    ["Mid-Atlantic", "Atlantic/South_Georgia"],
    ["Newfoundland", "America/St_Johns"],
    ["Indiana (East)", "America/Indiana/Indianapolis"],
    ["Pacific Time (US & Canada)", "America/Los_Angeles"],
    ["Kyev", "Europe/Kiev"],
    ["Ulaan Bataar", "Asia/Ulaanbaatar"],
    ["Sri Jayawardenepura", "Asia/Colombo"],
    ["Nuku'alofa", "Pacific/Tongatapu"],
    ["Cape Verde Is.", "Atlantic/Cape_Verde"],
    ["Bern", "Europe/Zurich"],
    ["West Central Africa", "Africa/Algiers"],
    ["Astana", "Asia/Dhaka"],
    ["Canberra", "Australia/Melbourne"],
    ["UTC", "Etc/UTC"],
  ];
  for (const [name, zone] of railsMappings) {
    it(`maps ${name} to ${zone} as Rails does`, () => {
      assert.equal(USER_TIME_ZONES.get(name), zone);
    });
  }
});

describe("CONTACT_TIME_ZONES", () => {
  it("holds the ten North American zones, all of them user zones too", () => {
    assert.equal(CONTACT_TIME_ZONES.size, 10);
    for (const name of CONTACT_TIME_ZONES) assert.ok(USER_TIME_ZONES.has(name), name);
    assert.ok(CONTACT_TIME_ZONES.has("Atlantic Time (Canada)"));
    assert.ok(!CONTACT_TIME_ZONES.has("London"));
  });
});

describe("IM_NETWORKS", () => {
  it("holds aim, xmpp, msn and yahoo only", () => {
    assert.deepEqual([...IM_NETWORKS].sort(), ["aim", "msn", "xmpp", "yahoo"]);
  });
});

describe("SUBDIVISIONS", () => {
  it("has 50 states, DC, 5 territories and 3 military codes for the US", () => {
    assert.equal(SUBDIVISIONS.US.size, 59);
    for (const code of ["CA", "NY", "DC", "PR", "GU", "VI", "AS", "MP", "AA", "AE", "AP", "WY"]) {
      assert.ok(SUBDIVISIONS.US.has(code), code);
    }
    for (const code of ["BC", "XX", "ca", ""]) assert.ok(!SUBDIVISIONS.US.has(code), code);
  });

  it("has the 13 provinces and territories for Canada", () => {
    assert.deepEqual([...SUBDIVISIONS.CA].sort(), [
      "AB",
      "BC",
      "MB",
      "NB",
      "NL",
      "NS",
      "NT",
      "NU",
      "ON",
      "PE",
      "QC",
      "SK",
      "YT",
    ]);
  });
});

describe("isValidPostalCode", () => {
  const cases: Array<["US" | "CA", string, boolean]> = [
    ["US", "98101", true],
    ["US", "98101-1234", true],
    ["US", "9810", false],
    ["US", "981011", false],
    ["US", "98101-123", false],
    ["US", "98101 1234", false],
    ["US", "V6B 1A1", false],
    ["CA", "V6B 1A1", true],
    ["CA", "V6B1A1", true],
    ["CA", "v6b 1a1", true],
    ["CA", "K1A 0B1", true],
    ["CA", "X0A 0H0", true],
    ["CA", "T2W 3Z9", true],
    ["CA", "V6B  1A1", false],
    ["CA", "V6B-1A1", false],
    ["CA", "W6B 1A1", false],
    ["CA", "Z6B 1A1", false],
    ["CA", "D6B 1A1", false],
    ["CA", "V6O 1A1", false],
    ["CA", "V6B 1U1", false],
    ["CA", "V6B 1A", false],
    ["CA", "98101", false],
  ];
  for (const [country, code, expected] of cases) {
    it(`${country} ${JSON.stringify(code)} -> ${expected}`, () => {
      assert.equal(isValidPostalCode(country, code), expected);
    });
  }
});
