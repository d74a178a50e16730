package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/sqlite"
)

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "switchboard")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "switchboard.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	err = s.ToolPut(ctx, switchboard.SourceHost, []switchboard.Tool{{
		Name:        "orders.search",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	tools, _ := s.ToolList(ctx)
	fmt.Println(tools[0].Name, tools[0].Origin.Source, tools[0].Version)
	// Output: orders.search host 1
}
