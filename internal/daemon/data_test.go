package daemon_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// The SQLite store is created private: the data root 0700, the database
// and its -wal and -shm files 0600.
func TestStoreFilesArePrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	st, err := daemon.OpenStore(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A write, so the WAL and its index exist.
	if err := st.ToolPut(context.Background(), switchboard.SourceHost, []switchboard.Tool{{Name: "a.b", Description: "x", Class: switchboard.ClassRead}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{dir: 0o700}
	for _, n := range []string{daemon.DBFile, daemon.DBFile + "-wal", daemon.DBFile + "-shm"} {
		want[filepath.Join(dir, n)] = 0o600
	}
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s is %v, want %v", path, fi.Mode().Perm(), mode)
		}
	}
}

// An existing data root that others can read is tightened at start, and
// the paths are reported so serve can log them.
func TestSecureDataDirTightens(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	var loose []string
	for _, n := range []string{daemon.DBFile, daemon.DBFile + "-wal", daemon.DBFile + "-shm", daemon.TokenFile} {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		loose = append(loose, p)
	}
	if err := os.Chmod(loose[3], 0o600); err != nil { // already private: not reported
		t.Fatal(err)
	}
	got, err := daemon.SecureDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{dir}, loose[:3]...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("tightened %v, want %v", got, want)
	}
	for _, p := range append([]string{dir}, loose...) {
		fi, _ := os.Stat(p)
		if p == dir && fi.Mode().Perm() != 0o700 || p != dir && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v after SecureDataDir", p, fi.Mode().Perm())
		}
	}
	if again, err := daemon.SecureDataDir(dir); err != nil || len(again) != 0 {
		t.Errorf("second pass tightened %v (%v)", again, err)
	}
	if none, err := daemon.SecureDataDir(filepath.Join(dir, "missing")); err != nil || len(none) != 0 {
		t.Errorf("missing root: %v %v", none, err)
	}
}
