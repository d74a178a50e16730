package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/assertion"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/httpbind"
	"github.com/switchboardhq/switchboard/internal/oauth"
	"github.com/switchboardhq/switchboard/internal/oidctest"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/sqlite"
)

// What identity costs a call (docs/oauth.md, docs/identity.md): the
// validation of an external issuer's JWT access token on /mcp, and the
// signed assertion every HTTP-binding request carries. Each is a ratio
// against the same call without it, interleaved call by call in one run
// (harness_test.go), with the bare operation also timed alone:
//
//	go test -count=1 ./bench -run 'TestOAuthTokenOverhead$' -v
//	go test -count=1 ./bench -run 'TestAssertionOverhead$' -v
//
// Without -run naming them, they run a handful of calls and time nothing.

// TestOAuthTokenOverhead: tools/call of one read Go-function tool on
// /mcp of a daemon whose OAuth issuer is a real OpenID provider
// (oidctest), made with an operator-minted agent token for user:alice
// (the baseline: a token the daemon looks up), with the admin token, and
// with the provider's JWT access token for alice, which the daemon
// verifies on every request (signature against the cached JWKS, iss, aud,
// exp, scopes, the user claim). Each side has its own MCP session
// (2025-11-25) on the same daemon.
func TestOAuthTokenOverhead(t *testing.T) {
	heavy := strings.Contains(testRunFlag(), "TestOAuthTokenOverhead")
	if !heavy && testing.Short() {
		t.Skip("smoke run skipped in -short")
	}
	n, rounds, warm := 12, 1, 4
	if heavy {
		n, rounds = identityBenchSize(2000)
		warm = 300
		t.Logf("machine: %d CPUs, %s; %s", runtime.NumCPU(), runtime.Version(), loadAverage())
	}
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(nil)
	resource := "http://" + srv.Listener.Addr().String() + "/mcp"
	op := oidctest.Start(t, resource)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "bench.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// No rate limit: the default (20 calls a second an agent) would stop
	// a benchmark, not the agent a person runs.
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: mcpBenchToken, AllowHosts: []string{"127.0.0.1"},
		OAuth:      daemon.OAuthOptions{Resource: resource, Issuer: op.Issuer},
		Governance: daemon.GovernanceOptions{RateLimit: &broker.RateLimit{}}})
	if err != nil {
		t.Fatal(err)
	}
	// Read class: no approval policy stands between an agent and the call.
	if err := d.RegisterFunc(ctx, switchboard.Tool{
		Name: "tasks.preview", Description: "Preview the task a creation would make.", Class: switchboard.ClassRead, InputSchema: brokerInputSchema,
	}, brokerCreateTask); err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterFunc(ctx, switchboard.Tool{Name: "auth.whoami", Description: "Who the call acts for.", Class: switchboard.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ json.RawMessage) (any, error) {
		p, _ := switchboard.PrincipalFrom(ctx)
		return p.String() + " for " + p.ActsFor(), nil
	}); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = d.Handler()
	srv.Start()
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); d.Close() })

	agent, err := client.New(srv.URL, mcpBenchToken, nil).CreateToken(ctx, client.TokenRequest{Agent: "bench", User: "user:alice"})
	if err != nil {
		t.Fatal(err)
	}
	// The provider's access tokens live 5 minutes; a long run takes a
	// fresh one before the last expires (one slow call in thousands).
	jwt := &freshToken{mint: func() string { return op.Token(t, "alice", "mcp") }, life: 4 * time.Minute}
	call := func(cs *mcp.ClientSession) func(context.Context) error {
		args := map[string]any{"projectId": "p1", "title": "Write the broker benchmark", "priority": 2}
		return func(ctx context.Context) error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tasks-preview", Arguments: args})
			if err == nil && res.IsError {
				b, _ := json.Marshal(res.Content)
				err = fmt.Errorf("tool error: %s", b)
			}
			return err
		}
	}
	connect := func(token func() string) *mcp.ClientSession {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: &http.Client{Transport: bearerFunc{tr, token}}},
			&mcp.ClientSessionOptions{ProtocolVersion: mcpSessions})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	sides := []side{
		{"agent token (operator-minted, for user:alice)", call(connect(func() string { return agent.Token }))},
		{"admin token", call(connect(func() string { return mcpBenchToken }))},
		{"the provider's JWT access token for alice (verified each request, cached JWKS)", call(connect(jwt.get))},
		{"agent token again, its own session (control: the noise floor of a ratio)", call(connect(func() string { return agent.Token }))},
	}
	// Both tokens must act for alice, the JWT as the provider's client, or
	// the comparison measured something else.
	if who := whoOnMCP(t, resource, agent.Token); who != "agent:bench for user:alice" {
		t.Fatalf("the agent token's calls are %q", who)
	}
	if who := whoOnMCP(t, resource, jwt.get()); who != "agent:oauth-"+oidctest.ClientID+" for user:alice" {
		t.Fatalf("the JWT's calls are %q", who)
	}
	cmp := runComparison(t, n, 1, rounds, warm, sides...)
	if !heavy {
		return
	}
	// The validation alone, as /mcp's authentication calls it: the JWKS is
	// cached after the first call, so this is the signature and the claims.
	v, err := oauth.NewVerifier(ctx, oauth.VerifierOptions{Issuer: op.Issuer, Resource: resource})
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.get()
	jwtWall, jwtCPU := timeAlone(t, 20000, func() error { _, _, err := v.Authenticate(ctx, tok); return err })
	// And what the baseline's credential check costs: the agent token's
	// record read from SQLite and its hash compared.
	agentWall, agentCPU := timeAlone(t, 20000, func() error { _, err := d.Tokens.Authenticate(ctx, agent.Token); return err })
	t.Logf("alone: one JWT validation (oauth.Verifier.Authenticate) %.1f µs wall, %.1f µs CPU; one agent-token check (scope.Tokens.Authenticate) %.1f µs wall, %.1f µs CPU",
		jwtWall, jwtCPU, agentWall, agentCPU)
	t.Logf("oauth-row: | tools/call on /mcp, 1 in flight, %d calls × %d rounds | %s | %s | %s | %s× | %s | %s× | %s | %s× |",
		n, rounds, fmtMMM(cmp.p50(1), 0), fmtMMM(cmp.p50(0), 0), fmtMMM(cmp.p50(2), 0),
		fmtMMM(pairP50Ratio(cmp, 2, 1), 3), fmtMMM(pairAdded(cmp, 2, 1), 1), fmtMMM(cmp.p50Ratio(2), 3), fmtMMM(cmp.added(2), 1), fmtMMM(cmp.p50Ratio(3), 3))
	t.Logf("oauth-alone: | %.1f | %.1f | %.1f | %.1f |", jwtWall, jwtCPU, agentWall, agentCPU)
}

