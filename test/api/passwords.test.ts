import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hashPassword, PASSWORD_COST, verifyPassword } from "../../src/api/passwords.js";

describe("password hashes", () => {
  it("are made at a deployment's cost unless told another, which the hash carries", async () => {
    assert.match(await hashPassword("correct horse"), new RegExp(`^scrypt\\$${PASSWORD_COST}\\$8\\$1\\$`));
    const cheap = await hashPassword("correct horse", 2 ** 10);
    assert.match(cheap, /^scrypt\$1024\$8\$1\$/);
    assert.equal(await verifyPassword("correct horse", cheap), true);
    assert.equal(await verifyPassword("correct horsf", cheap), false);
  });
});
