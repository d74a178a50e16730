package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// Agent sessions across replicas (issue 16), on SQLite and on Postgres:
// two daemons on one store and one bus (in process) read each other's
// sessions and relay an interrupt to the owner; a restart under the same
// name ends its previous start's live sessions, and a survivor ends those
// of a replica whose heartbeat stopped.
func TestAgentSessionsAcrossReplicas(t *testing.T) {
	for _, d := range durables(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			shared := bus.NewLocal()
			t.Cleanup(func() { shared.Close() })
			start := func(name string, o daemon.ReplicaOptions) (*daemon.Daemon, switchboard.Store) {
				st := d.open(t)
				o.Name = name
				dm, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: "tok", Replicas: o, Bus: shared})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dm.Close(); st.Close() })
				return dm, st
			}
			admin := workspace.ViewerOf(switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
			register := func(dm *daemon.Daemon, label string) string {
				s, err := dm.Agents.Start(ctx, workspace.Spec{Kind: switchboard.AgentVoice, Label: label,
					Principal: switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"}, Transport: workspace.TransportHost,
					Status: switchboard.AgentRunning, Heartbeat: true})
				if err != nil {
					t.Fatal(err)
				}
				return s.ID
			}
			get := func(dm *daemon.Daemon, id string) switchboard.AgentSession {
				t.Helper()
				s, err := dm.Agents.Get(ctx, id, admin)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}

			// Every replica beats often and judges others by one timeout
			// well above the beat: a survivor must not take over a live
			// replica whose beats a busy machine delayed (with a's default
			// 5 s beat and b's 200 ms timeout, b claimed a live a2 before
			// its session existed, and nobody ended that session).
			fast := daemon.ReplicaOptions{Heartbeat: 20 * time.Millisecond, Timeout: 2 * time.Second}
			a, sta := start("a", fast)
			b, _ := start("b", fast)
			first := register(a, "first")
			if s := get(b, first); s.Status != switchboard.AgentRunning || s.Label != "first" {
				t.Fatalf("b reads a's session as %+v", s)
			}
			stopped := register(a, "stopped")
			if s, err := b.Agents.Interrupt(ctx, stopped, admin); err != nil || s.Status != switchboard.AgentCancelled {
				t.Fatalf("interrupt through b: %+v, %v", s, err)
			}
			if s := get(a, stopped); s.Status != switchboard.AgentCancelled {
				t.Fatalf("the owner reads %+v after an interrupt through b", s)
			}

			// A crash of "a" and its restart: the previous start's live
			// session ends before the new start serves.
			a.Close()
			sta.Close() // a dead process's sessions end: its presence lock is free
			a2, _ := start("a", fast)
			if s := get(b, first); s.Status != switchboard.AgentCancelled || !strings.Contains(s.Reason, "replica") {
				t.Fatalf("after a's restart b reads %+v", s)
			}
			if s := get(a2, stopped); s.Reason != "interrupted by user:admin" {
				t.Fatalf("the restart ended an ended session again: %+v", s)
			}

			// "a" dies again; "b" notices and ends its session.
			second := register(a2, "second")
			a2.Close()
			deadline := time.Now().Add(30 * time.Second)
			for get(b, second).Status == switchboard.AgentRunning {
				if time.Now().After(deadline) {
					t.Fatal("no survivor ended the dead replica's agent session")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if s := get(b, second); s.Status != switchboard.AgentCancelled {
				t.Fatalf("the survivor ended it %+v", s)
			}
			for _, s := range b.Agents.List(ctx, admin, workspace.Filter{Active: true}) {
				if s.ID == first || s.ID == second {
					t.Fatalf("b lists a gone replica's session as active: %+v", s)
				}
			}
		})
	}
}
