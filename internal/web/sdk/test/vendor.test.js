import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { expected, dir } from "./vendor.mjs";

test("the vendored WebMCP polyfill is the pinned npm package's (run `npm run vendor` after a bump)", () => {
  for (const [name, body] of Object.entries(expected())) {
    assert.equal(readFileSync(dir + name, "utf8"), body, `vendor/webmcp-polyfill/${name} differs from node_modules`);
  }
});
