package postgres

import (
	"testing"
	"time"
)

func TestStatementTimeoutSettled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opt       time.Duration
		dsn       map[string]string
		want      time.Duration
		stmt, lck string
	}{
		{0, nil, DefaultStatementTimeout, "5000", "5000"},
		{300 * time.Millisecond, map[string]string{"statement_timeout": "9s"}, 300 * time.Millisecond, "300", "300"},
		{0, map[string]string{"statement_timeout": "250ms"}, 250 * time.Millisecond, "250", "250"},
		{0, map[string]string{"statement_timeout": "2000"}, 2 * time.Second, "2000", "2000"},
		{0, map[string]string{"statement_timeout": "1min", "lock_timeout": "1s"}, time.Minute, "60000", "1s"},
		{0, map[string]string{"statement_timeout": "0"}, 0, "", ""},
		{-1, nil, 0, "", ""},
	} {
		params := map[string]string{}
		for k, v := range tc.dsn {
			params[k] = v
		}
		got, err := statementTimeout(tc.opt, params)
		if err != nil || got != tc.want || params["statement_timeout"] != tc.stmt || params["lock_timeout"] != tc.lck {
			t.Errorf("statementTimeout(%v, %v) = %v, %v, params %v; want %v, statement_timeout %q, lock_timeout %q",
				tc.opt, tc.dsn, got, err, params, tc.want, tc.stmt, tc.lck)
		}
	}
	for _, bad := range []string{"soon", "5 parsecs", "-1s", ""} {
		if _, err := statementTimeout(0, map[string]string{"statement_timeout": bad}); err == nil {
			t.Errorf("statement_timeout %q accepted", bad)
		}
	}
}
