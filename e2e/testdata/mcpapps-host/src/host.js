// A minimal MCP Apps host: the official TypeScript MCP client talks to
// switchboard's /mcp, and the official AppBridge (@modelcontextprotocol/
// ext-apps) renders a tool's ui:// view in a sandboxed iframe, forwarding
// the view's tools/call to the server. e2e/mcpapps_test.go drives it.
//
// The page's URL fragment carries the bearer token: #token=...
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge, PostMessageTransport, RESOURCE_MIME_TYPE, getToolUiResourceUri, isToolVisibilityAppOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const EXTENSION = "io.modelcontextprotocol/ui";
const token = new URLSearchParams(location.hash.slice(1)).get("token") ?? "";

const host = (window.mcpHost = { ready: false, error: "", logs: [], calls: [], views: [], tools: [], seq: 0 });

const client = new Client({ name: "switchboard-e2e-host", version: "1.0.0" },
  { capabilities: { extensions: { [EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } });

// cspOf turns a resource's _meta.ui.csp into the policy the host enforces:
// the extension's restrictive default, widened only by declared origins.
function cspOf(csp = {}) {
  const list = (v) => (Array.isArray(v) ? v.filter((d) => /^https?:\/\/[^\s;,']+$/.test(d)) : []);
  const res = list(csp.resourceDomains).join(" ");
  const conn = list(csp.connectDomains).join(" ");
  const frames = list(csp.frameDomains).join(" ");
  const base = list(csp.baseUriDomains).join(" ");
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${res}`,
    `style-src 'unsafe-inline' ${res}`,
    `img-src data: ${res}`,
    `font-src ${res || "'none'"}`,
    `media-src data: ${res}`,
    `connect-src ${conn || "'none'"}`,
    `frame-src ${frames || "'none'"}`,
    `base-uri ${base || "'none'"}`,
    "object-src 'none'",
    "form-action 'none'",
  ].join("; ");
}

function withCSP(html, policy) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replace(/"/g, "&quot;")}">`;
  return html.replace(/<head>/i, `<head>${meta}`);
}

// show calls a tool as the model would and, when it links a view, renders
// the view and hands it the call's input and result.
host.callAndShow = async (name, args) => {
  const tool = host.tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  const uri = getToolUiResourceUri(tool);
  const resultP = client.callTool({ name, arguments: args });
  if (!uri) return resultP;
  const read = await client.readResource({ uri });
  const content = read.contents.find((c) => c.mimeType === RESOURCE_MIME_TYPE);
  if (!content) throw new Error(`${uri} is not an MCP Apps view`);
  const policy = cspOf(content._meta?.ui?.csp);

  const turn = document.createElement("div");
  turn.className = "turn";
  const label = document.createElement("small");
  label.textContent = `assistant called ${name}`;
  const iframe = document.createElement("iframe");
  // No allow-same-origin: the view runs in an opaque origin and cannot
  // touch this page, its storage or its cookies.
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.dataset.view = String(host.views.length);
  turn.append(label, iframe);
  document.getElementById("chat").append(turn);

  const bridge = new AppBridge(client, { name: "switchboard-e2e-host", version: "1.0.0" },
    { serverTools: {}, serverResources: {}, logging: {} }, { hostContext: { theme: "light", displayMode: "inline", platform: "web" } });
  bridge.onloggingmessage = (p) => host.logs.push(p);
  // calls/answered count the view's tool calls; answeredAt and sizedAt
  // order its last answer and its last size change (host.seq), so a test
  // can wait for a view at rest: every call answered and rendered.
  const view = { uri, policy, initialized: false, result: null, height: 0, calls: 0, answered: 0, answeredAt: 0, sizedAt: 0 };
  bridge.onsizechange = ({ height }) => { if (height) { view.height = height; view.sizedAt = ++host.seq; iframe.style.height = `${Math.min(height, 900)}px`; } };
  host.views.push(view);
  bridge.oninitialized = async () => {
    view.initialized = true;
    await bridge.sendToolInput({ arguments: args });
    view.result = await resultP;
    await bridge.sendToolResult(view.result);
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  // connect set the forwarding to the server; the host wraps it: a view
  // calls only tools whose visibility includes "app".
  const forward = bridge.oncalltool;
  bridge.oncalltool = async (params, extra) => {
    const t = host.tools.find((x) => x.name === params.name);
    const vis = t?._meta?.ui?.visibility;
    host.calls.push({ name: params.name, arguments: params.arguments, meta: params._meta ?? null });
    if (!t || (Array.isArray(vis) && !vis.includes("app"))) throw new Error(`tool ${params.name} is not callable by apps`);
    view.calls++;
    try {
      return await forward(params, extra);
    } finally {
      view.answered++;
      view.answeredAt = ++host.seq;
    }
  };
  iframe.srcdoc = withCSP(content.text, policy);
  return resultP;
};

// A hostile or broken host message, for the test: what the view answers.
host.postRaw = (index, msg) => new Promise((resolve) => {
  const iframe = document.querySelector(`iframe[data-view="${index}"]`);
  const onMsg = (ev) => {
    if (ev.source !== iframe.contentWindow || ev.data?.id !== msg.id) return;
    window.removeEventListener("message", onMsg);
    resolve(ev.data);
  };
  window.addEventListener("message", onMsg);
  iframe.contentWindow.postMessage(msg, "*");
});

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", location.origin),
    { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  host.serverExtensions = client.getServerCapabilities()?.extensions ?? {};
  host.tools = (await client.listTools()).tools;
  // What the model would see: tools whose visibility includes "model".
  host.modelTools = host.tools.filter((t) => !isToolVisibilityAppOnly(t)).map((t) => t.name);
  host.ready = true;
}

main().catch((err) => { host.error = String(err?.stack ?? err); });
