// The React bindings with React's own test renderer (no browser): a real
// Connection against the stand-in daemon routes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement as h, useState } from "react";
import TestRenderer, { act } from "react-test-renderer";
import { connect } from "../switchboard.js";
import { SwitchboardProvider, useConnectionStatus, useTool, useAgentContext, flushAgentContext } from "../react.js";
import { fakeDaemon, until, request } from "./daemon.mjs";

globalThis.IS_REACT_ACT_ENVIRONMENT = true;

const open = (d) => connect({ url: "http://daemon.test", sessionId: "s1", sessionToken: "tok", fetch: d.fetch, endOnPageHide: false });

test("useConnectionStatus follows the connection", async (t) => {
  const d = fakeDaemon();
  const sb = open(d);
  t.after(() => sb.disconnect());
  const seen = [];
  function Status() {
    const s = useConnectionStatus();
    seen.push(s);
    return s;
  }
  let r;
  await act(async () => { r = TestRenderer.create(h(SwitchboardProvider, { connection: sb }, h(Status))); });
  await act(() => until(() => sb.status === "open"));
  assert.equal(r.toJSON(), "open");
  await act(async () => { sb.disconnect(); });
  assert.equal(r.toJSON(), "closed");
  assert.deepEqual([seen[0], seen.at(-1)], ["connecting", "closed"]);
  r.unmount();
});

test("useTool mounts a tool for the component's lifetime and runs the latest handler", async (t) => {
  const d = fakeDaemon();
  const sb = open(d);
  t.after(() => sb.disconnect());
  let setCount;
  function Counter() {
    const [count, set] = useState(0);
    setCount = set;
    useTool({ name: "counter.read", description: "Read the counter.", class: "read", handler: () => ({ count }) });
    return String(count);
  }
  function App({ show }) {
    return h(SwitchboardProvider, { connection: sb }, show ? h(Counter) : null);
  }
  let r;
  await act(async () => { r = TestRenderer.create(h(App, { show: true })); });
  await until(() => String(d.advertised) === "counter.read");
  assert.equal(d.puts.at(-1).tools[0].class, "read");
  const puts = d.puts.length;

  await act(async () => setCount(7));
  d.send("browser.action.request", request("counter.read", {}));
  await until(() => d.results.length === 1);
  assert.deepEqual(d.results[0].result, { count: 7 });
  assert.equal(d.puts.length, puts, "a new handler does not re-advertise");

  await act(async () => r.update(h(App, { show: false })));
  await until(() => d.advertised?.length === 0);
  r.unmount();
});

test("useAgentContext reports the contexts of mounted components", async (t) => {
  const d = fakeDaemon();
  const sb = open(d);
  t.after(() => sb.disconnect());
  await until(() => sb.status === "open");
  function Search({ q }) {
    useAgentContext({ id: "search", kind: "panel", label: "Search", selection: { text: q } });
    return null;
  }
  function Cart() {
    useAgentContext({ id: "cart", kind: "section", label: "Cart", attention: "focused" });
    return null;
  }
  const reports = () => d.requests.filter((x) => x.method === "PUT" && x.path.endsWith("/context")).map((x) => JSON.parse(x.body).contexts);
  let r;
  await act(async () => { r = TestRenderer.create(h(SwitchboardProvider, { connection: sb }, h(Search, { q: "oslo" }), h(Cart))); });
  await flushAgentContext(sb);
  assert.deepEqual(reports().at(-1), [
    { attention: "visible", panels: [], id: "search", kind: "panel", label: "Search", selection: { text: "oslo" } },
    { attention: "focused", panels: [], id: "cart", kind: "section", label: "Cart" },
  ]);
  await act(async () => r.update(h(SwitchboardProvider, { connection: sb }, h(Search, { q: "rome" }))));
  await flushAgentContext(sb);
  assert.deepEqual(reports().at(-1).map((c) => [c.id, c.selection?.text]), [["search", "rome"]]);
  await act(async () => r.unmount());
  await flushAgentContext(sb);
  assert.deepEqual(reports().at(-1), []);
});
