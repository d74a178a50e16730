package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/switchboardhq/switchboard"
)

// Backup writes a consistent copy of the database to path with SQLite's
// VACUUM INTO: one read transaction, so it runs while a daemon in another
// process keeps writing (WAL mode lets readers and the writer proceed
// together) and holds every transaction committed before it began and
// none after. path must not exist.
func (s *Store) Backup(ctx context.Context, path string) error {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return switchboard.Errorf(switchboard.CodeConflict, "backup: %s exists; name a new file", path)
	}
	// The writer connection: the readers are opened query-only.
	if _, err := s.w.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return translate(ctx, "backup", err)
	}
	return nil
}
