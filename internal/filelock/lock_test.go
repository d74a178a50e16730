//go:build unix

package filelock

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Two holders never overlap: each critical section sees the counter it
// left.
func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	var (
		wg     sync.WaitGroup
		inside int
		bad    bool
		mu     sync.Mutex
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := Lock(path) // a new descriptor each time: flock excludes across them
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			bad = bad || inside != 1
			mu.Unlock()
			time.Sleep(time.Millisecond) // a window another holder would fall into
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if bad {
		t.Fatal("two holders were inside at once")
	}
}
