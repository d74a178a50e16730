package redact

import (
	"strings"
	"testing"
)

// BenchmarkIsSecretKey: the key check runs for every key of every value
// the ledger redacts. perCallReplacer is how it was written before issue
// 15 (a strings.Replacer built on every call), measured in the same run.
func BenchmarkIsSecretKey(b *testing.B) {
	keys := []string{"projectId", "title", "priority", "Authorization", "api_key", "x-request-id"}
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			IsSecretKey(keys[i%len(keys)])
		}
	})
	b.Run("perCallReplacer", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			_ = strings.ToLower(strings.NewReplacer("-", "", "_", "", " ", "").Replace(keys[i%len(keys)]))
		}
	})
}
