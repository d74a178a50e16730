// switchboard browser SDK, React bindings (@switchboardhq/browser/react):
//
//   const sb = connect({ url, sessionId, sessionToken });  // once, outside React
//   <SwitchboardProvider connection={sb}><App /></SwitchboardProvider>
//
//   function Search() {
//     const status = useConnectionStatus();          // "connecting" | "open" | ...
//     useTool({ name: "search.open", description: "Open the search panel.",
//               handler: () => { setOpen(true); return { open: true }; } });
//     useAgentContext({ id: "search", kind: "panel", label: "Search",
//                       selection: { text: query } });
//   }
//
// useTool mounts a browser tool for the component's lifetime (the latest
// handler runs; a changed name, description or schema re-advertises).
// useAgentContext reports what a component shows as one of the tab's
// contexts, which agents read in the workspace digest. The hooks take the
// connection from SwitchboardProvider, or as their last argument.

import { createContext, createElement, useContext, useEffect, useRef, useSyncExternalStore } from "react";

const SwitchboardContext = createContext(/** @type {any} */ (null));

/** Makes a connection available to the hooks below it. */
export function SwitchboardProvider({ connection, children }) {
  return createElement(SwitchboardContext.Provider, { value: connection }, children);
}

/** The connection from the nearest SwitchboardProvider (or the one given). */
export function useConnection(connection) {
  const fromContext = useContext(SwitchboardContext);
  const conn = connection ?? fromContext;
  if (!conn) throw new TypeError("switchboard react: no connection; wrap the app in <SwitchboardProvider connection={connect(...)}> or pass one");
  return conn;
}

/** The connection's status, re-rendering on every change: "connecting" | "open" | "reconnecting" | "closed". */
export function useConnectionStatus(connection) {
  const conn = useConnection(connection);
  return useSyncExternalStore(
    (onChange) => conn.on("status", onChange),
    () => conn.status,
    () => conn.status,
  );
}

/**
 * Mount a browser tool while the component is mounted. The handler may
 * change on every render (the latest one runs); a change of the name,
 * description, schemas or class re-advertises the tool.
 */
export function useTool(def, connection) {
  const conn = useConnection(connection);
  const handler = useRef(def.handler);
  handler.current = def.handler;
  const { handler: _h, ...rest } = def;
  const key = JSON.stringify(rest);
  useEffect(() => conn.registerTool({ ...JSON.parse(key), handler: (input, ctx) => handler.current(input, ctx) }), [conn, key]);
}

// The contexts components report, per connection, sent as the tab's whole
// report (PUT /api/v1/sessions/{id}/context replaces the previous one).
const reports = new WeakMap();

function reporter(conn) {
  let r = reports.get(conn);
  if (r) return r;
  const entries = new Map(); // token → context
  let timer = null, sent = "", sending = Promise.resolve();
  const flush = () => {
    clearTimeout(timer);
    const contexts = [...entries.values()];
    const body = JSON.stringify(contexts);
    if (body === sent) return sending;
    sent = body;
    sending = sending.then(() => conn.request(`/api/v1/sessions/${encodeURIComponent(conn.sessionId)}/context`, { method: "PUT", body: { contexts } }))
      .catch((err) => { sent = ""; if (err?.code !== "SESSION_GONE") console.warn("switchboard react: context report failed:", err?.code ?? "", err?.message ?? err); });
    return sending;
  };
  r = {
    set(token, ctx) {
      entries.set(token, ctx);
      clearTimeout(timer);
      timer = setTimeout(flush, 50); // one report for the contexts of one render
    },
    delete(token) {
      entries.delete(token);
      clearTimeout(timer);
      timer = setTimeout(flush, 50);
    },
    flush,
  };
  conn.on("status", (s) => { if (s === "open") { sent = ""; flush(); } }); // a new stream: report again
  reports.set(conn, r);
  return r;
}

/**
 * Report a context this component shows ({id, kind, label, attention?,
 * route?, selection?}) while it is mounted; a change is reported again.
 * Agents read it, as page data, in the workspace digest. Use it or
 * reportContexts from /context on one connection, not both: the daemon
 * keeps a tab's last report.
 */
export function useAgentContext(context, connection) {
  const conn = useConnection(connection);
  const token = useRef(/** @type {object | null} */ (null));
  if (!token.current) token.current = {};
  const value = JSON.stringify({ attention: "visible", panels: [], ...context });
  useEffect(() => {
    const r = reporter(conn);
    r.set(token.current, JSON.parse(value));
    return () => r.delete(token.current);
  }, [conn, value]);
}

/** Send the contexts the hooks hold now (tests, or before the page leaves). */
export function flushAgentContext(connection) {
  return reporter(connection).flush();
}
