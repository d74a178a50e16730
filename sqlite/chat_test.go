package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard/storetest"
)

func TestChatConformance(t *testing.T) {
	storetest.ExerciseChat(t, func(t *testing.T) storetest.ChatStore {
		return open(t, filepath.Join(t.TempDir(), "switchboard.db"), nil)
	})
}
