package broker

import "github.com/switchboardhq/switchboard"

// SetQueuedHook lets tests learn, without sleeping, that a call is waiting
// for a concurrency slot.
func SetQueuedHook(b *Broker, f func(tool string)) {
	b.limits.mu.Lock()
	b.limits.queued = f
	b.limits.mu.Unlock()
}

// SetAwaitHook lets tests learn, without sleeping, that a call waits for
// the in-flight call holding its idempotency key (AwaitInFlight). Set it
// before any call.
func SetAwaitHook(b *Broker, f func(key string)) { b.awaitHook = f }

// CallDigest is the fingerprint claimKey stores for a call of tool (with
// its input canonicalized), so tests can plant an idempotency record.
func CallDigest(tool, sessionID string, input []byte) string {
	return callDigest(&call{tool: switchboard.Tool{Name: tool}, input: input}, CallRequest{SessionID: sessionID})
}

// LegacyDigest is the fingerprint a daemon before canonical inputs stored
// (the input compacted), so tests can plant a key it claimed.
func LegacyDigest(tool, sessionID string, input []byte) string {
	return legacyDigest(&call{tool: switchboard.Tool{Name: tool}, input: input}, CallRequest{SessionID: sessionID})
}
