package bus

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/postgres"
)

// readTimeout bounds reading one stored payload and closing a connection.
const readTimeout = 10 * time.Second

// listen owns the listening connection: it keeps the LISTENed channels
// equal to the subscribed ones and the lingering ones (Subscribe) and
// reconnects, re-LISTENing every channel,
// whenever the connection is lost. Notifications arrive through the
// connection's OnNotification hook (enqueue), also while a LISTEN runs.
func (b *Postgres) listen(ctx context.Context, l *postgres.Listener) {
	defer b.wg.Done()
	backoff := reconnectMin
	up := true
	for {
		if up {
			err := b.serve(ctx, l)
			b.down()
			cctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			_ = l.Close(cctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			b.log.Warn("bus: listening connection lost; reconnecting (messages from other replicas are lost until it is back)",
				"err", err)
			up = false
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if err := l.Connect(ctx); err != nil {
			backoff = min(2*backoff, reconnectMax)
			b.log.Warn("bus: reconnect failed", "err", err, "retry_in", backoff)
			continue
		}
		backoff = reconnectMin
		up = true
	}
}

// serve runs one connection until it fails or ctx ends.
func (b *Postgres) serve(ctx context.Context, conn *postgres.Listener) error {
	b.mu.Lock()
	b.pid = conn.PID()
	b.mu.Unlock()
	first := true
	for {
		b.mu.Lock()
		var add, drop []string
		for ch := range b.refs {
			if !b.listening[ch] {
				add = append(add, ch)
			}
		}
		now, timeout := time.Now(), pingInterval
		for ch, since := range b.idle {
			switch left := max(b.linger, 0) - now.Sub(since); {
			case !b.listening[ch]:
				delete(b.idle, ch) // never LISTENed, or lost with a connection
			case left <= 0:
				drop = append(drop, ch)
				delete(b.idle, ch)
				// Not LISTENed from now on: a Subscribe before the
				// UNLISTEN below runs must wait for the next round's
				// LISTEN rather than trust this one.
				delete(b.listening, ch)
			default:
				timeout = min(timeout, left)
			}
		}
		b.mu.Unlock()
		if first || len(add)+len(drop) > 0 {
			if err := conn.Listen(ctx, add, drop); err != nil {
				return err
			}
			b.mu.Lock()
			for _, ch := range add {
				b.listening[ch] = true
			}
			b.connected = true
			b.broadcast()
			b.mu.Unlock()
			first = false
			continue
		}
		if err := b.wait(ctx, conn, timeout); err != nil {
			return err
		}
	}
}

// wait waits for notifications until one arrives, the channel set changes
// (kick) or timeout passes: then the connection is checked if it was
// pingInterval, else a lingering channel is due.
func (b *Postgres) wait(ctx context.Context, conn *postgres.Listener, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	kicked, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-b.wake:
			close(kicked)
			cancel()
		case <-wctx.Done():
		}
	}()
	err := conn.WaitForNotification(wctx)
	cancel()
	<-exited // a kick is consumed by this wait or left for the next
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case conn.IsClosed():
		return err
	}
	select {
	case <-kicked:
		return nil
	default:
	}
	if !errors.Is(wctx.Err(), context.DeadlineExceeded) {
		return err
	}
	if timeout < pingInterval {
		return nil // a lingering channel is due, not a check
	}
	// Idle for pingInterval: prove the connection still answers, so a
	// silently dropped one is replaced rather than trusted forever.
	pctx, pcancel := context.WithTimeout(ctx, readTimeout)
	defer pcancel()
	return conn.Ping(pctx)
}

// down marks the connection lost: nothing is LISTENed until the next one.
func (b *Postgres) down() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.connected = false
	b.pid = 0
	b.listening = map[string]bool{}
	b.broadcast()
}

// enqueue runs inside the connection's read loop: it must not block.
func (b *Postgres) enqueue(channel, payload string) {
	if len(payload) < idLen || payload[:idLen] != b.id {
		b.heard.Add(1)
		b.heardMu.Lock()
		if b.heardOn == nil {
			b.heardOn = map[string]int64{}
		}
		b.heardOn[channel]++
		b.heardMu.Unlock()
	}
	select {
	case b.queue <- notice{channel, payload}:
	default:
		b.log.Warn("bus: delivery queue full; message dropped", "channel", channel)
	}
}

// deliver hands queued notifications to this process's subscribers, in
// the order they arrived, reading stored payloads as it goes.
func (b *Postgres) deliver(ctx context.Context) {
	defer b.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-b.queue:
			b.dispatch(ctx, n)
		}
	}
}

func (b *Postgres) dispatch(ctx context.Context, n notice) {
	if len(n.frame) <= idLen {
		return
	}
	if n.frame[:idLen] == b.id {
		b.ownArrived(n.frame) // delivered locally when published; maybe timed
		return
	}
	key, body, ok := strings.Cut(n.frame[idLen+1:], " ")
	if !ok {
		return // not a frame of this version
	}
	b.mu.Lock()
	kr := b.keys[key]
	var topic string
	if kr != nil {
		topic = kr.topic
	}
	b.mu.Unlock()
	if kr == nil {
		// Another topic of a family we listen to, or one unsubscribed
		// since: filtered here, before a stored payload is read.
		return
	}
	var payload []byte
	var err error
	switch n.frame[idLen] {
	case frameText:
		payload = []byte(body)
	case frameB64:
		payload, err = base64.StdEncoding.DecodeString(body)
	case frameTable:
		var id int64
		if id, err = payloadRef(body); err == nil {
			rctx, cancel := context.WithTimeout(ctx, readTimeout)
			payload, err = b.n.Stored(rctx, id)
			cancel()
		}
	default:
		return // a newer frame kind: not ours to guess
	}
	if err != nil {
		b.log.Warn("bus: message dropped", "topic", topic, "err", err)
		return
	}
	_ = b.local.Publish(context.Background(), topic, payload)
}

// prune deletes stored payloads older than payloadTTL. Every replica
// prunes; the deletes are idempotent.
func (b *Postgres) prune(ctx context.Context) {
	defer b.wg.Done()
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, readTimeout)
			err := b.n.PruneStored(pctx, payloadTTL)
			cancel()
			if err != nil && ctx.Err() == nil {
				b.log.Warn("bus: pruning stored payloads failed", "err", err)
			}
		}
	}
}
