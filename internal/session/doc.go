// Package session keeps the live browser tabs connected to the daemon and
// is the browser half of every browser tool call.
//
// A tab's session is opened by the app's backend (Create, with the admin
// token) and then used by the browser SDK with its session token: it PUSHes
// the browser tools it has mounted (Advertise), holds one event stream
// (Attach) on which dispatched BrowserActionRequests arrive, and POSTs each
// result back. The Manager implements broker.Browser: Resolve picks the tab
// for a call, Deliver hands it the request and says when the tab is gone,
// Withdraw tells it a call ended without its answer. This package delivers
// and acknowledges; it writes no invocation record, keeps no call timeout
// and checks no result: the broker does (internal/broker/complete.go is
// where a tab's answer ends a call), and the return path acknowledges the
// answered request here (Ack) so it leaves the tab's log.
//
// How the pieces meet. Every hand-off goes through a bus.Bus so a
// cross-replica bus can replace the in-process one without touching this
// code: Deliver subscribes to the session's state topic, then publishes the
// request on the session's dispatch topic; whoever holds the tab's stream
// appends it to the session's event log and writes it to the tab. Ack and
// Withdraw travel on the same topic and drop the request from the log.
//
// Liveness. A tab is offered for calls (LiveTools, Resolve's implicit
// choice) only while its stream is connected. When the stream drops, calls
// that name the tab wait at most the reconnect window (Options.Reconnect)
// for it to come back, then fail with SESSION_GONE; the session itself is
// kept for the longer keep window (Options.Grace) so a reload resumes it.
// When that passes with no new stream the tab is gone: its tools are
// withdrawn and WatchGone fires. Gone is not closed: the tab may come back
// and re-advertise. List and Info describe the kept tabs.
// Close (DELETE, sent by the SDK when the page goes away for good) ends the
// session at once and for good.
//
// Several replicas (presence.go). A tab's stream is held by one replica;
// everything addressed to the tab — a call, an application event (Send),
// a run's default target (BindRun) — reaches it from any replica over the
// session's dispatch topic, and only the holder writes its event log.
//
// Resume. Events carry ids "<epoch>-<seq>"; the epoch changes whenever this
// process (re)creates the session's state, so an id from before a restart
// never hides newer events. A stream opened with Last-Event-ID gets every
// retained event after that id; one opened without it gets every request
// not yet acknowledged. A request is acknowledged once its tab's answer
// ended the call (Ack), or withdrawn when the broker ended it (timeout,
// cancel, gone), and only then leaves the log.
package session
