// A stock AI SDK chat page, written the way a team writes its own: useChat
// from @ai-sdk/react with the `ai` package's DefaultChatTransport, pointed
// at switchboard's /api/v1/agent/chat. Nothing from switchboard is imported:
// the protocol path is the AI SDK's own code, so e2e/aisdk_test.go proves
// that a stock front end gets tools and approvals from switchboard.
//
// Where the page gets its switchboard session: like any app, from its own
// backend (GET /app/switchboard-session), which opens one with the admin
// token (POST /api/v1/sessions) and hands the page only the session token.
// The token is kept in sessionStorage so a reload stays the same tab and
// can reattach to its chat's answer in progress (`resume: true`).
import { useMemo, useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, isToolUIPart, getToolName } from "ai";
import "./style.css";

async function switchboardSession() {
  const kept = sessionStorage.getItem("switchboard-session");
  if (kept) return JSON.parse(kept);
  const res = await fetch("/app/switchboard-session", { method: "POST" });
  if (!res.ok) throw new Error("the app backend did not open a switchboard session: " + res.status);
  const s = await res.json(); // {api, sessionToken}
  sessionStorage.setItem("switchboard-session", JSON.stringify(s));
  return s;
}

function Chat({ session, chatId, resume }) {
  const transport = useMemo(() => new DefaultChatTransport({
    api: session.api + "/api/v1/agent/chat",
    headers: { Authorization: "Bearer " + session.sessionToken },
  }), [session]);
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: chatId,
    resume,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";
  return (
    <main className="chat" data-status={status}>
      <header>
        <h1>Acme assistant</h1>
        <span className="status">{status}</span>
      </header>
      <ol className="messages">
        {messages.map((m) => (
          <li key={m.id} className={"message " + m.role} data-role={m.role}>
            {m.parts.map((part, i) => {
              if (part.type === "text") return <p key={i} className="text">{part.text}</p>;
              if (isToolUIPart(part)) {
                return <ToolPart key={part.toolCallId} part={part} respond={addToolApprovalResponse} />;
              }
              return null;
            })}
          </li>
        ))}
      </ol>
      {error && <p className="error" role="alert">{error.message}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!input.trim() || busy) return;
          sendMessage({ text: input });
          setInput("");
        }}
      >
        <input value={input} onChange={(e) => setInput(e.target.value)} placeholder="Ask the assistant…" aria-label="Message" />
        <button type="submit" disabled={busy}>Send</button>
      </form>
    </main>
  );
}

const stateLabel = {
  "input-streaming": "Preparing",
  "input-available": "Running",
  "approval-requested": "Needs your approval",
  "approval-responded": "Answered",
  "output-available": "Done",
  "output-error": "Failed",
  "output-denied": "Denied",
};

function ToolPart({ part, respond }) {
  const name = getToolName(part);
  return (
    <section className="tool" data-tool={name} data-state={part.state} data-call={part.toolCallId}>
      <div className="tool-head">
        <code className="tool-name">{name}</code>
        <span className={"badge " + part.state}>{stateLabel[part.state] ?? part.state}</span>
      </div>
      {part.input !== undefined && <pre className="tool-input">{JSON.stringify(part.input, null, 2)}</pre>}
      {part.state === "approval-requested" && (
        <div className="approval">
          <p>The assistant wants to run <code>{name}</code> with these arguments.</p>
          <button className="approve" onClick={() => respond({ id: part.approval.id, approved: true })}>Approve</button>
          <button className="deny" onClick={() => respond({ id: part.approval.id, approved: false, reason: "Not now" })}>Deny</button>
        </div>
      )}
      {part.state === "output-available" && <pre className="tool-output">{JSON.stringify(part.output, null, 2)}</pre>}
      {part.state === "output-error" && <p className="tool-error">{part.errorText}</p>}
      {part.state === "output-denied" && <p className="tool-denied">Denied{part.approval?.reason ? ": " + part.approval.reason : ""}.</p>}
    </section>
  );
}

const params = new URLSearchParams(location.search);
const root = createRoot(document.getElementById("root"));
switchboardSession().then(
  (session) => root.render(<Chat session={session} chatId={params.get("chat") || "chat_" + crypto.randomUUID()} resume={params.has("resume")} />),
  (err) => root.render(<p className="error" role="alert">{String(err)}</p>),
);
