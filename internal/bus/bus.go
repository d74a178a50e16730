// Package bus carries small notifications between the parts of switchboard
// that dispatch browser actions and the parts that hold the tabs' event
// streams: a request or cancel for a session, an "invocation finished"
// signal for a waiting caller, a session's presence changes.
//
// Callers see only the Bus interface. Local is the in-process
// implementation used on one machine (the SQLite default); Postgres
// (postgres.go) carries the same messages between replicas that share one
// Postgres database through LISTEN/NOTIFY, without touching callers, which
// is why the contract is deliberately weak:
//
//   - Delivery is at most once and only to subscribers present at Publish
//     time; the Store stays the source of truth. A subscriber that must not
//     miss a message subscribes before it causes the message, and re-reads
//     the store when it wakes.
//   - Payloads are at most MaxPayload bytes; larger data travels by
//     reference (an id to read from the store). The Postgres bus sends
//     what fits NOTIFY's 8000-byte limit inline and stores the rest in a
//     table for the notification to name.
//   - Handlers run on the bus's delivery goroutine and must not block.
//
// Delivery rule: a message meant for one replica goes on that replica's
// topic (ReplicaTopic), which no other replica listens to, so a replica
// hears only what is addressed to it or to everyone. The end of a call
// goes to the call's owner (the replica its record names) and, from the
// owner, to each replica that asked it for that end (internal/broker,
// ends.go); a tab's per-call messages go to the replica holding its
// stream (internal/session, route.go). Topics shared by every replica
// (presence, catalog changes, a tab's own news) carry what every replica
// needs or what no sender can address. On Postgres, a NOTIFY still wakes
// every listening backend of the database (Postgres checks channels in
// the receiving backend), but no other replica's process.
package bus

import (
	"context"

	"github.com/switchboardhq/switchboard"
)

// MaxPayload bounds one message's payload. It is above NOTIFY's limit on
// purpose: the Postgres bus stores a larger payload in a table, so a
// typical browser request or result, a run event or a console notice
// travels by value; past 64 KiB callers send a reference to the store,
// which keeps the table's rows (read once per replica) small.
const MaxPayload = 64 << 10

// Handler receives one message's payload. It must not block and must not
// keep payload after returning unless it copies it.
type Handler func(payload []byte)

// Bus publishes payloads to every current subscriber of a topic.
type Bus interface {
	// Publish delivers payload to the topic's subscribers. It fails with
	// PAYLOAD_TOO_LARGE above MaxPayload and UNAVAILABLE once closed.
	Publish(ctx context.Context, topic string, payload []byte) error
	// Subscribe registers h for topic until the returned cancel is called.
	// Cancel is idempotent; once it returns, h is not called again.
	Subscribe(topic string, h Handler) (cancel func(), err error)
}

// ReplicaTopic names topic name addressed to one replica. The replica's
// id is part of the topic's family (everything before the last dot), so
// on Postgres only that replica LISTENs to the channel that carries it:
// a message meant for one replica costs the others nothing.
func ReplicaTopic(replica, name string) string { return "replica." + replica + "." + name }

func checkPayload(topic string, payload []byte) error {
	if len(payload) > MaxPayload {
		return switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"bus message on %s is %d bytes; the limit is %d (send a reference instead)", topic, len(payload), MaxPayload)
	}
	return nil
}
