package bus_test

import (
	"bufio"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/metrics"
)

// A published message on a channel this process listens to is timed until
// its notification comes back through Postgres: switchboard_bus_lag_seconds
// gains one sample. (Not parallel: the histogram is the process's.)
func TestPostgresBusLagIsSampled(t *testing.T) {
	dsn, schema := pgSchema(t)
	b := openBus(t, dsn, schema)
	m := metrics.New(nil)
	subscribe(t, b, "lag.probe.one", func([]byte) {})
	before := lagCount(t, m)
	publish(t, b, "lag.probe.one", "hello")
	deadline := time.Now().Add(10 * time.Second) // a bound on a notification that takes milliseconds
	for lagCount(t, m) != before+1 {
		if time.Now().After(deadline) {
			t.Fatalf("no bus lag sample after a publish (count %v)", lagCount(t, m))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func lagCount(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "switchboard_bus_lag_seconds_count "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	t.Fatal("no switchboard_bus_lag_seconds")
	return 0
}
