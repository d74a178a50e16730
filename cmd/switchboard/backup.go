package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// backupFormat is the version of the archive's layout (backup.json's
// "format"); restore refuses one it does not know.
const backupFormat = 1

// backupMeta is backup.json, the archive's first member.
type backupMeta struct {
	Format    int       `json:"format"`
	CreatedAt time.Time `json:"createdAt"`
	Version   string    `json:"version"` // the switchboard build that wrote it
	Files     []string  `json:"files"`
}

// backupKeys are the data root's files a restore needs beside the
// database: the ledger's anchor (its checkpoint and HMAC key) and the
// admin token. The anchor is read before the database is copied, so the
// copy holds every entry the checkpoint names.
var backupKeys = []string{activity.AnchorFile, activity.AnchorKeyFile, daemon.TokenFile}

func newBackup(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the SQLite store, the ledger anchor and the keys to FILE",
		Long: `Write the data root's SQLite database, the ledger's anchor (checkpoint and
key) and the admin token to FILE, a gzipped tar readable only by you (0600).
The copy is consistent while the daemon serves: SQLite's VACUUM INTO reads
one snapshot, holding every call committed before it began. Restore it with
'switchboard restore FILE'. For Postgres, use pg_dump (docs/operations.md).`,
		Example: `  switchboard backup /var/backups/switchboard-$(date +%F).tar.gz`,
		Args:    exactArgs(1, "the file to write"),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := g.dataRoot()
			if err != nil {
				return err
			}
			meta, err := backup(c.Context(), dir, args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(meta)
			}
			fmt.Fprintf(g.stdout, "backed up %s to %s (%s)\n", dir, args[0], count(len(meta.Files), "file", "files"))
			return nil
		},
	}
}

// dataRoot is the data root client commands name (--data, the config file,
// $SWITCHBOARD_DATA, the default).
func (g *globals) dataRoot() (string, error) {
	if err := g.readClientConfig(); err != nil {
		return "", err
	}
	return daemon.DataDir(g.data)
}

func backup(ctx context.Context, dir, file string) (backupMeta, error) {
	dbPath := filepath.Join(dir, daemon.DBFile)
	if _, err := os.Stat(dbPath); err != nil {
		return backupMeta{}, switchboard.Errorf(switchboard.CodeNotFound,
			"no SQLite store at %s: pass --data with the daemon's data root (a Postgres store is backed up with pg_dump; see docs/operations.md)", dbPath)
	}
	meta := backupMeta{Format: backupFormat, CreatedAt: time.Now().UTC(), Version: buildVersion().Version}
	keys := map[string][]byte{}
	for _, name := range backupKeys {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return backupMeta{}, fmt.Errorf("backup: %w", err)
		}
		keys[name] = b
	}
	tmp, err := os.MkdirTemp(filepath.Dir(file), ".switchboard-backup-")
	if err != nil {
		return backupMeta{}, fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(tmp)
	st, err := sqlite.Open(ctx, dbPath, nil)
	if err != nil {
		return backupMeta{}, err
	}
	snap := filepath.Join(tmp, daemon.DBFile)
	err = st.Backup(ctx, snap)
	st.Close()
	if err != nil {
		return backupMeta{}, err
	}
	// Written beside FILE and renamed into place, so FILE is either whole
	// or absent.
	part := filepath.Join(tmp, "archive")
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return backupMeta{}, fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, name := range backupKeys {
		if _, ok := keys[name]; ok {
			meta.Files = append(meta.Files, name)
		}
	}
	meta.Files = append(meta.Files, daemon.DBFile)
	mb, _ := json.MarshalIndent(meta, "", "  ")
	if err := tarBytes(tw, "backup.json", mb); err != nil {
		return backupMeta{}, err
	}
	for _, name := range backupKeys {
		if b, ok := keys[name]; ok {
			if err := tarBytes(tw, name, b); err != nil {
				return backupMeta{}, err
			}
		}
	}
	if err := tarFile(tw, daemon.DBFile, snap); err != nil {
		return backupMeta{}, err
	}
	if err := tw.Close(); err != nil {
		return backupMeta{}, fmt.Errorf("backup: %w", err)
	}
	if err := zw.Close(); err != nil {
		return backupMeta{}, fmt.Errorf("backup: %w", err)
	}
	if err := f.Sync(); err != nil {
		return backupMeta{}, fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Stat(file); err == nil {
		return backupMeta{}, switchboard.Errorf(switchboard.CodeConflict, "backup: %s exists; name a new file", file)
	}
	if err := os.Rename(part, file); err != nil {
		return backupMeta{}, fmt.Errorf("backup: %w", err)
	}
	return meta, nil
}

func tarBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := tw.Write(b); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

func tarFile(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}
