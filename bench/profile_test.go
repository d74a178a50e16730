package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
)

// profileSide runs the path s alone (n calls, inflight callers) under the
// CPU profiler, writes the profile to dir, and logs where its CPU goes by
// kind of work, in percent of the samples and in CPU µs per call. Callers,
// servers and tabs all run in this process, so the profile is the whole
// loopback round trip, both ends. The raw material is kept beside it:
// <name>.pprof and <name>.top.txt (go tool pprof -top -cum).
//
// Do not combine with go test -cpuprofile: the runtime allows one CPU
// profile at a time.
func profileSide(tb testing.TB, dir, family string, inflight, n int, s side) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	name := fmt.Sprintf("%s-inflight%d", family, inflight)
	path := filepath.Join(dir, name+".pprof")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		tb.Fatalf("cpu profile (not with -cpuprofile): %v", err)
	}
	_, wall, err := runBlock(context.Background(), n, inflight, s.call)
	pprof.StopCPUProfile()
	f.Close()
	if err != nil {
		tb.Fatal(err)
	}
	traces, err := exec.Command("go", "tool", "pprof", "-traces", path).Output()
	if err != nil {
		tb.Logf("go tool pprof -traces %s: %v (profile kept)", path, err)
		return
	}
	top, _ := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount", "60", path).Output()
	_ = os.WriteFile(filepath.Join(dir, name+".top.txt"), top, 0o644)
	b := splitProfile(traces)
	tb.Logf("callpath-profile: %s at %d in flight (%s alone, %d calls, %.0f calls/s while profiled): %s",
		family, inflight, s.name, n, float64(n)/wall.Seconds(), b.summary(n))
}

// A breakdown is CPU time by kind of work.
type breakdown struct {
	total  time.Duration
	by     map[string]time.Duration
	allocs time.Duration // samples under the allocator or the GC, any kind
}

// profileKinds classify a sample by its whole stack, first match wins:
// work that is itself a kind (the store, including its own syscalls and
// allocations; schema validation; JSON) is claimed before the generic
// kinds below it.
var profileKinds = []struct{ kind, needles string }{
	{"GC (background)", "runtime.gcBgMarkWorker runtime.bgsweep runtime.bgscavenge"},
	{"store", "modernc.org/ switchboardhq/switchboard/sqlite. switchboardhq/switchboard/postgres. github.com/jackc/ database/sql."},
	{"schema validation", "santhosh-tekuri/jsonschema switchboardhq/switchboard/schema."},
	{"JSON", "encoding/json. go-json-experiment/json segmentio/encoding"},
	{"syscalls (network I/O, wake-ups)", "syscall.Syscall syscall.RawSyscall internal/runtime/syscall. runtime.futex runtime.netpoll runtime.usleep"},
}

// ownerKinds classify what is left by the innermost frame that belongs to
// one of them: code that is not runtime or a generic library.
var ownerKinds = []struct{ kind, prefix string }{
	{"caller and tab (bench, client)", "github.com/switchboardhq/switchboard/bench."},
	{"caller and tab (bench, client)", "github.com/switchboardhq/switchboard/client."},
	{"switchboard (broker, httpapi, session, mcpserver, …)", "github.com/switchboardhq/switchboard"},
	{"MCP SDK", "github.com/modelcontextprotocol/"},
	{"HTTP (net/http, bufio, net)", "net/http."},
	{"HTTP (net/http, bufio, net)", "net."},
	{"HTTP (net/http, bufio, net)", "bufio."},
	{"HTTP (net/http, bufio, net)", "internal/poll."},
}

// splitProfile reads go tool pprof -traces output.
func splitProfile(traces []byte) breakdown {
	b := breakdown{by: map[string]time.Duration{}}
	var (
		value time.Duration
		stack []string
	)
	flush := func() {
		if value > 0 && len(stack) > 0 {
			b.total += value
			b.by[classify(stack)] += value
			for _, fr := range stack {
				if fr == "runtime.mallocgc" || strings.HasPrefix(fr, "runtime.gcBgMarkWorker") || strings.HasPrefix(fr, "runtime.gcAssist") || fr == "runtime.bgsweep" {
					b.allocs += value
					break
				}
			}
		}
		value, stack = 0, stack[:0]
	}
	sc := bufio.NewScanner(bytes.NewReader(traces))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----") {
			flush()
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(stack) == 0 && value == 0 {
			if d, err := time.ParseDuration(fields[0]); err == nil && len(fields) > 1 {
				value = d
				stack = append(stack, fields[1])
			}
			continue
		}
		if value > 0 {
			stack = append(stack, fields[0])
		}
	}
	flush()
	return b
}

