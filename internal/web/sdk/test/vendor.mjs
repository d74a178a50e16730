// The WebMCP polyfill is vendored (served by the daemon at
// /sdk/vendor/webmcp-polyfill/, no CDN at run time) from the pinned npm
// package. `npm run vendor` copies it again after a version bump;
// vendor.test.js fails while the copy and the package differ.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = `${root}node_modules/@mcp-b/webmcp-polyfill/`;
const FILES = { "index.js": "dist/index.js", "schema.js": "dist/schema.js", "LICENSE": "LICENSE", "package.json": "package.json" };

/** The vendored files as they should be: the package's, without source map links (the maps are not shipped). */
export function expected() {
  const out = {};
  for (const [to, from] of Object.entries(FILES)) {
    out[to] = readFileSync(pkg + from, "utf8").replace(/\n\/\/# sourceMappingURL=.*\n?$/, "\n");
  }
  return out;
}

export const dir = `${root}vendor/webmcp-polyfill/`;

if (process.argv.includes("--write")) {
  for (const [name, body] of Object.entries(expected())) writeFileSync(dir + name, body);
}
