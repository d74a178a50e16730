package bus_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
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
			// The subscriber's listening backend runs every LISTEN and
			// UNLISTEN: its CPU a round trip is what multiplexing saves
			// (Postgres on this machine: /proc; 0 where it is not).
			pid := sub.ListenerPID()
			before := backendCPU(pid)
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
			b.StopTimer()
			if pid == sub.ListenerPID() {
				b.ReportMetric(float64((backendCPU(pid)-before).Microseconds())/float64(b.N), "listener-cpu-us/op")
			}
		})
	}
}

// backendCPU is a local process's user+system CPU time from /proc, 0 when
// it cannot be read.
func backendCPU(pid uint32) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th of the line, in clock ticks (100 a second).
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}
