package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/postgres"
	"github.com/switchboardhq/switchboard/sqlite"
)

// Names under the data root.
const (
	TokenFile = "admin.token"
	DBFile    = "switchboard.db"
)

// DataDir resolves the data root: flag, else $SWITCHBOARD_DATA, else the XDG
// data directory ($XDG_DATA_HOME or ~/.local/share) + "/switchboard".
func DataDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if env := os.Getenv("SWITCHBOARD_DATA"); env != "" {
		return env, nil
	}
	if xdg := os.Getenv("XDG_DATA_HOME"); xdg != "" {
		return filepath.Join(xdg, "switchboard"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the data root: %w (set --data or SWITCHBOARD_DATA)", err)
	}
	return filepath.Join(home, ".local", "share", "switchboard"), nil
}

// LoadOrCreateToken returns the admin token saved under dir, creating a
// random one (mode 0600) on first start.
func LoadOrCreateToken(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	if b, err := os.ReadFile(path); err == nil {
		if tok := strings.TrimSpace(string(b)); tok != "" {
			return tok, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read admin token: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create data root: %w", err)
	}
	tok := NewSecret()
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save admin token: %w", err)
	}
	return tok, nil
}

// ReadToken reads the admin token under dir without creating one.
func ReadToken(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, TokenFile))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// NewSecret returns 256 random bits, hex encoded.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// OpenStore opens the store named by spec: a postgres:// or postgresql://
// URL selects Postgres; empty selects SQLite under the data root.
func OpenStore(ctx context.Context, spec, dataDir string, opts ...StoreOption) (switchboard.Store, error) {
	var o storeOptions
	for _, opt := range opts {
		opt(&o)
	}
	if isPostgres(spec) {
		return postgres.Open(ctx, spec, &postgres.Options{Durability: o.durability})
	}
	if spec != "" && spec != "sqlite" {
		return nil, fmt.Errorf("unknown store %q: use a postgres:// URL, or leave it empty for SQLite under the data root", spec)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data root: %w", err)
	}
	path := filepath.Join(dataDir, DBFile)
	// Create the database 0600 before SQLite does (it would use 0644 less
	// the umask); SQLite gives its -wal and -shm files the database's mode.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	f.Close()
	return sqlite.Open(ctx, path, &sqlite.Options{Durability: o.durability})
}

// isPostgres reports whether a store spec names Postgres.
func isPostgres(spec string) bool {
	return strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://")
}

// StoreOption tunes OpenStore.
type StoreOption func(*storeOptions)

type storeOptions struct{ durability switchboard.Durability }

// WithDurability picks which failures a commit survives (the config's
// store.durability); empty keeps the driver's default.
func WithDurability(d switchboard.Durability) StoreOption {
	return func(o *storeOptions) { o.durability = d }
}

// SecureDataDir makes an existing data root private: the directory 0700,
// the admin token, the SQLite database with its -wal and -shm files and
// the ledger's anchor and key 0600. It returns the paths whose mode it tightened, for the caller to
// log; a data root that does not exist yet is left alone (it is created
// private).
func SecureDataDir(dir string) ([]string, error) {
	var tightened []string
	tighten := func(path string, mode fs.FileMode) error {
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("secure data root: %w", err)
		}
		if fi.Mode().Perm()&^mode == 0 {
			return nil
		}
		if err := os.Chmod(path, fi.Mode().Perm()&mode); err != nil {
			return fmt.Errorf("secure data root: %w", err)
		}
		tightened = append(tightened, path)
		return nil
	}
	if err := tighten(dir, 0o700); err != nil {
		return nil, err
	}
	for _, name := range []string{TokenFile, DBFile, DBFile + "-wal", DBFile + "-shm", activity.AnchorFile, activity.AnchorKeyFile} {
		if err := tighten(filepath.Join(dir, name), 0o600); err != nil {
			return tightened, err
		}
	}
	return tightened, nil
}
