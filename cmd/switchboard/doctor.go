package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// check is one line of `switchboard doctor`: a failing or warning check
// always says how to fix it.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorProbeTimeout bounds each network probe (the daemon, a model's API).
const doctorProbeTimeout = 5 * time.Second

func newDoctor(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, store, keys, ledger, models and bindings, each with a fix",
		Long: `Check what a daemon on this data root needs: the config file (--config), the
data root and admin token file modes, the store (reachable, migrations
applied), the ledger (its hash chain against the anchor in the data root),
the daemon answering at --addr, each configured model (its API key variable
set, its API reachable) and the environment variables the catalog's HTTP
bindings read. Variables are checked in doctor's environment: run it as the
daemon runs. Exits 1 when a check fails; a warning does not fail.`,
		Example: `  switchboard doctor
  switchboard --config switchboard.yaml doctor --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			checks := g.doctor(c.Context())
			failed := 0
			for _, ch := range checks {
				if ch.Status == "fail" {
					failed++
				}
			}
			if g.json {
				if err := g.printJSON(map[string]any{"ok": failed == 0, "checks": checks}); err != nil {
					return err
				}
			} else {
				for _, ch := range checks {
					fmt.Fprintf(g.stdout, "%-4s  %-10s %s\n", ch.Status, ch.Name, ch.Detail)
					if ch.Fix != "" {
						fmt.Fprintf(g.stdout, "      %-10s fix: %s\n", "", ch.Fix)
					}
				}
			}
			if failed > 0 {
				return switchboard.Errorf(switchboard.CodeUnavailable, "%s failed; see the fix under each", count(failed, "check", "checks"))
			}
			return nil
		},
	}
}

func (g *globals) doctor(ctx context.Context) []check {
	var out []check
	add := func(name, status, detail, fix string) { out = append(out, check{name, status, detail, fix}) }

	// Configuration: the whole file, as serve reads it.
	var cfg serveConfig
	if g.config == "" {
		add("config", "ok", "no --config: flags, environment and defaults", "")
	} else if b, err := os.ReadFile(g.config); err != nil {
		add("config", "fail", fmt.Sprintf("cannot read %s: %v", g.config, err), "pass the path of the file serve reads with --config")
	} else if err := decodeConfig(g.config, b, &cfg); err != nil {
		add("config", "fail", err.Error(), "correct "+g.config+" (serve refuses to start with it)")
	} else {
		add("config", "ok", g.config+" parses", "")
		if err := g.readClientConfig(); err != nil {
			add("config", "fail", err.Error(), "correct "+g.config)
		}
	}

	dir, err := daemon.DataDir(g.data)
	if err != nil {
		add("data", "fail", err.Error(), "pass --data DIR or set $SWITCHBOARD_DATA")
		return out
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add("data", "fail", dir+" does not exist", "start the daemon once ('switchboard serve --data "+dir+"'), or pass --data with its data root")
		return out
	case err != nil:
		add("data", "fail", err.Error(), "make "+dir+" readable by this user")
		return out
	case fi.Mode().Perm()&0o077 != 0:
		add("data", "fail", fmt.Sprintf("%s is mode %04o: others can read the keys in it", dir, fi.Mode().Perm()), "chmod 700 "+dir)
	default:
		add("data", "ok", dir, "")
	}

	tokPath := filepath.Join(dir, daemon.TokenFile)
	if fi, err := os.Stat(tokPath); err != nil && g.token != "" {
		// serve given its token (--token, $SWITCHBOARD_TOKEN) writes no file.
		add("token", "ok", "given by --token or $SWITCHBOARD_TOKEN (no "+daemon.TokenFile+" needed)", "")
	} else if err != nil {
		add("token", "fail", "no admin token at "+tokPath, "start the daemon once without a token of your own (it writes one there), or give the daemon's token with --token or $SWITCHBOARD_TOKEN")
	} else if fi.Mode().Perm()&0o077 != 0 {
		add("token", "fail", fmt.Sprintf("%s is mode %04o: other users can read the admin token", tokPath, fi.Mode().Perm()), "chmod 600 "+tokPath+" (and consider rotating the token: delete the file and restart the daemon)")
	} else {
		add("token", "ok", tokPath+" is 0600", "")
	}

	spec := os.Getenv("SWITCHBOARD_STORE")
	if spec == "" {
		spec = cfg.Store.URL
	}
	if spec == "" {
		if _, err := os.Stat(filepath.Join(dir, daemon.DBFile)); err != nil {
			add("store", "fail", "no SQLite database in "+dir, "start the daemon once, or restore a backup: switchboard restore FILE")
			return out
		}
	}
	sctx, cancel := context.WithTimeout(ctx, doctorProbeTimeout)
	st, err := daemon.OpenStore(sctx, spec, dir)
	cancel()
	if err != nil {
		add("store", "fail", switchboard.AsError(err).Message, "check that the database is up and the URL (--store, $SWITCHBOARD_STORE, store.url) names it")
		return out
	}
	defer st.Close()
	name := "SQLite " + filepath.Join(dir, daemon.DBFile)
	if spec != "" {
		name = "Postgres"
	}
	add("store", "ok", name+" opens; its migrations are applied", "")
	if ch, ok := autovacuumCheck(ctx, st); ok {
		out = append(out, ch)
	}

	out = append(out, ledgerCheck(ctx, st, dir))
	out = append(out, g.daemonCheck(ctx))
	out = append(out, modelChecks(ctx, cfg.Models)...)
	out = append(out, bindingChecks(ctx, st)...)
	return out
}

// autovacuumStore is a store that can say whether its server vacuums
// (the Postgres driver).
type autovacuumStore interface {
	Autovacuum(context.Context) (bool, error)
}

// autovacuumCheck asks a Postgres store's server whether autovacuum runs;
// ok is false for a store without a server (SQLite). serve logs the same
// warning at start.
func autovacuumCheck(ctx context.Context, st switchboard.Store) (ch check, ok bool) {
	av, ok := st.(autovacuumStore)
	if !ok {
		return check{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, doctorProbeTimeout)
	defer cancel()
	on, err := av.Autovacuum(ctx)
	if err != nil {
		return check{"postgres", "warn", "cannot read the server's autovacuum setting: " + switchboard.AsError(err).Message, "run SHOW autovacuum as the daemon's database user"}, true
	}
	return autovacuumVerdict(on), true
}

// autovacuumVerdict is the check for a server whose autovacuum is on or off.
func autovacuumVerdict(on bool) check {
	if on {
		return check{Name: "postgres", Status: "ok", Detail: "the server runs autovacuum"}
	}
	return check{"postgres", "warn",
		"the server runs with autovacuum off: the row versions calls leave dead (one a finished call) are never vacuumed and the planner's statistics never refreshed, so the store's tables and indexes keep growing",
		"set autovacuum = on in postgresql.conf and reload (SELECT pg_reload_conf()), or run VACUUM (ANALYZE) on the store's database on a schedule (docs/operations.md, \"Postgres maintenance\")"}
}

// ledgerCheck verifies the ledger's chain against the anchor in dir.
func ledgerCheck(ctx context.Context, st switchboard.Store, dir string) check {
	fail := func(detail string) check {
		return check{"ledger", "fail", detail, "compare with your last off-machine checkpoint ('switchboard activity verify --checkpoint FILE') and restore the newest backup that verifies"}
	}
	anchor, err := activity.OpenAnchor(dir, nil)
	if err != nil {
		return fail(err.Error())
	}
	ledger, err := activity.New(ctx, st, &activity.Options{Anchor: anchor})
	if err != nil {
		return fail(err.Error())
	}
	r, err := ledger.Verify(ctx)
	if err != nil {
		return fail(switchboard.AsError(err).Message)
	}
	if !r.OK {
		return fail(fmt.Sprintf("entry %d: %s", r.BadID, r.Problem))
	}
	return check{Name: "ledger", Status: "ok", Detail: fmt.Sprintf("%s, chain intact up to entry %d, consistent with the anchor", count(r.Entries, "entry", "entries"), r.HeadID)}
}

// daemonCheck asks the daemon at --addr for /healthz; none answering is
// a warning (doctor also serves a stopped daemon's operator).
func (g *globals) daemonCheck(ctx context.Context) check {
	ctx, cancel := context.WithTimeout(ctx, doctorProbeTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+g.addr+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return check{"daemon", "warn", "no daemon answers at " + g.addr, "start it: switchboard serve (or pass --addr with its address)"}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return check{"daemon", "fail", fmt.Sprintf("%s/healthz answered %d", g.addr, resp.StatusCode), "read the daemon's log"}
	}
	return check{Name: "daemon", Status: "ok", Detail: "answering at " + g.addr}
}

// modelChecks checks each configured model: its key variable is set and
// its API answers HTTP at all (any status: reachability, not the key's
// validity, which only a paid request would prove).
func modelChecks(ctx context.Context, models map[string]model.Config) []check {
	var out []check
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, alias := range names {
		c := models[alias]
		label := "model " + alias
		if c.APIKeyEnv != "" {
			if v, ok := os.LookupEnv(c.APIKeyEnv); !ok || v == "" {
				out = append(out, check{label, "fail", "$" + c.APIKeyEnv + " is not set", "export " + c.APIKeyEnv + "=... in the daemon's environment"})
				continue
			}
		}
		base := c.BaseURL
		if base == "" {
			switch c.Provider {
			case "anthropic":
				base = model.DefaultAnthropicBaseURL
			default:
				base = model.DefaultOpenAIBaseURL
			}
		}
		pctx, cancel := context.WithTimeout(ctx, doctorProbeTimeout)
		req, err := http.NewRequestWithContext(pctx, http.MethodGet, base, nil)
		var resp *http.Response
		if err == nil {
			resp, err = http.DefaultClient.Do(req)
		}
		cancel()
		if err != nil {
			out = append(out, check{label, "fail", fmt.Sprintf("%s (%s) is not reachable: %v", base, c.Model, err), "check the network path and models." + alias + ".baseURL"})
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		out = append(out, check{Name: label, Status: "ok", Detail: fmt.Sprintf("%s %s at %s answers", c.Provider, c.Model, base)})
	}
	return out
}

// bindingChecks finds every {"env": NAME} header of the catalog's HTTP
// bindings and checks NAME is set.
func bindingChecks(ctx context.Context, st switchboard.Store) []check {
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		return []check{{"bindings", "fail", switchboard.AsError(err).Message, "check the store"}}
	}
	admin := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalUser, ID: "admin"})
	tools, err := reg.List(admin, "")
	if err != nil {
		return []check{{"bindings", "fail", switchboard.AsError(err).Message, "check the store"}}
	}
	missing := map[string][]string{} // variable → tools reading it
	n := 0
	for _, t := range tools {
		if t.Binding == nil || t.Binding.HTTP == nil {
			continue
		}
		for _, h := range t.Binding.HTTP.Headers {
			if h.Env == "" {
				continue
			}
			n++
			if v, ok := os.LookupEnv(h.Env); !ok || v == "" {
				missing[h.Env] = append(missing[h.Env], t.Name)
			}
		}
	}
	if len(missing) == 0 {
		return []check{{Name: "bindings", Status: "ok", Detail: fmt.Sprintf("%s of %s read from the environment, all set", count(n, "header", "headers"), count(len(tools), "tool", "tools"))}}
	}
	var out []check
	vars := make([]string, 0, len(missing))
	for v := range missing {
		vars = append(vars, v)
	}
	slices.Sort(vars)
	for _, v := range vars {
		out = append(out, check{"bindings", "fail", "$" + v + " is not set; " + strings.Join(missing[v], ", ") + " send it", "export " + v + "=... in the daemon's environment"})
	}
	return out
}
