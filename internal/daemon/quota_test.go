package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestDailyQuotaSharedByReplicas: two daemons on one store (SQLite, and
// Postgres with SWITCHBOARD_TEST_POSTGRES) share each agent's and each
// user's daily call count. Past a quota a call is refused before it runs,
// with QUOTA_EXCEEDED, 429 and Retry-After, on either replica; another
// agent of the same user meets the user's quota; another user's agent is
// not affected.
func TestDailyQuotaSharedByReplicas(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			var hits atomic.Int32
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"ok":true}`))
			}))
			defer backend.Close()
			quota := switchboard.DailyQuota{Agent: switchboard.QuotaUsage{Calls: 3}, User: switchboard.QuotaUsage{Calls: 4}}
			var shared bus.Bus = bus.NewLocal()
			var urls [2]string
			for i := range urls {
				st := d.open(t)
				b := shared
				if d.bus != nil {
					b = d.bus(t)
				}
				dm, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "quota-token", Bus: b,
					Replicas:   daemon.ReplicaOptions{Name: fmt.Sprintf("replica-%d", i)},
					Governance: daemon.GovernanceOptions{DailyQuota: quota}})
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(dm.Handler())
				t.Cleanup(func() {
					srv.Close()
					dm.Close()
					if c, ok := b.(interface{ Close() error }); ok && d.bus != nil {
						c.Close()
					}
					st.Close()
				})
				urls[i] = srv.URL
			}
			admin := client.New(urls[0], "quota-token", nil)
			tool := switchboard.Tool{Name: "test.ping", Description: "Ping the backend.", Class: switchboard.ClassRead,
				Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: backend.URL + "/ping"}}}
			if _, err := admin.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
				t.Fatal(err)
			}
			// The other replica learns of the tool over the bus: wait for
			// it there (the condition, not a time).
			for other := client.New(urls[1], "quota-token", nil); ; {
				if _, err := other.GetTool(ctx, "test.ping"); err == nil {
					break
				} else if switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			token := func(agent, user string) string {
				tok, err := admin.CreateToken(ctx, client.TokenRequest{Agent: agent, User: user, Allow: []string{"test.*"}})
				if err != nil {
					t.Fatal(err)
				}
				return tok.Token
			}
			call := func(replica int, tok string) (int, http.Header, switchboard.ErrorEnvelope) {
				req, _ := http.NewRequest("POST", urls[replica]+"/api/v1/tools/test.ping/call", strings.NewReader(`{"input":{}}`))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				var env switchboard.ErrorEnvelope
				if res.StatusCode >= 400 {
					_ = json.NewDecoder(res.Body).Decode(&env)
				}
				return res.StatusCode, res.Header, env
			}
			planner, helper, bobs := token("planner", "user:alice"), token("helper", "user:alice"), token("planner", "user:bob")
			for i, replica := range []int{0, 1, 0} {
				if code, _, env := call(replica, planner); code != http.StatusOK {
					t.Fatalf("planner's call %d on replica %d: %d %+v", i+1, replica, code, env.Error)
				}
			}
			code, h, env := call(1, planner)
			if code != http.StatusTooManyRequests || env.Error == nil || env.Error.Code != switchboard.CodeQuotaExceeded ||
				!strings.Contains(env.Error.Message, "agent:planner used its daily quota of 3 tool calls") || h.Get("Retry-After") == "" {
				t.Fatalf("planner's 4th call: %d %+v Retry-After %q; want 429 QUOTA_EXCEEDED (agent.calls)", code, env.Error, h.Get("Retry-After"))
			}
			if code, _, env := call(1, helper); code != http.StatusOK {
				t.Fatalf("helper's first call (alice's 4th): %d %+v", code, env.Error)
			}
			if code, _, env := call(0, helper); code != http.StatusTooManyRequests || env.Error.Code != switchboard.CodeQuotaExceeded ||
				!strings.Contains(env.Error.Message, "user:alice used its daily quota of 4 tool calls") {
				t.Fatalf("helper's second call (alice's 5th): %d %+v; want QUOTA_EXCEEDED (user.calls)", code, env.Error)
			}
			// One agent name acting for bob: bob's count is his own, but
			// the agent's quota counts the name, whoever it acts for.
			if code, _, env := call(0, bobs); code != http.StatusTooManyRequests || !strings.Contains(env.Error.Message, "agent:planner") {
				t.Fatalf("planner for bob: %d %+v; want the agent's quota", code, env.Error)
			}
			// The agent's digest says what it and its user have used today.
			req, _ := http.NewRequest("GET", urls[1]+"/api/v1/digest", nil)
			req.Header.Set("Authorization", "Bearer "+planner)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var dg switchboard.WorkspaceDigest
			err = json.NewDecoder(res.Body).Decode(&dg)
			res.Body.Close()
			want := []switchboard.DigestQuota{
				{Subject: "user:alice", Used: switchboard.QuotaUsage{Calls: 4}, Limit: quota.User},
				{Subject: "agent:planner", Used: switchboard.QuotaUsage{Calls: 3}, Limit: quota.Agent},
			}
			if err != nil || res.StatusCode != http.StatusOK || !reflect.DeepEqual(dg.Quotas, want) {
				t.Fatalf("planner's digest quotas: %d %v %+v; want %+v", res.StatusCode, err, dg.Quotas, want)
			}
			if got := hits.Load(); got != 4 {
				t.Fatalf("the backend ran %d times; want 4 (refused calls never run)", got)
			}
			// The operator's table (the console's Daily quotas): every
			// subject of today, most calls first, on either replica.
			req, _ = http.NewRequest("GET", urls[1]+"/api/v1/quotas", nil)
			req.Header.Set("Authorization", "Bearer quota-token")
			res, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Day    string                    `json:"day"`
				Limits switchboard.DailyQuota    `json:"limits"`
				Items  []switchboard.DigestQuota `json:"items"`
			}
			err = json.NewDecoder(res.Body).Decode(&rep)
			res.Body.Close()
			wantItems := []switchboard.DigestQuota{
				{Subject: "user:alice", Used: switchboard.QuotaUsage{Calls: 4}, Limit: quota.User},
				{Subject: "agent:planner", Used: switchboard.QuotaUsage{Calls: 3}, Limit: quota.Agent},
				{Subject: "agent:helper", Used: switchboard.QuotaUsage{Calls: 1}, Limit: quota.Agent},
				// bob's call was counted for him, then given back when the
				// agent's quota refused it
				{Subject: "user:bob", Used: switchboard.QuotaUsage{}, Limit: quota.User},
			}
			if err != nil || res.StatusCode != http.StatusOK || rep.Limits != quota || rep.Day != time.Now().UTC().Format(time.DateOnly) ||
				!reflect.DeepEqual(rep.Items, wantItems) {
				t.Fatalf("GET /quotas: %d %v %+v; want %+v", res.StatusCode, err, rep, wantItems)
			}
			req, _ = http.NewRequest("GET", urls[0]+"/api/v1/quotas", nil)
			req.Header.Set("Authorization", "Bearer "+planner)
			if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
				t.Fatalf("an agent reading every quota: %v %v; want 403", res.StatusCode, err)
			}
		})
	}
}