// whoOnMCP is who a token's /mcp calls are made by and for, as the tool
// sees its caller.
func whoOnMCP(t *testing.T, mcpURL, token string) string {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-who", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL,
		HTTPClient: &http.Client{Transport: bearerFunc{http.DefaultTransport, func() string { return token }}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "auth-whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		t.Fatalf("whoami: %+v", res.Content)
	}
	return tc.Text
}

// bearerFunc sends the token token returns on every request.
type bearerFunc struct {
	next  http.RoundTripper
	token func() string
}

func (b bearerFunc) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token())
	return b.next.RoundTrip(r)
}

// freshToken holds a token and mints a new one when it is older than life.
type freshToken struct {
	mint func() string
	life time.Duration

	mu  sync.Mutex
	tok string
	at  time.Time
}

func (f *freshToken) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tok == "" || time.Since(f.at) > f.life {
		f.tok, f.at = f.mint(), time.Now()
	}
	return f.tok
}

// TestAssertionOverhead: an HTTP-bound tool through broker.Call to a
// backend on loopback (answering at once), for an agent acting for
// user:alice, by a broker that signs the Switchboard-Assertion (the
// daemon's Assert: assertion.Signer over the store's key set, ES256)
// against a broker without it (Options.Assert nil: no header). Both
// brokers share one SQLite store and registry; the unsigned broker is
// called a second time as the control (the noise floor of a ratio). The
// backend counts the header, so each side is known to be what it says.
func TestAssertionOverhead(t *testing.T) {
	heavy := strings.Contains(testRunFlag(), "TestAssertionOverhead")
	if !heavy && testing.Short() {
		t.Skip("smoke run skipped in -short")
	}
	n, rounds, warm := 12, 1, 4
	if heavy {
		n, rounds = identityBenchSize(3000)
		warm = 500
		t.Logf("machine: %d CPUs, %s; %s", runtime.NumCPU(), runtime.Version(), loadAverage())
	}
	ctx := context.Background()
	var signed, unsigned atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(httpbind.AssertionHeader) != "" {
			signed.Add(1)
		} else {
			unsigned.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"t1","projectId":"` + r.PathValue("p") + `","echo":`))
		w.Write(body)
		w.Write([]byte(`}`))
	}))
	t.Cleanup(backend.Close)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "bench.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(benchAdmin, switchboard.SourceHost, []switchboard.Tool{{
		Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate, InputSchema: brokerInputSchema,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: backend.URL + "/api/projects/{projectId}/tasks"}},
	}}); err != nil {
		t.Fatal(err)
	}
	signer, err := assertion.New(st, assertion.Options{Issuer: daemon.DefaultIssuer})
	if err != nil {
		t.Fatal(err)
	}
	plain := broker.New(broker.Options{Store: st, Registry: reg})
	t.Cleanup(plain.Close)
	asserting := broker.New(broker.Options{Store: st, Registry: reg, Assert: func(ctx context.Context, c broker.AssertedCall) (string, error) {
		return signer.Sign(ctx, assertion.Call(c))
	}})
	t.Cleanup(asserting.Close)
	alice := &switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "bench", User: "user:alice"}
	req := broker.CallRequest{Tool: "tasks.create", Input: brokerInput, Caller: alice}
	call := func(br *broker.Broker) func(context.Context) error {
		return func(context.Context) error {
			inv, err := br.Call(benchAdmin, req)
			if err == nil && inv.Status != switchboard.StatusSucceeded {
				err = fmt.Errorf("status %s: %s", inv.Status, inv.Error)
			}
			return err
		}
	}
	cmp := runComparison(t, n, 1, rounds, warm,
		side{"HTTP-bound tool, no assertion (Assert nil)", call(plain)},
		side{"the same again (control: the noise floor of a ratio)", call(plain)},
		side{"the same with the signed assertion", call(asserting)},
	)
	if want := int64(warm + n*rounds); signed.Load() != want || unsigned.Load() != 2*want {
		t.Fatalf("the backend saw %d requests with an assertion and %d without, want %d and %d", signed.Load(), unsigned.Load(), want, 2*want)
	}
	if !heavy {
		return
	}
	// Signing alone, as the binding asks for it (the key is cached after
	// the first call, so this is the claims' JSON and one ES256 signature).
	c := assertion.Call{Caller: *alice, Tool: "tasks.create", Invocation: "inv_0123456789abcdef", Audience: backend.URL}
	wall, cpu := timeAlone(t, 20000, func() error { _, err := signer.Sign(ctx, c); return err })
	t.Logf("alone: one assertion signed (assertion.Signer.Sign) %.1f µs wall, %.1f µs CPU = %.1f%% of the unsigned call's p50 (wall)", wall, cpu, 100*wall/cmp.p50(0).med)
	t.Logf("assertion-row: | HTTP-bound tool via broker.Call, 1 in flight, %d calls × %d rounds | %s | %s | %s× | %s | %s× |",
		n, rounds, fmtMMM(cmp.p50(0), 0), fmtMMM(cmp.p50(2), 0), fmtMMM(cmp.p50Ratio(2), 3), fmtMMM(cmp.added(2), 1), fmtMMM(cmp.p50Ratio(1), 3))
	t.Logf("assertion-alone: | %.1f | %.1f |", wall, cpu)
}

// identityBenchSize is benchSize with five rounds unless
// SWITCHBOARD_BENCH_ROUNDS says otherwise.
func identityBenchSize(def int) (n, rounds int) {
	n, rounds = benchSize(def, 1)
	if os.Getenv("SWITCHBOARD_BENCH_ROUNDS") == "" {
		rounds = 5
	}
	return n, rounds
}

// pairP50Ratio is side a's p50 over side b's, per round.
func pairP50Ratio(c comparison, a, b int) minMedMax {
	v := make([]float64, len(c.rounds))
	for r, rr := range c.rounds {
		v[r] = float64(rr[a].p50) / float64(max(rr[b].p50, 1))
	}
	return minMedMaxOf(v)
}

// pairAdded is side a's p50 minus side b's in µs, per round.
func pairAdded(c comparison, a, b int) minMedMax {
	v := make([]float64, len(c.rounds))
	for r, rr := range c.rounds {
		v[r] = us(rr[a].p50 - rr[b].p50)
	}
	return minMedMaxOf(v)
}

// timeAlone runs f m times after one warm call and returns the mean µs
// per call in wall time and in the process's CPU time (user + system,
// every thread: the GC's share included). On a machine other work
// shares, the CPU figure is the steadier one.
func timeAlone(t *testing.T, m int, f func() error) (wall, cpu float64) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
	cpu0, start := processCPU(), time.Now()
	for range m {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	return us(time.Since(start)) / float64(m), us(processCPU()-cpu0) / float64(m)
}
