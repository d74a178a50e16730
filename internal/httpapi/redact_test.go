package httpapi

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080/notes/{id}?api_key=hunter2&limit=5": "http://127.0.0.1:8080/notes/{id}?api_key=[redacted]&limit=5",
		"https://bob:s3cret@api.example.com/x?token={token}":       "https://[redacted]@api.example.com/x?token={token}",
		"http://127.0.0.1:8080/api/projects/{projectId}/tasks":     "http://127.0.0.1:8080/api/projects/{projectId}/tasks",
		"http://127.0.0.1/search?q=a@b&Authorization=Bearer%20xyz": "http://127.0.0.1/search?q=a@b&Authorization=[redacted]",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
