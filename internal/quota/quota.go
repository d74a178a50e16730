// Package quota enforces the daily quotas of agents and of the users they
// act for (switchboard.DailyQuota): tool calls are admitted against them
// by the broker, and the assistant's model tokens and cost are checked
// before each model call and counted after it. The counts live in the
// store, so replicas share them; a day is a UTC date.
package quota

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Book is the one place quotas are decided. A nil *Book limits nothing.
type Book struct {
	store  switchboard.Store
	limits switchboard.DailyQuota
	now    func() time.Time
}

// New returns a Book over store, or nil when limits limit nothing.
func New(store switchboard.Store, limits switchboard.DailyQuota, now func() time.Time) *Book {
	if limits.Zero() || store == nil {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Book{store: store, limits: limits, now: now}
}

// Limits returns the quotas the book enforces.
func (b *Book) Limits() switchboard.DailyQuota {
	if b == nil {
		return switchboard.DailyQuota{}
	}
	return b.limits
}

// subject is one count a principal's spending goes to.
type subject struct {
	kind  string // "agent" or "user": which of DailyQuota's limits
	name  string // the store's subject: "agent:planner", "user:alice"
	limit switchboard.QuotaUsage
}

// subjects are the counts p's spending goes to: only agents' spending is
// counted (they are what can run away) — against the agent's name and
// against the user it acts for.
func (b *Book) subjects(p switchboard.Principal) []subject {
	if b == nil || p.Kind != switchboard.PrincipalAgent {
		return nil
	}
	var out []subject
	if b.limits.User != (switchboard.QuotaUsage{}) {
		out = append(out, subject{"user", p.ActsFor(), b.limits.User}) // the operator when none is named
	}
	if b.limits.Agent != (switchboard.QuotaUsage{}) {
		out = append(out, subject{"agent", switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: p.ID}.String(), b.limits.Agent})
	}
	return out
}

// Today returns p's counts of today (UTC), each with its limit.
func (b *Book) Today(ctx context.Context, p switchboard.Principal) ([]switchboard.DigestQuota, error) {
	if b == nil {
		return nil, nil
	}
	day := b.day()
	var out []switchboard.DigestQuota
	for _, s := range b.subjects(p) {
		used, err := b.store.QuotaGet(ctx, s.name, day)
		if err != nil {
			return nil, err
		}
		out = append(out, switchboard.DigestQuota{Subject: s.name, Used: used, Limit: s.limit})
	}
	return out, nil
}

// Report is every subject's usage of one day with its limit: what the
// console's quota table shows.
type Report struct {
	Day    string                    `json:"day"`
	Limits switchboard.DailyQuota    `json:"limits"`
	Items  []switchboard.DigestQuota `json:"items"`
}

// Usage reports today's counts, most calls first, at most limit subjects.
// A nil Book reports no limits and no counts (nothing is counted without
// a quota).
func (b *Book) Usage(ctx context.Context, limit int) (Report, error) {
	if b == nil {
		return Report{Day: time.Now().UTC().Format(time.DateOnly), Items: []switchboard.DigestQuota{}}, nil
	}
	r := Report{Day: b.day(), Limits: b.limits, Items: []switchboard.DigestQuota{}}
	rows, err := b.store.QuotaList(ctx, r.Day, limit)
	if err != nil {
		return Report{}, err
	}
	for _, row := range rows {
		lim := b.limits.User // subjects are "agent:<name>" or the user agents act for
		if strings.HasPrefix(row.Subject, "agent:") {
			lim = b.limits.Agent
		}
		r.Items = append(r.Items, switchboard.DigestQuota{Subject: row.Subject, Used: row.Used, Limit: lim})
	}
	return r, nil
}

