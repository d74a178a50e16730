package postgres_test

import (
	"testing"

	"github.com/switchboardhq/switchboard/storetest"
)

func TestChatConformance(t *testing.T) {
	dsn := testDSN(t)
	storetest.ExerciseChat(t, func(t *testing.T) storetest.ChatStore {
		return open(t, dsn, freshSchema(t, dsn))
	})
}
