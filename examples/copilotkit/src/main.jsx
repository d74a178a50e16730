// A stock CopilotKit page: <CopilotKit> + <CopilotChat> from
// @copilotkit/react-core/v2, and useInterrupt rendering an approval card
// for the AG-UI interrupts switchboard ends a run with when a call needs a
// person's approval. Nothing here speaks the protocol: CopilotKit's runtime
// (runtime.mjs) and its HttpAgent do. The page takes the runtime's URL from
// ?runtime= so a test can start the runtime on any port.
import { createRoot } from "react-dom/client";
import { CopilotKit, CopilotChat, useInterrupt, useCapabilities, useDefaultRenderTool } from "@copilotkit/react-core/v2";

const runtimeUrl = new URLSearchParams(location.search).get("runtime") ?? "/api/copilotkit";

// What switchboard puts in an interrupt (docs/agent.md, "Approvals as
// interrupts"): the approval's summary as message, and the call under
// metadata.switchboard.
function ApprovalCard({ interrupt, resolve, cancel }) {
  if (!interrupt) return null;
  const call = interrupt.metadata?.switchboard ?? {};
  return (
    <div className="approval-card" data-interrupt={interrupt.id} data-tool-call={interrupt.toolCallId}
      style={{ border: "1px solid #d0d7de", borderRadius: 12, padding: 16, margin: "8px 0", background: "#fff",
        boxShadow: "0 1px 3px rgba(0,0,0,.08)", fontSize: 14 }}>
      <div style={{ fontWeight: 600, marginBottom: 6 }}>Approval needed</div>
      <div className="approval-message" style={{ marginBottom: 8 }}>{interrupt.message}</div>
      {call.tool && (
        <pre className="approval-args" style={{ background: "#f6f8fa", padding: 8, borderRadius: 6, fontSize: 12, overflowX: "auto" }}>
          {call.tool} {JSON.stringify(call.arguments ?? {}, null, 1)}
        </pre>
      )}
      <div style={{ display: "flex", gap: 8 }}>
        <button className="approve" onClick={() => resolve({ approved: true })}
          style={{ background: "#1f883d", color: "#fff", border: 0, borderRadius: 6, padding: "6px 14px", cursor: "pointer" }}>
          Approve
        </button>
        <button className="deny" onClick={() => resolve({ approved: false, reason: "Not now" })}
          style={{ background: "#fff", color: "#cf222e", border: "1px solid #cf222e", borderRadius: 6, padding: "6px 14px", cursor: "pointer" }}>
          Deny
        </button>
        <button className="cancel" onClick={() => cancel()}
          style={{ background: "none", color: "#57606a", border: 0, padding: "6px 8px", cursor: "pointer" }}>
          Cancel run
        </button>
      </div>
    </div>
  );
}

function Approvals() {
  useInterrupt({ render: (props) => <ApprovalCard {...props} /> });
  useDefaultRenderTool(); // CopilotKit's own card for each tool call, with its result
  return null;
}

// The capabilities CopilotKit learnt from the runtime's /info (an agent's
// getCapabilities()), shown so a test can read them.
function Capabilities() {
  const caps = useCapabilities();
  return <output id="capabilities" hidden data-hitl={JSON.stringify(caps?.humanInTheLoop ?? null)} />;
}

function App() {
  return (
    <CopilotKit runtimeUrl={runtimeUrl}>
      <Approvals />
      <Capabilities />
      <div style={{ maxWidth: 760, height: "100%", margin: "0 auto", background: "#fff" }}>
        <CopilotChat labels={{ chatInputPlaceholder: "Ask the assistant…" }} />
      </div>
    </CopilotKit>
  );
}

createRoot(document.getElementById("root")).render(<App />);