// AdmitCall counts one tool call of p, or refuses it with QUOTA_EXCEEDED
// when it would pass a call quota, or when a token or cost quota is
// already used up; a refused call is counted nowhere (what one quota
// admitted before another refused is given back).
func (b *Book) AdmitCall(ctx context.Context, p switchboard.Principal) error {
	if b == nil {
		return nil
	}
	day := b.day()
	var counted []subject
	refuse := func(err error) error {
		for _, s := range counted {
			if _, _, gerr := b.store.QuotaAdd(context.WithoutCancel(ctx), s.name, day, switchboard.QuotaUsage{Calls: -1}, switchboard.QuotaUsage{}); gerr != nil {
				return gerr
			}
		}
		return err
	}
	for _, s := range b.subjects(p) {
		if s.limit.Calls == 0 {
			if err := b.checkSpend(ctx, s, day); err != nil {
				return refuse(err)
			}
			continue
		}
		used, ok, err := b.store.QuotaAdd(ctx, s.name, day, switchboard.QuotaUsage{Calls: 1}, s.limit)
		if err != nil {
			return refuse(err)
		}
		if !ok {
			return refuse(b.exceeded(s, "calls", used.Calls, s.limit.Calls, "tool calls"))
		}
		counted = append(counted, s)
		if err := spent(b, s, used); err != nil {
			return refuse(err)
		}
	}
	return nil
}

// CheckSpend refuses with QUOTA_EXCEEDED when p's token or cost quota of
// today is used up: the assistant asks before each model call.
func (b *Book) CheckSpend(ctx context.Context, p switchboard.Principal) error {
	if b == nil {
		return nil
	}
	day := b.day()
	for _, s := range b.subjects(p) {
		if err := b.checkSpend(ctx, s, day); err != nil {
			return err
		}
	}
	return nil
}

func (b *Book) checkSpend(ctx context.Context, s subject, day string) error {
	if s.limit.Tokens == 0 && s.limit.CostMicros == 0 {
		return nil
	}
	used, err := b.store.QuotaGet(ctx, s.name, day)
	if err != nil {
		return err
	}
	return spent(b, s, used)
}

func spent(b *Book, s subject, used switchboard.QuotaUsage) error {
	if s.limit.Tokens > 0 && used.Tokens >= s.limit.Tokens {
		return b.exceeded(s, "tokens", used.Tokens, s.limit.Tokens, "model tokens")
	}
	if s.limit.CostMicros > 0 && used.CostMicros >= s.limit.CostMicros {
		return b.exceeded(s, "cost", used.CostMicros, s.limit.CostMicros, "")
	}
	return nil
}

// Spend counts tokens and cost (US dollars) of one model call of p.
func (b *Book) Spend(ctx context.Context, p switchboard.Principal, tokens int64, cost float64) error {
	if b == nil {
		return nil
	}
	add := switchboard.QuotaUsage{Tokens: max(tokens, 0), CostMicros: int64(math.Round(max(cost, 0) * 1e6))}
	if add == (switchboard.QuotaUsage{}) {
		return nil
	}
	day := b.day()
	for _, s := range b.subjects(p) {
		if s.limit.Tokens == 0 && s.limit.CostMicros == 0 {
			continue
		}
		if _, _, err := b.store.QuotaAdd(ctx, s.name, day, add, switchboard.QuotaUsage{}); err != nil {
			return err
		}
	}
	return nil
}

func (b *Book) day() string { return b.now().UTC().Format(time.DateOnly) }

// exceeded is QUOTA_EXCEEDED for what, with when the quota resets.
func (b *Book) exceeded(s subject, what string, used, limit int64, unit string) error {
	now := b.now().UTC()
	reset := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	wait := reset.Sub(now)
	amount := fmt.Sprintf("%d %s", limit, unit)
	if what == "cost" {
		amount = fmt.Sprintf("$%.2f", float64(limit)/1e6)
	}
	return switchboard.Errorf(switchboard.CodeQuotaExceeded,
		"%s used its daily quota of %s; it resets at 00:00 UTC, in %s (the operator sets it with serve --daily-quota %s.%s=N)",
		s.name, amount, wait.Round(time.Minute), s.kind, what).
		WithDetails(map[string]any{"quota": s.kind + "." + what, "subject": s.name, "used": used, "limit": limit, "retryAfterMs": wait.Milliseconds()})
}

// Expire deletes the counts of days before yesterday, at most limit rows;
// the retention sweep calls it.
func (b *Book) Expire(ctx context.Context, limit int) (int, error) {
	if b == nil {
		return 0, nil
	}
	return b.store.QuotaExpire(ctx, b.now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), limit)
}
