// A stand-in for the daemon's tab routes, behind Connection's fetch option:
// the event stream (SSE), PUT .../tools, result POSTs and DELETE. Unit
// tests drive the SDK with it in Node; e2e/ drives the real daemon in
// Chromium.
const enc = new TextEncoder();

export function fakeDaemon({ onPut } = {}) {
  const d = {
    puts: [], results: [], requests: [], stream: null,
    async fetch(url, init = {}) {
      const u = new URL(url);
      const method = init.method ?? "GET";
      d.requests.push({ method, path: u.pathname, body: init.body });
      if (u.pathname.endsWith("/events")) {
        const body = new ReadableStream({
          start(c) {
            d.stream = c;
            c.enqueue(enc.encode(`event: session.ready\ndata: {"heartbeatMs":60000}\n\n`));
          },
        });
        init.signal?.addEventListener("abort", () => { try { d.stream?.close(); } catch { /* closed */ } });
        return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
      }
      if (method === "PUT" && u.pathname.endsWith("/tools")) {
        const b = JSON.parse(init.body);
        d.puts.push(b);
        const r = onPut?.(b);
        if (r) return r;
        return Response.json({ tools: b.tools });
      }
      if (method === "PUT" && u.pathname.endsWith("/context")) {
        return Response.json({ contexts: JSON.parse(init.body).contexts.length });
      }
      if (method === "POST" && u.pathname.includes("/actions/")) {
        d.results.push(JSON.parse(init.body));
        return new Response(null, { status: 204 });
      }
      if (method === "DELETE") return new Response(null, { status: 204 });
      return Response.json({ error: { code: "NOT_FOUND", message: "no route" } }, { status: 404 });
    },
    /** Send one event down the tab's stream. */
    send(kind, data) {
      d.stream.enqueue(enc.encode(`event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`));
    },
    /** The names of the last advertisement. */
    get advertised() {
      return d.puts.at(-1)?.tools.map((t) => t.name) ?? null;
    },
  };
  d.fetch = d.fetch.bind(d);
  return d;
}

/** Resolves once pred() holds (checked after each turn of the event loop). */
export async function until(pred) {
  while (!pred()) await new Promise((r) => setTimeout(r, 1));
}

export function request(tool, input, extra = {}) {
  return { protocolVersion: "2026-11-30", invocationId: `inv-${Math.random().toString(36).slice(2)}`, runId: "run-1", tool, input, ...extra };
}
