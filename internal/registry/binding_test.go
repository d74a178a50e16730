package registry_test

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/registry"
)

func TestCredentialHeadersMustUseEnv(t *testing.T) {
	mk := func(name string, v switchboard.HeaderValue) switchboard.Tool {
		return switchboard.Tool{Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: "http://127.0.0.1:8080/tasks",
				Headers: map[string]switchboard.HeaderValue{name: v}}}}
	}
	for _, name := range []string{"Authorization", "Cookie", "X-Api-Key", "X-Auth-Token", "X-Client-Secret", "Proxy-Authorization"} {
		tool := mk(name, switchboard.HeaderValue{Value: "s3cret"})
		if err := registry.Check(&tool); switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), name) {
			t.Errorf("literal %s accepted: %v", name, err)
		}
		tool = mk(name, switchboard.HeaderValue{Env: "TASKS_SECRET"})
		if err := registry.Check(&tool); err != nil {
			t.Errorf("env %s refused: %v", name, err)
		}
	}
	tool := mk("Accept", switchboard.HeaderValue{Value: "application/json"})
	if err := registry.Check(&tool); err != nil {
		t.Errorf("a plain header refused: %v", err)
	}
}

func TestPlaceholdersOnlyInPathAndQuery(t *testing.T) {
	for url, ok := range map[string]bool{
		"http://127.0.0.1:8080/api/{id}?q={q}": true,
		"http://{host}/api":                    false,
		"http://api.{zone}.example.com/x":      false,
		"{scheme}://api.example.com/x":         false,
	} {
		tool := switchboard.Tool{Name: "tasks.get", Description: "Get a task.", Class: switchboard.ClassRead,
			Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "GET", URL: url}}}
		if err := registry.Check(&tool); (err == nil) != ok {
			t.Errorf("%s: %v", url, err)
		}
	}
}
