// switchboard browser SDK: importing this module makes document.modelContext
// available before the page's own scripts use it — the browser's WebMCP
// where it has one, else the vendored @mcp-b/webmcp-polyfill. Put it first:
//
//   <script type="module" src="http://127.0.0.1:7766/sdk/modelcontext.js"></script>
//   <script type="module">document.modelContext.registerTool({...})</script>
//
// Module scripts run in document order, and this one installs the polyfill
// synchronously (a static import, no top-level await), so the next script
// finds it. connect() does the same on its own; this module is for pages
// that register tools before they connect.

import { initializeWebMCPPolyfill } from "./vendor/webmcp-polyfill/index.js";
import { guardResults } from "./webmcp.js";

if (typeof document !== "undefined" && !document.modelContext) initializeWebMCPPolyfill();

/** "native", "polyfill" or "none": which document.modelContext this page has. */
export const modelContext = guardResults(globalThis.document?.modelContext);
