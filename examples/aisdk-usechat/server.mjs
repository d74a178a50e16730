// The app's backend for the AI SDK page, as small as it can be: it serves
// the built page (dist/) and opens each tab's switchboard session with the
// admin token (POST /api/v1/sessions), handing the page only the session
// token. The page then talks to the daemon's /api/v1/agent/chat directly,
// cross-origin, so the daemon must allow this origin (--allow-origin).
// Node 18+, standard library only.
//
//   SWITCHBOARD_TOKEN=$(cat ~/.local/share/switchboard/admin.token) node server.mjs
//
// Environment: SWITCHBOARD_URL (the daemon, default http://127.0.0.1:7766),
// SWITCHBOARD_TOKEN (its admin token), SWITCHBOARD_PRINCIPAL (the user the
// tab acts for, default user:42), PORT (default 5174; 0 picks a free one),
// HOST (default 127.0.0.1). It prints one JSON line, {"url": "..."}, once it
// listens.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const base = (process.env.SWITCHBOARD_URL ?? "http://127.0.0.1:7766").replace(/\/$/, "");
const token = process.env.SWITCHBOARD_TOKEN;
const principal = process.env.SWITCHBOARD_PRINCIPAL ?? "user:42";
if (!token) {
  console.error("server.mjs: set SWITCHBOARD_TOKEN to the daemon's admin token (cat ~/.local/share/switchboard/admin.token)");
  process.exit(2);
}
const dist = fileURLToPath(new URL("./dist/", import.meta.url));
const types = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css" };

// openSession is the backend's one switchboard call: a session for the
// signed-in user (here always `principal`; a real app takes it from its own
// login).
async function openSession() {
  const res = await fetch(`${base}/api/v1/sessions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ principal }),
  });
  const body = await res.json().catch(() => null);
  if (res.status !== 201) throw new Error(`POST ${base}/api/v1/sessions: ${res.status} ${JSON.stringify(body)}`);
  return { api: base, sessionToken: body.sessionToken };
}

const server = createServer(async (req, res) => {
  const send = (status, type, body) => { res.writeHead(status, { "Content-Type": type }); res.end(body); };
  try {
    if (req.method === "POST" && req.url === "/app/switchboard-session") {
      return send(200, "application/json", JSON.stringify(await openSession()));
    }
    if (req.method !== "GET") return send(405, "text/plain", "method not allowed");
    const path = new URL(req.url, "http://x").pathname;
    const file = normalize(join(dist, path === "/" ? "index.html" : path));
    if (!file.startsWith(dist)) return send(404, "text/plain", "not found");
    const body = await readFile(file).catch(() => null);
    if (!body) {
      return send(404, "text/plain", path === "/" ? "dist/ is not built: run npm run build" : "not found");
    }
    send(200, types[extname(file)] ?? "application/octet-stream", body);
  } catch (err) {
    send(502, "text/plain", String(err.message ?? err));
  }
});
server.listen(Number(process.env.PORT ?? 5174), process.env.HOST ?? "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(JSON.stringify({ url: `http://${address}:${port}/` }));
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
