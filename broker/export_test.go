package broker

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
