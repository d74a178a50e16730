// A stock CopilotKit runtime whose one agent is switchboard's AG-UI
// endpoint: CopilotRuntime + createCopilotNodeListener from
// @copilotkit/runtime/v2 and an @ag-ui/client HttpAgent. This is what a team
// with a CopilotKit app runs (or already runs) beside it; see
// docs/frontends-copilotkit.md.
//
//   SWITCHBOARD_URL=http://127.0.0.1:7766 SWITCHBOARD_TOKEN=... node runtime.mjs
//
// Environment: SWITCHBOARD_URL (the daemon), SWITCHBOARD_TOKEN (a bearer the
// daemon's /api/v1/agui accepts), PORT (0 picks a free one), HOST
// (127.0.0.1). It prints one JSON line, {"url": ".../api/copilotkit"}, once
// it listens, and stops on SIGTERM or when its stdin closes.
import { createServer } from "node:http";

// CopilotKit reports usage to its own host unless told not to; set before
// the runtime is loaded, because it reads the variable when it loads.
process.env.COPILOTKIT_TELEMETRY_DISABLED ??= "true";

const { HttpAgent } = await import("@ag-ui/client");
const { CopilotRuntime } = await import("@copilotkit/runtime/v2");
const { createCopilotNodeListener } = await import("@copilotkit/runtime/v2/node");

const base = (process.env.SWITCHBOARD_URL ?? "http://127.0.0.1:7766").replace(/\/$/, "");
const token = process.env.SWITCHBOARD_TOKEN;
if (!token) {
  console.error("runtime.mjs: set SWITCHBOARD_TOKEN (the daemon's admin token, or a browser session token)");
  process.exit(2);
}

// The stock HttpAgent runs, streams and resumes on its own. It has no
// getCapabilities(), which is where CopilotKit's /info (and so the page's
// useCapabilities()) reads an agent's capabilities from; AG-UI defines no
// URL for them, so this subclass reads switchboard's declaration from
// GET /api/v1/agui/capabilities. Optional: interrupts work without it.
class SwitchboardAgent extends HttpAgent {
  async getCapabilities() {
    const res = await fetch(`${this.url}/capabilities`, { headers: this.headers });
    if (!res.ok) throw new Error(`GET ${this.url}/capabilities: HTTP ${res.status}`);
    return res.json();
  }
}

const runtime = new CopilotRuntime({
  agents: {
    default: new SwitchboardAgent({
      url: `${base}/api/v1/agui`,
      headers: { Authorization: `Bearer ${token}` },
    }),
  },
});
const listener = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit", cors: true });

const server = createServer(listener);
server.listen(Number(process.env.PORT ?? 4111), process.env.HOST ?? "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(JSON.stringify({ url: `http://${address}:${port}/api/copilotkit` }));
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop); // the test holds stdin open; when it exits, so do we
process.stdin.resume();
