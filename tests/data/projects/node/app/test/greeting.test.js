const test = require("node:test");
const assert = require("node:assert");
const greeting = require("../index.js");

test("greets the world", () => {
  assert.strictEqual(greeting(), "hello, world");
});
