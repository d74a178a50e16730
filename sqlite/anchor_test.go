package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/storetest"
)

// The ledger's anchor catches a cut tail on SQLite (issue 14 item 5).
func TestAnchor(t *testing.T) {
	storetest.ExerciseAnchor(t, func(t *testing.T) (switchboard.Store, storetest.Tamper) {
		path := filepath.Join(t.TempDir(), "switchboard.db")
		return open(t, path, nil), func(t *testing.T, from int64) switchboard.Store {
			db, err := sql.Open("sqlite", path)
			must(t, err)
			defer db.Close()
			_, err = db.Exec(`DELETE FROM activity WHERE id >= ?`, from)
			must(t, err)
			return open(t, path, nil)
		}
	})
}
