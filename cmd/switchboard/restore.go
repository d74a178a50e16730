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
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

func newRestore(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE",
		Short: "Restore a backup into the data root, then verify the ledger",
		Long: `Put the database, ledger anchor and admin token of a 'switchboard backup'
archive into the data root (--data), then verify the ledger's hash chain
against the restored anchor. It refuses while a daemon runs on that data
root (one whose heartbeat in the store is fresh); stop it first. Files it
replaces are kept beside themselves as NAME.pre-restore-TIMESTAMP.`,
		Example: `  switchboard restore /var/backups/switchboard-2026-12-03.tar.gz
  switchboard restore --data /srv/switchboard-new backup.tar.gz`,
		Args: exactArgs(1, "the backup file"),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := g.dataRoot()
			if err != nil {
				return err
			}
			r, err := restore(c.Context(), dir, args[0])
			if err != nil {
				return err
			}
			if g.json {
				if err := g.printJSON(r); err != nil {
					return err
				}
			} else if r.OK {
				fmt.Fprintf(g.stdout, "restored %s into %s; ledger ok: %s, chain intact up to entry %d\n", args[0], dir, count(r.Entries, "entry", "entries"), r.HeadID)
			}
			if !r.OK {
				return switchboard.Errorf(switchboard.CodeConflict, "restored, but the ledger does not verify (entry %d): %s", r.BadID, r.Problem)
			}
			return nil
		},
	}
}

// restore unpacks file into dir and verifies the ledger there.
func restore(ctx context.Context, dir, file string) (activity.Report, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return activity.Report{}, fmt.Errorf("restore: %w", err)
	}
	if err := refuseRunning(ctx, dir); err != nil {
		return activity.Report{}, err
	}
	tmp, err := os.MkdirTemp(dir, ".restore-")
	if err != nil {
		return activity.Report{}, fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(tmp)
	files, err := unpack(file, tmp)
	if err != nil {
		return activity.Report{}, err
	}
	// Everything is unpacked and checked before the data root changes.
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for _, name := range []string{daemon.DBFile, daemon.DBFile + "-wal", daemon.DBFile + "-shm", activity.AnchorFile, activity.AnchorKeyFile, daemon.TokenFile} {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			if err := os.Rename(path, path+".pre-restore-"+stamp); err != nil {
				return activity.Report{}, fmt.Errorf("restore: keep the old %s: %w", name, err)
			}
		}
	}
	for _, name := range files {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			return activity.Report{}, fmt.Errorf("restore: %w", err)
		}
	}
	return verifyRestored(ctx, dir)
}

// refuseRunning fails when a daemon serves dir's store: a replica that has
// not stopped and beat within the replica timeout.
func refuseRunning(ctx context.Context, dir string) error {
	path := filepath.Join(dir, daemon.DBFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	reps, err := st.ReplicaList(ctx)
	if err != nil {
		return err
	}
	for _, r := range reps {
		if r.StoppedAt.IsZero() && time.Since(r.HeartbeatAt) < daemon.DefaultReplicaTimeout {
			return switchboard.Errorf(switchboard.CodeConflict,
				"a daemon is running on %s (replica %s at %s, heartbeat %s ago); stop it, then restore",
				dir, r.Name, r.Addr, time.Since(r.HeartbeatAt).Round(time.Second))
		}
	}
	return nil
}

// unpack extracts a backup archive into dir and returns the names it
// wrote; only the names a backup holds are accepted.
func unpack(file, dir string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeNotFound, "restore: %v", err)
	}
	defer f.Close()
	bad := func(format string, a ...any) error {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "restore: %s is not a switchboard backup: "+format, append([]any{file}, a...)...)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, bad("%v", err)
	}
	tr := tar.NewReader(zr)
	allowed := append([]string{daemon.DBFile}, backupKeys...)
	var (
		meta  *backupMeta
		files []string
	)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bad("%v", err)
		}
		if h.Name == "backup.json" {
			var m backupMeta
			if err := json.NewDecoder(io.LimitReader(tr, 1<<16)).Decode(&m); err != nil {
				return nil, bad("backup.json: %v", err)
			}
			if m.Format != backupFormat {
				return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "restore: %s has backup format %d; this switchboard reads format %d", file, m.Format, backupFormat)
			}
			meta = &m
			continue
		}
		if !slices.Contains(allowed, h.Name) || slices.Contains(files, h.Name) || h.Typeflag != tar.TypeReg {
			return nil, bad("unexpected member %q", h.Name)
		}
		out, err := os.OpenFile(filepath.Join(dir, h.Name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		files = append(files, h.Name)
	}
	if meta == nil || !slices.Contains(files, daemon.DBFile) {
		return nil, bad("no backup.json or no database")
	}
	return files, nil
}

// verifyRestored opens the restored store with the restored anchor, as
// the daemon will, and verifies the ledger's chain against it.
func verifyRestored(ctx context.Context, dir string) (activity.Report, error) {
	st, err := sqlite.Open(ctx, filepath.Join(dir, daemon.DBFile), nil)
	if err != nil {
		return activity.Report{}, err
	}
	defer st.Close()
	anchor, err := activity.OpenAnchor(dir, nil)
	if err != nil {
		return activity.Report{}, err
	}
	ledger, err := activity.New(ctx, st, &activity.Options{Anchor: anchor})
	if err != nil {
		return activity.Report{}, err
	}
	return ledger.Verify(ctx)
}
