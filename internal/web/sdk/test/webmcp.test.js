import { test } from "node:test";
import assert from "node:assert/strict";
import { toolName, mapTool, resultOf, bridge, guardResults } from "../webmcp.js";
import { until } from "./daemon.mjs";
import { ModelContext } from "./modelcontext.mjs";

test("toolName keeps names that fit the grammar and maps the rest", () => {
  const cases = [
    ["nav.goto", "nav.goto"],
    ["media.album.rename", "media.album.rename"],
    ["v2.users.get", "v2.users.get"],
    ["searchFlights", "page.search_flights"],
    ["add-to-cart", "page.add_to_cart"],
    ["Cart.AddItem", "cart.add_item"],
    ["getHTMLTitle", "page.get_html_title"],
    ["tool", "page.tool"],
    ["a..b", "a.b"],
    ["_x", "page.x"],
    ["bad name!", "page.bad_name"],
    ["", ""],
    ["!!!", ""],
    ["x".repeat(200), ""],
    [42, ""],
  ];
  for (const [in_, want] of cases) assert.equal(toolName(in_), want, `toolName(${JSON.stringify(in_)})`);
});

const run = () => Promise.resolve(null);

test("mapTool: readOnlyHint → read, declared view-state-only → ui, anything else EXEMPTION_VIOLATION", () => {
  const ro = mapTool({ name: "cart.show", description: "d", annotations: { readOnlyHint: true, untrustedContentHint: true }, title: "Cart" }, () => false, run);
  assert.equal(ro.def.class, "read");
  assert.deepEqual(ro.def.webmcp, { name: "cart.show", untrustedContent: true });
  assert.deepEqual(ro.def.ui, { title: "Cart" });
  assert.deepEqual(ro.def.inputSchema, { type: "object" });

  const ui = mapTool({ name: "openDialog", description: "d", inputSchema: '{"type":"object"}' }, (n) => n === "openDialog", run);
  assert.equal(ui.def.name, "page.open_dialog");
  assert.equal(ui.def.class, "ui");

  const no = mapTool({ name: "orders.place", description: "d", annotations: { readOnlyHint: false } }, () => false, run);
  assert.equal(no.def, undefined);
  assert.equal(no.error.code, "EXEMPTION_VIOLATION");

  const bad = mapTool({ name: "x.y", description: "d", annotations: { readOnlyHint: true }, inputSchema: "{not json" }, () => false, run);
  assert.equal(bad.error.code, "SCHEMA_VIOLATION");

  const unnamed = mapTool({ name: "!!", description: "d" }, () => true, run);
  assert.equal(unnamed.error.code, "INVALID_INPUT");
});

test("resultOf parses JSON text and passes the rest", () => {
  assert.deepEqual(resultOf('{"a":1}'), { a: 1 });
  assert.equal(resultOf("2 items"), "2 items");
  assert.equal(resultOf(null), null);
  assert.equal(resultOf(undefined), null);
});

test("bridge follows toolchange and runs calls through executeTool", async () => {
  const mc = new ModelContext();
  let defs = [], refused = [];
  const stop = bridge(mc, { self: undefined, onTools: (d, r) => { defs = d; refused.push(...r); } });
  const ac = new AbortController();
  await mc.registerTool({ name: "sum", description: "Add.", annotations: { readOnlyHint: true }, execute: ({ a, b }) => ({ sum: a + b }) }, { signal: ac.signal });
  await mc.registerTool({ name: "orders.place", description: "Order.", execute: () => 1 });
  await until(() => defs.length === 1 && refused.length > 0);
  assert.equal(defs[0].name, "page.sum");
  assert.equal(refused[0].code, "EXEMPTION_VIOLATION");
  assert.deepEqual(await defs[0].handler({ a: 2, b: 3 }, { signal: new AbortController().signal }), { sum: 5 });
  ac.abort();
  await until(() => defs.length === 0);
  stop();
});

test("bridge refuses a second WebMCP name that maps to a name already taken", async () => {
  const mc = new ModelContext();
  let defs = [], refused = [];
  const stop = bridge(mc, { self: undefined, onTools: (d, r) => { defs = d; refused.push(...r); } });
  await mc.registerTool({ name: "page.search_flights", description: "A.", annotations: { readOnlyHint: true }, execute: () => "first" });
  await mc.registerTool({ name: "searchFlights", description: "B.", annotations: { readOnlyHint: true }, execute: () => "second" });
  await until(() => refused.length > 0);
  assert.deepEqual(defs.map((d) => d.name), ["page.search_flights"]);
  assert.equal(refused[0].code, "CONFLICT");
  assert.match(refused[0].message, /searchFlights maps to page\.search_flights/);
  assert.equal(await defs[0].handler({}, { signal: new AbortController().signal }), "first");
  stop();
});

test("guardResults makes results JSON cannot carry fail the call", async () => {
  const mc = new ModelContext();
  assert.equal(guardResults(mc), "native");
  assert.equal(guardResults(mc), "native"); // once
  await mc.registerTool({ name: "a.fn", description: "d", execute: () => () => 1 });
  await mc.registerTool({ name: "a.cycle", description: "d", execute: () => { const o = {}; o.o = o; return o; } });
  await mc.registerTool({ name: "a.ok", description: "d", execute: async () => ({ ok: true }) });
  await assert.rejects(mc.tools.get("a.fn").execute({}), /returned a function/);
  await assert.rejects(mc.tools.get("a.cycle").execute({}), /circular/);
  assert.deepEqual(await mc.tools.get("a.ok").execute({}), { ok: true });
  assert.equal(guardResults(undefined), "none");
});
