package bus_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/bus"
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

// BenchmarkPostgresBystander is what a call's end costs a replica that
// waits for nothing of it: a publisher announces each call's end to a
// waiter (a second bus, as the replica that waits) while a bystander —
// another process, with its own bus, as a replica would be — subscribes
// to one topic of its own. "family" is the addressing of calls' ends
// before targeted delivery: the waiter subscribes invocation.done.<id>
// and the bystander an unrelated invocation.done.<other> (it waits for
// some other call), so both LISTEN the family's channel and the
// bystander receives and drops every end. "replica" is the addressing
// after it: the end goes to bus.ReplicaTopic(waiter, ...), and the
// bystander LISTENs only its own replica topic. bystander-cpu-us/op is
// the bystander process's CPU per call, bystander-backend-us/op its
// listening backend's.
//
//	SWITCHBOARD_TEST_POSTGRES=… go test ./internal/bus -run '^$' -bench PostgresBystander -benchtime 3000x -count 3
func BenchmarkPostgresBystander(b *testing.B) {
	for _, size := range []int{600, 9000} {
		for _, mode := range []string{"family", "replica"} {
			b.Run(fmt.Sprintf("%s/%dB", mode, size), func(b *testing.B) {
				dsn, schema := pgSchema(b)
				pub, sub := openBus(b, dsn, schema), openBus(b, dsn, schema)
				topic := func(i int) string { return "invocation.done." + strconv.Itoa(i) }
				own := "invocation.done.unrelated"
				if mode == "replica" {
					topic = func(int) string { return bus.ReplicaTopic("waiter", "invocation.done") }
					own = bus.ReplicaTopic("bystander", "invocation.done")
				}
				by := startBystander(b, dsn, schema, own)
				ctx := context.Background()
				got := make(chan struct{}, 1)
				h := func([]byte) {
					select {
					case got <- struct{}{}:
					default:
					}
				}
				payload := bytes.Repeat([]byte("x"), size)
				// The waiter's family stays listened across the run, as on
				// a replica with calls in flight.
				keep, err := sub.Subscribe(topic(-1), h)
				if err != nil {
					b.Fatal(err)
				}
				defer keep()
				before, beforeBackend := by.cpu(), backendCPU(by.backend)
				b.ResetTimer()
				for i := range b.N {
					cancel, err := sub.Subscribe(topic(i), h)
					if err != nil {
						b.Fatal(err)
					}
					if err := pub.Publish(ctx, topic(i), payload); err != nil {
						b.Fatal(err)
					}
					select {
					case <-got:
					case <-time.After(30 * time.Second):
						b.Fatalf("%s: nothing arrived", topic(i))
					}
					cancel()
				}
				b.StopTimer()
				// Let the bystander drain what is queued for it.
				time.Sleep(200 * time.Millisecond)
				b.ReportMetric(float64((by.cpu()-before).Microseconds())/float64(b.N), "bystander-cpu-us/op")
				b.ReportMetric(float64((backendCPU(by.backend)-beforeBackend).Microseconds())/float64(b.N), "bystander-backend-us/op")
			})
		}
	}
}

// bystander is a process holding one bus subscribed to one topic.
type bystander struct {
	pid     int
	backend uint32
}

func (by bystander) cpu() time.Duration { return procCPU(by.pid) }

// startBystander runs this test binary as a bystander process
// (TestBystanderProcess) and waits until it listens.
func startBystander(t testing.TB, dsn, schema, topic string) bystander {
	t.Helper()
	args := []string{"-test.run=^TestBystanderProcess$"}
	if prof := os.Getenv("SB_BYSTANDER_PROFILE"); prof != "" { // where the bystander's CPU goes
		args = append(args, "-test.cpuprofile="+prof)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SB_BYSTANDER="+schema+" "+topic)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("bystander: %v", err)
	}
	pid, err := strconv.ParseUint(strings.TrimSpace(line), 10, 32)
	if err != nil {
		t.Fatalf("bystander said %q", line)
	}
	return bystander{pid: cmd.Process.Pid, backend: uint32(pid)}
}

// TestBystanderProcess is the bystander of BenchmarkPostgresBystander when
// run by it; otherwise it skips.
func TestBystanderProcess(t *testing.T) {
	spec := os.Getenv("SB_BYSTANDER")
	if spec == "" {
		t.Skip("run by BenchmarkPostgresBystander")
	}
	schema, topic, _ := strings.Cut(spec, " ")
	b, err := bus.OpenPostgres(context.Background(), os.Getenv("SWITCHBOARD_TEST_POSTGRES"), &bus.PostgresOptions{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cancel, err := b.Subscribe(topic, func([]byte) {})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	fmt.Println(b.ListenerPID())
	io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
}

// procCPU is a process's user+system CPU time.
func procCPU(pid int) time.Duration { return backendCPU(uint32(pid)) }
