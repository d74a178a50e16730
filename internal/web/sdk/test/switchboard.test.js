import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, SwitchboardError } from "../switchboard.js";
import { fakeDaemon, until, request } from "./daemon.mjs";

const opts = (d, extra = {}) => ({ url: "http://daemon.test", sessionId: "s1", sessionToken: "tok", fetch: d.fetch, endOnPageHide: false, ...extra });

test("connect needs credentials", () => {
  assert.throws(() => connect({ sessionId: "s1" }), TypeError);
});

test("registerTool advertises, a call runs the handler and posts the result, unmount withdraws", async (t) => {
  const d = fakeDaemon();
  const sb = connect(opts(d));
  t.after(() => sb.disconnect());
  const off = sb.registerTool({ name: "nav.goto", description: "Go.", handler: ({ page }) => ({ page }) });
  await until(() => sb.status === "open" && d.advertised?.includes("nav.goto"));
  const tool = d.puts.at(-1).tools[0];
  assert.equal(tool.surface, "browser");
  assert.equal(tool.class, "ui");
  assert.equal(tool.viewStateOnly, true);
  assert.equal(sb.webmcp, "off"); // no document in Node

  const req = request("nav.goto", { page: "media" });
  d.send("browser.action.request", req);
  await until(() => d.results.length === 1);
  assert.deepEqual(d.results[0], { protocolVersion: "2026-11-30", invocationId: req.invocationId, ok: true, result: { page: "media" } });

  off();
  await until(() => d.advertised?.length === 0);
});

test("registerTool refuses a class that is not read or ui", (t) => {
  const d = fakeDaemon();
  const sb = connect(opts(d));
  t.after(() => sb.disconnect());
  assert.throws(() => sb.registerTool({ name: "a.b", description: "x", class: "mutate", handler() {} }), (e) => e.code === "EXEMPTION_VIOLATION");
});

test("bad handler outcomes end with a code: throw, a function, a cycle, never resolving", async (t) => {
  const d = fakeDaemon();
  const sb = connect(opts(d, { handlerTimeoutMs: 50 }));
  t.after(() => sb.disconnect());
  sb.registerTool({ name: "x.throws", description: "x", handler: () => { throw new SwitchboardError("USER_DENIED", "no"); } });
  sb.registerTool({ name: "x.fn", description: "x", handler: () => () => 1 });
  sb.registerTool({ name: "x.cycle", description: "x", handler: () => { const o = {}; o.o = o; return o; } });
  sb.registerTool({ name: "x.hang", description: "x", handler: () => new Promise(() => {}) });
  await until(() => sb.status === "open" && d.advertised?.length === 4);
  const want = { "x.throws": "USER_DENIED", "x.fn": "INTERNAL", "x.cycle": "INTERNAL", "x.hang": "TIMEOUT" };
  for (const name of Object.keys(want)) d.send("browser.action.request", request(name, {}));
  await until(() => d.results.length === 4);
  for (const r of d.results) assert.equal(r.ok, false);
  assert.deepEqual(new Set(d.results.map((r) => r.error.code)), new Set(Object.values(want)));
});

test("a tool the daemon refuses is left out and the rest advertised again", async (t) => {
  const d = fakeDaemon({
    onPut: (b) => b.tools.some((x) => x.name === "bad.schema")
      ? Response.json({ error: { code: "SCHEMA_VIOLATION", message: "tool bad.schema: inputSchema: no (nothing was registered)",
        details: { issues: [{ index: 1, name: "bad.schema", code: "SCHEMA_VIOLATION", message: "tool bad.schema: inputSchema: no" }] } } }, { status: 422 })
      : null,
  });
  const sb = connect(opts(d));
  t.after(() => sb.disconnect());
  const errors = [];
  sb.on("error", (e) => errors.push(e.code));
  sb.registerTool({ name: "good.one", description: "x", handler: () => 1 });
  sb.registerTool({ name: "bad.schema", description: "x", inputSchema: { type: "object", properties: { n: { type: "nmber" } } }, handler: () => 1 });
  await until(() => d.puts.length >= 2 && String(d.advertised) === "good.one");
  assert.deepEqual(errors, ["SCHEMA_VIOLATION"]);
  // A change elsewhere does not send the refused tool again.
  sb.registerTool({ name: "good.two", description: "x", handler: () => 1 });
  await until(() => String(d.advertised) === "good.one,good.two");
  assert.ok(d.puts.slice(2).every((p) => !p.tools.some((x) => x.name === "bad.schema")));
});

test("the SDK advertises within the daemon's bounds: tool count and schema size", async (t) => {
  const d = fakeDaemon();
  const sb = connect(opts(d));
  t.after(() => sb.disconnect());
  const errors = [];
  sb.on("error", (e) => errors.push(e.code));
  sb.registerTool({ name: "big.schema", description: "x", inputSchema: { type: "object", description: "x".repeat(5 << 20) }, handler: () => 1 });
  for (let i = 0; i < 10000; i++) sb.registerTool({ name: `t.n${i}`, description: "x", handler: () => i });
  await until(() => d.advertised?.length === 256);
  assert.ok(errors.includes("PAYLOAD_TOO_LARGE"));
  assert.ok(errors.includes("INVALID_INPUT"));
  assert.ok(d.requests.filter((r) => r.method === "PUT").every((r) => r.body.length < 1 << 20));
  assert.equal(sb.tools.length, 10001);
});

test("WebMCP tools of document.modelContext are advertised beside registerTool's and withdrawn on abort", async (t) => {
  const { ModelContext } = await import("./modelcontext.mjs");
  const mc = new ModelContext();
  globalThis.document = { modelContext: mc };
  t.after(() => { delete globalThis.document; });
  const d = fakeDaemon();
  const sb = connect(opts(d, { webmcp: { viewStateOnly: ["openDialog"] } }));
  t.after(() => sb.disconnect());
  const errors = [];
  sb.on("error", (e) => errors.push(e.code));
  sb.registerTool({ name: "nav.goto", description: "Go.", handler: () => 1 });
  const ac = new AbortController();
  await mc.registerTool({ name: "searchFlights", description: "Search.", annotations: { readOnlyHint: true }, execute: ({ to }) => ({ to }) }, { signal: ac.signal });
  await mc.registerTool({ name: "openDialog", description: "Open.", execute: () => "opened" });
  await mc.registerTool({ name: "nav.goto", description: "Clash.", annotations: { readOnlyHint: true }, execute: () => 0 });
  await until(() => sb.webmcp === "native" && String(d.advertised) === "nav.goto,page.search_flights,page.open_dialog");
  assert.ok(errors.includes("CONFLICT"));
  const classes = Object.fromEntries(d.puts.at(-1).tools.map((x) => [x.name, x.class]));
  assert.deepEqual(classes, { "nav.goto": "ui", "page.search_flights": "read", "page.open_dialog": "ui" });

  const req = request("page.search_flights", { to: "Oslo" });
  d.send("browser.action.request", req);
  await until(() => d.results.length === 1);
  assert.deepEqual(d.results[0].result, { to: "Oslo" });

  ac.abort();
  await until(() => String(d.advertised) === "nav.goto,page.open_dialog");
});
