package main

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestSetDailyQuota(t *testing.T) {
	var q switchboard.DailyQuota
	for _, spec := range []string{"agent.calls=5000", "user.cost=20.5", "user.tokens=1e6"} {
		if err := setDailyQuota(&q, spec); err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
	}
	want := switchboard.DailyQuota{Agent: switchboard.QuotaUsage{Calls: 5000}, User: switchboard.QuotaUsage{Tokens: 1_000_000, CostMicros: 20_500_000}}
	if q != want {
		t.Fatalf("%+v, want %+v", q, want)
	}
	for spec, why := range map[string]string{
		"agent.calls":       "no WHO.WHAT=N",
		"bot.calls=3":       `"bot" is not agent or user`,
		"agent.steps=3":     `"steps" is not calls, tokens or cost`,
		"agent.calls=-1":    "positive number",
		"agent.calls=2.5":   "whole number",
		"user.cost=NaN":     "positive number",
		"user.cost=1e400":   "positive number",
		"agent.tokens=many": "positive number",
	} {
		err := setDailyQuota(&q, spec)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "e.g. agent.calls=5000") {
			t.Errorf("%s: %v, want an error saying %q and showing the form", spec, err, why)
		}
	}
}