func classify(stack []string) string {
	for _, k := range profileKinds {
		for _, needle := range strings.Fields(k.needles) {
			for _, fr := range stack {
				if strings.Contains(fr, needle) {
					return k.kind
				}
			}
		}
	}
	for _, fr := range stack { // leaf first
		for _, o := range ownerKinds {
			if strings.HasPrefix(fr, o.prefix) {
				return o.kind
			}
		}
	}
	if strings.HasPrefix(stack[len(stack)-1], "runtime.") {
		return "Go runtime (scheduler, stacks)"
	}
	return "other"
}

// summary lists the kinds largest first: "store 41% (52 µs/call), …".
func (b breakdown) summary(calls int) string {
	if b.total == 0 {
		return "no samples"
	}
	kinds := make([]string, 0, len(b.by))
	for k := range b.by {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(x, y string) int { return int(b.by[y] - b.by[x]) })
	var parts []string
	perCall := func(d time.Duration) float64 { return us(d) / float64(calls) }
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.0f%% (%.0f µs)", k, 100*float64(b.by[k])/float64(b.total), perCall(b.by[k])))
	}
	return fmt.Sprintf("CPU %.0f µs a call: %s; of all, allocation and GC %.0f%%",
		perCall(b.total), strings.Join(parts, ", "), 100*float64(b.allocs)/float64(b.total))
}

// TestSplitProfile checks the classifier on go tool pprof -traces output:
// the store claims its own allocations, JSON inside a handler is JSON, a
// handler's own work is switchboard's, net/http's response writing is HTTP.
func TestSplitProfile(t *testing.T) {
	traces := `File: bench.test
Type: cpu
Duration: 2.20s, Total samples = 100ms (4.55%)
-----------+-------------------------------------------------------
      40ms   runtime.mallocgc
             modernc.org/sqlite/lib.Xsqlite3_step
             github.com/switchboardhq/switchboard/sqlite.(*Store).InvocationFinish
             github.com/switchboardhq/switchboard/internal/broker.(*Broker).Call
-----------+-------------------------------------------------------
      20ms   encoding/json.(*decodeState).object
             github.com/switchboardhq/switchboard/internal/httpapi.(*api).call (inline)
             net/http.(*conn).serve
-----------+-------------------------------------------------------
      10ms   runtime.mallocgc
             github.com/switchboardhq/switchboard/internal/broker.(*Broker).Call
             net/http.(*conn).serve
-----------+-------------------------------------------------------
      1.5ms  bufio.(*Writer).Flush
             net/http.(*response).finishRequest
             github.com/switchboardhq/switchboard/internal/httpapi.(*api).call
-----------+-------------------------------------------------------
      8.5ms  runtime.findRunnable
             runtime.schedule
-----------+-------------------------------------------------------
      20ms   runtime.gcDrain
             runtime.gcBgMarkWorker
-----------+-------------------------------------------------------
`
	b := splitProfile([]byte(traces))
	want := map[string]time.Duration{
		"store": 40 * time.Millisecond,
		"JSON":  20 * time.Millisecond,
		"switchboard (broker, httpapi, session, mcpserver, …)": 10 * time.Millisecond,
		"HTTP (net/http, bufio, net)":                          1500 * time.Microsecond,
		"Go runtime (scheduler, stacks)":                       8500 * time.Microsecond,
		"GC (background)":                                      20 * time.Millisecond,
	}
	if b.total != 100*time.Millisecond {
		t.Errorf("total %v, want 100ms", b.total)
	}
	for k, v := range want {
		if b.by[k] != v {
			t.Errorf("%s: %v, want %v (all: %v)", k, b.by[k], v, b.by)
		}
	}
	if b.allocs != 70*time.Millisecond {
		t.Errorf("allocation and GC %v, want 70ms", b.allocs)
	}
	if s := b.summary(10); !strings.HasPrefix(s, "CPU 10000 µs a call: store 40% (4000 µs)") {
		t.Errorf("summary %q", s)
	}
}
