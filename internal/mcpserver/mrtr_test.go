package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/approval"
)

// stateServer is a Server with only what the requestState codec needs.
func stateServer(secret string) *Server {
	return &Server{opts: Options{StateKey: StateKey(secret)}}
}

var (
	stateCaller = caller{p: switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "planner"}, ok: true}
	stateTool   = switchboard.Tool{Name: "orders.place"}
	stateInput  = json.RawMessage(`{"qty":2}`)
)

func sealed(s *Server, exp time.Time) string {
	return s.sealState(requestState{Invocation: "inv1", Approval: "apr1", Caller: stateCaller.p.String(),
		Tool: stateTool.Name, Args: approval.ArgsHash(stateInput), Mode: "url", Expires: exp.Unix()})
}

// A state verifies only on a server with the same secret, for the caller,
// tool and arguments it names, until an hour past its approval's expiry.
func TestRequestState(t *testing.T) {
	t.Parallel()
	s := stateServer("admin-token")
	good := sealed(s, time.Now().Add(time.Hour))
	other := caller{p: switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "intruder"}, ok: true}
	for _, tc := range []struct {
		name  string
		srv   *Server
		state string
		c     caller
		tool  string
		input string
		want  string // "" verifies
	}{
		{"good", s, good, stateCaller, "orders.place", `{"qty":2}`, ""},
		{"same arguments, other order and spacing", s, good, stateCaller, "orders.place", ` {"qty": 2} `, ""},
		{"another replica, same secret", stateServer("admin-token"), good, stateCaller, "orders.place", `{"qty":2}`, ""},
		{"another secret", stateServer("other-token"), good, stateCaller, "orders.place", `{"qty":2}`, "not issued"},
		{"another caller", s, good, other, "orders.place", `{"qty":2}`, "another caller"},
		{"another tool", s, good, stateCaller, "orders.cancel", `{"qty":2}`, "another call"},
		{"other arguments", s, good, stateCaller, "orders.place", `{"qty":3}`, "another call"},
		{"just expired", s, sealed(s, time.Now().Add(-time.Minute)), stateCaller, "orders.place", `{"qty":2}`, ""},
		{"long expired", s, sealed(s, time.Now().Add(-2*time.Hour)), stateCaller, "orders.place", `{"qty":2}`, "expired"},
		{"MAC not base64", s, strings.Split(good, ".")[0] + ".0", stateCaller, "orders.place", `{"qty":2}`, "not issued"},
		{"empty MAC", s, strings.Split(good, ".")[0] + ".", stateCaller, "orders.place", `{"qty":2}`, "not issued"},
		{"no MAC", s, strings.Split(good, ".")[0], stateCaller, "orders.place", `{"qty":2}`, "not issued"},
		{"empty", s, "", stateCaller, "orders.place", `{"qty":2}`, "not issued"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := tc.srv.openState(tc.state, tc.c, switchboard.Tool{Name: tc.tool}, json.RawMessage(tc.input))
			switch {
			case tc.want == "" && (err != nil || st.Invocation != "inv1" || st.Approval != "apr1"):
				t.Fatalf("want it verified: %+v %v", st, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

// No string a client can send panics the codec or verifies unless the
// server sealed it.
func FuzzOpenState(f *testing.F) {
	s := stateServer("admin-token")
	// A fixed expiry (2100): the one sealed state is the same in every
	// run, so the corpus holds no other sealed state.
	good := sealed(s, time.Unix(4102444800, 0))
	f.Add(good)
	f.Add("")
	f.Add(".")
	f.Add("e30.AAAA")
	f.Add(strings.Repeat("A", 300) + "." + strings.Repeat("B", 43))
	f.Fuzz(func(t *testing.T, raw string) {
		_, err := s.openState(raw, stateCaller, stateTool, stateInput)
		if err == nil && raw != good {
			t.Fatalf("a state the server never sealed verified: %q", raw)
		}
	})
}
