package bus_test

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPostgresRoundTrip is the bus's share of one browser call: a
// subscription to a topic made for the call, a publish, its delivery, the
// cancel. "remote" publishes on a second bus (another replica), "local" on
// the subscriber's own bus (tab and caller on one replica: delivered
// synchronously, the NOTIFY still sent).
//
//	SWITCHBOARD_TEST_POSTGRES=… go test ./internal/bus -run '^$' -bench PostgresRoundTrip -benchtime 2000x
func BenchmarkPostgresRoundTrip(b *testing.B) {
	for _, side := range []string{"remote", "local"} {
		b.Run(side, func(b *testing.B) {
			dsn, schema := pgSchema(b)
			sub := openBus(b, dsn, schema)
			pub := sub
			if side == "remote" {
				pub = openBus(b, dsn, schema)
			}
			ctx := context.Background()
			got := make(chan struct{}, 1)
			h := func([]byte) {
				select {
				case got <- struct{}{}:
				default:
				}
			}
			b.ResetTimer()
			for i := range b.N {
				topic := "invocation.done." + strconv.Itoa(i)
				cancel, err := sub.Subscribe(topic, h)
				if err != nil {
					b.Fatal(err)
				}
				if err := pub.Publish(ctx, topic, []byte(`{"status":"succeeded"}`)); err != nil {
					b.Fatal(err)
				}
				select {
				case <-got:
				case <-time.After(30 * time.Second):
					b.Fatalf("%s: nothing arrived", topic)
				}
				cancel()
			}
		})
	}
}
