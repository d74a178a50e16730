// Runs the example with one command: CopilotKit's runtime (runtime.mjs, on
// RUNTIME_PORT, default 4111) and a static server for the built page
// (dist/, on PORT, default 5175), then prints the address to open, which
// tells the page where the runtime is (?runtime=). Node 20+, standard
// library only; the runtime needs the installed packages (./build.sh).
//
//   SWITCHBOARD_TOKEN=$(cat ~/.local/share/switchboard/admin.token) node start.mjs
//
// SWITCHBOARD_URL and SWITCHBOARD_TOKEN are passed to the runtime (see
// runtime.mjs). Ctrl-C stops both.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const dist = join(here, "dist") + "/";
const types = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css",
  ".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf", ".svg": "image/svg+xml" };

// The runtime prints {"url": ...} once it listens and exits when its stdin
// closes, so it stops with this process however that ends.
const runtime = spawn(process.execPath, ["runtime.mjs"], {
  cwd: here,
  env: { ...process.env, PORT: process.env.RUNTIME_PORT ?? "4111" },
  stdio: ["pipe", "pipe", "inherit"],
});
runtime.on("exit", (code) => {
  console.error(`start.mjs: the CopilotKit runtime exited (${code}); is the example built (./build.sh) and SWITCHBOARD_TOKEN set?`);
  process.exit(1);
});
const first = await new Promise((resolve) => createInterface({ input: runtime.stdout }).once("line", resolve));
const runtimeURL = JSON.parse(first).url;

const server = createServer(async (req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  const file = normalize(join(dist, path === "/" ? "index.html" : path));
  const body = file.startsWith(dist) ? await readFile(file).catch(() => null) : null;
  if (!body) {
    res.writeHead(404, { "Content-Type": "text/plain" });
    return res.end(path === "/" ? "dist/ is not built: run ./build.sh" : "not found");
  }
  res.writeHead(200, { "Content-Type": types[extname(file)] ?? "application/octet-stream" });
  res.end(body);
});
server.listen(Number(process.env.PORT ?? 5175), process.env.HOST ?? "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(`open http://${address}:${port}/?runtime=${encodeURIComponent(runtimeURL)}`);
});
const stop = () => { runtime.removeAllListeners("exit"); runtime.kill("SIGTERM"); server.close(() => process.exit(0)); };
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
