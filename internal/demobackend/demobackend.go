// Package demobackend is the sample backend the examples call: a task
// tracker (examples/manifests/tasks.yaml: tasks, invoices, media) and a
// pet store (testdata/openapi/petstore3.yaml), kept in memory. `switchboard
// serve --demo` mounts it under /demo/api/ so that the README's walkthrough
// works from a fresh clone with nothing else running. It is sample data,
// not a product: state lives as long as the daemon and is bounded.
//
// It does what a real backend must do with switchboard's calls: each
// tracker request must carry a Switchboard-Assertion the daemon signed
// (checked against the daemon's published keys with go-jose, through
// assertion.Verify), and each user's tasks are theirs alone: user:alice
// neither lists nor changes user:bob's, whatever id an agent names (the
// confused deputy, RELIABILITY row 24). A missing, forged, expired or
// wrong-audience assertion is 401.
package demobackend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/switchboardhq/switchboard/assertion"
)

// Prefix is where the daemon mounts the backend.
const Prefix = "/demo/api/"

// maxRecords bounds each collection: the routes need no switchboard token,
// so any local process may call them.
const maxRecords = 10000

// Task is one task of the tracker.
type Task struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Title     string `json:"title"`
	Status    string `json:"status"` // open or done
	DueDate   string `json:"dueDate,omitempty"`
	Assignee  string `json:"assignee,omitempty"`
	Created   string `json:"createdAt"`
	// Owner is the user the task was created for (the assertion's sub).
	Owner string `json:"owner"`
}

type category struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type tag = category

// pet is the petstore document's Pet.
type pet struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Category  *category `json:"category,omitempty"`
	PhotoURLs []string  `json:"photoUrls"`
	Tags      []tag     `json:"tags,omitempty"`
	Status    string    `json:"status,omitempty"`
}

// Options says whose assertions the backend accepts. Issuer and Keys are
// required.
type Options struct {
	// Issuer is the daemon's base URL (the assertions' iss).
	Issuer string
	// Keys returns the daemon's JWKS (what GET /.well-known/jwks.json
	// serves).
	Keys func(ctx context.Context) (jose.JSONWebKeySet, error)
	// Audience is the aud the backend requires; empty means the origin it
	// was reached at (http://<Host>), which is the binding URL's origin
	// and so the daemon's default audience.
	Audience string
	// Now is the clock assertions are checked by (default time.Now).
	Now func() time.Time
}

type backend struct {
	opts     Options
	mu       sync.Mutex
	now      func() time.Time
	projects []string
	tasks    []*Task // oldest first
	nextTask int
	invoices map[string]string // invoice id → customer email
	media    int
	pets     map[int64]*pet
}

// New returns the backend's handler; its routes start with Prefix.
func New(opts *Options) http.Handler {
	b := &backend{
		now: time.Now,
		// The demo app's projects, so the tab and the backend agree.
		projects: []string{"apollo", "borealis", "cascade", "delta", "ember", "fjord"},
		invoices: map[string]string{"inv-1001": "ap@apollo.example", "inv-1002": "finance@borealis.example", "inv-1003": "billing@cascade.example"},
		pets: map[int64]*pet{
			10: {ID: 10, Name: "doggie", Category: &category{1, "Dogs"}, PhotoURLs: []string{"https://example.com/doggie.jpg"}, Tags: []tag{{1, "friendly"}}, Status: "available"},
			11: {ID: 11, Name: "whiskers", Category: &category{2, "Cats"}, PhotoURLs: []string{}, Status: "sold"},
			12: {ID: 12, Name: "nemo", Category: &category{3, "Fish"}, PhotoURLs: []string{}, Status: "pending"},
			13: {ID: 13, Name: "rex", Category: &category{1, "Dogs"}, PhotoURLs: []string{}, Tags: []tag{{2, "loud"}}, Status: "sold"},
		},
	}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.Now == nil {
		b.opts.Now = time.Now
	}
	m := http.NewServeMux()
	t := Prefix
	m.HandleFunc("POST "+t+"projects/{projectId}/tasks", b.keyed(b.createTask))
	m.HandleFunc("GET "+t+"projects/{projectId}/tasks", b.keyed(b.listTasks))
	m.HandleFunc("POST "+t+"tasks/{taskId}/assignee", b.keyed(b.assignTask))
	m.HandleFunc("DELETE "+t+"tasks/{taskId}", b.keyed(b.deleteTask))
	m.HandleFunc("POST "+t+"invoices/{invoiceId}/send", b.keyed(b.sendInvoice))
	m.HandleFunc("POST "+t+"media", b.keyed(b.uploadImage))
	p := t + "v3/"
	m.HandleFunc("GET "+p+"pet/findByStatus", b.findPetsByStatus)
	m.HandleFunc("GET "+p+"pet/findByTags", b.findPetsByTags)
	m.HandleFunc("GET "+p+"pet/{petId}", b.getPet)
	m.HandleFunc("DELETE "+p+"pet/{petId}", b.deletePet)
	m.HandleFunc("POST "+p+"pet", b.putPet(false))
	m.HandleFunc("PUT "+p+"pet", b.putPet(true))
	m.HandleFunc("GET "+p+"store/inventory", b.inventory)
	m.HandleFunc(t, func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, fmt.Sprintf("the demo backend has no route %s %s (it serves the examples' tasks, invoices, media and the pet store's pets)", r.Method, r.URL.Path))
	})
	return m
}

// keyed refuses a call without X-Api-Key, as a real backend would: the
// manifest's binding sends it from $TASKS_API_KEY (any value will do here).
// The key says the caller is switchboard; the assertion says for whom, and
// the user it names reaches the handler in the request's context.
func (b *backend) keyed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") == "" {
			fail(w, http.StatusUnauthorized, "missing X-Api-Key header: start the daemon with TASKS_API_KEY set (any value works for the demo backend)")
			return
		}
		user, err := b.verify(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			fail(w, http.StatusUnauthorized, "the request's Switchboard-Assertion is not valid: "+err.Error())
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		h(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	}
}

type userKey struct{}

// userOf is the user a verified request acts for.
func userOf(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// verify checks the request's assertion and returns its user (sub).
func (b *backend) verify(r *http.Request) (string, error) {
	if b.opts.Keys == nil || b.opts.Issuer == "" {
		return "", fmt.Errorf("this backend was started without the daemon's keys, so it trusts no assertion")
	}
	aud := b.opts.Audience
	if aud == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		aud = scheme + "://" + r.Host
	}
	keys, err := b.opts.Keys(r.Context())
	if err != nil {
		return "", fmt.Errorf("read the daemon's keys: %w", err)
	}
	c, err := assertion.Verify(r.Header.Get(assertion.Header), keys, assertion.Expected{Issuer: b.opts.Issuer, Audience: aud, Now: b.opts.Now()})
	if err != nil {
		return "", err
	}
	return c.Subject, nil
}

func (b *backend) createTask(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title   string `json:"title"`
		DueDate string `json:"dueDate"`
	}
	if !decode(w, r, &in) {
		return
	}
	pid := r.PathValue("projectId")
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.projects, pid) {
		fail(w, http.StatusNotFound, fmt.Sprintf("no project %q; projects: %s", pid, strings.Join(b.projects, ", ")))
		return
	}
	if strings.TrimSpace(in.Title) == "" {
		fail(w, http.StatusBadRequest, "title must not be empty")
		return
	}
	if len(b.tasks) >= maxRecords {
		fail(w, http.StatusInsufficientStorage, "the demo backend holds at most 10000 tasks; restart the daemon to reset it")
		return
	}
	b.nextTask++
	t := &Task{ID: "t" + strconv.Itoa(b.nextTask), ProjectID: pid, Title: in.Title, Status: "open", DueDate: in.DueDate,
		Created: b.now().UTC().Format(time.RFC3339), Owner: userOf(r)}
	b.tasks = append(b.tasks, t)
	writeJSON(w, http.StatusCreated, t)
}

func (b *backend) listTasks(w http.ResponseWriter, r *http.Request) {
	pid, status := r.PathValue("projectId"), r.URL.Query().Get("status")
	if status == "" {
		status = "all"
	}
	if status != "open" && status != "done" && status != "all" {
		fail(w, http.StatusBadRequest, "status must be open, done or all")
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.projects, pid) {
		fail(w, http.StatusNotFound, fmt.Sprintf("no project %q; projects: %s", pid, strings.Join(b.projects, ", ")))
		return
	}
	out := []Task{}
	for i := len(b.tasks) - 1; i >= 0; i-- { // newest first
		if t := b.tasks[i]; t.ProjectID == pid && t.Owner == userOf(r) && (status == "all" || t.Status == status) {
			out = append(out, *t)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"projectId": pid, "tasks": out})
}

// task finds one of the user's tasks; another user's is as unknown as a
// task that does not exist, so ids cannot be probed.
func (b *backend) task(w http.ResponseWriter, r *http.Request, id string) (int, bool) {
	for i, t := range b.tasks {
		if t.ID == id && t.Owner == userOf(r) {
			return i, true
		}
	}
	fail(w, http.StatusNotFound, fmt.Sprintf("no task %q", id))
	return 0, false
}

func (b *backend) assignTask(w http.ResponseWriter, r *http.Request) {
	var in struct {
		UserID string `json:"userId"`
	}
	if !decode(w, r, &in) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.task(w, r, r.PathValue("taskId"))
	if !ok {
		return
	}
	b.tasks[i].Assignee = in.UserID
	writeJSON(w, http.StatusOK, b.tasks[i])
}

func (b *backend) deleteTask(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.task(w, r, r.PathValue("taskId"))
	if !ok {
		return
	}
	t := b.tasks[i]
	b.tasks = slices.Delete(b.tasks, i, i+1)
	writeJSON(w, http.StatusOK, map[string]any{"id": t.ID, "deleted": true})
}

func (b *backend) sendInvoice(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("invoiceId")
	b.mu.Lock()
	to, ok := b.invoices[id]
	b.mu.Unlock()
	if !ok {
		fail(w, http.StatusNotFound, fmt.Sprintf("no invoice %q; invoices: inv-1001, inv-1002, inv-1003", id))
		return
	}
	// Nothing is emailed: the demo only says what a real backend would do.
	writeJSON(w, http.StatusOK, map[string]any{"invoiceId": id, "sentTo": to, "sentAt": b.now().UTC().Format(time.RFC3339)})
}

func (b *backend) uploadImage(w http.ResponseWriter, r *http.Request) {
	var in struct {
		URL   string `json:"url"`
		Album string `json:"album"`
	}
	if !decode(w, r, &in) {
		return
	}
	if !strings.HasPrefix(in.URL, "http://") && !strings.HasPrefix(in.URL, "https://") {
		fail(w, http.StatusBadRequest, "url must be an http(s) URL of a PNG or JPEG image")
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.media >= maxRecords {
		fail(w, http.StatusInsufficientStorage, "the demo backend holds at most 10000 images; restart the daemon to reset it")
		return
	}
	b.media++
	// The image is not fetched: the demo records the URL as the asset.
	writeJSON(w, http.StatusCreated, map[string]any{"assetId": "media-" + strconv.Itoa(100+b.media), "url": in.URL, "album": in.Album})
}

func (b *backend) findPetsByStatus(w http.ResponseWriter, r *http.Request) {
	want := map[string]bool{}
	for _, s := range strings.Split(r.URL.Query().Get("status"), ",") {
		if s != "" {
			want[s] = true
		}
	}
	if len(want) == 0 {
		want["available"] = true // the document's default
	}
	b.pickPets(w, func(p *pet) bool { return want[p.Status] })
}

func (b *backend) findPetsByTags(w http.ResponseWriter, r *http.Request) {
	tags := r.URL.Query()["tags"]
	b.pickPets(w, func(p *pet) bool {
		for _, t := range p.Tags {
			if slices.Contains(tags, t.Name) {
				return true
			}
		}
		return false
	})
}

func (b *backend) pickPets(w http.ResponseWriter, keep func(*pet) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []pet{}
	for _, p := range b.pets {
		if keep(p) {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(a, c pet) int { return int(a.ID - c.ID) })
	writeJSON(w, http.StatusOK, out)
}

func (b *backend) petID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("petId"), 10, 64)
	if err != nil {
		fail(w, http.StatusBadRequest, "petId must be an integer")
		return 0, false
	}
	return id, true
}

func (b *backend) getPet(w http.ResponseWriter, r *http.Request) {
	id, ok := b.petID(w, r)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pets[id]
	if p == nil {
		fail(w, http.StatusNotFound, fmt.Sprintf("no pet %d", id))
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (b *backend) deletePet(w http.ResponseWriter, r *http.Request) {
	id, ok := b.petID(w, r)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pets[id] == nil {
		fail(w, http.StatusNotFound, fmt.Sprintf("no pet %d", id))
		return
	}
	delete(b.pets, id)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

// putPet adds (POST) or replaces (PUT, which needs an existing id) a pet.
func (b *backend) putPet(replace bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		var p pet
		if !decode(w, r, &p) {
			return
		}
		if p.Name == "" {
			fail(w, http.StatusBadRequest, "name is required")
			return
		}
		if p.PhotoURLs == nil {
			p.PhotoURLs = []string{}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		switch {
		case replace && b.pets[p.ID] == nil:
			fail(w, http.StatusNotFound, fmt.Sprintf("no pet %d", p.ID))
			return
		case !replace && len(b.pets) >= maxRecords:
			fail(w, http.StatusInsufficientStorage, "the demo backend holds at most 10000 pets; restart the daemon to reset it")
			return
		case !replace && (p.ID == 0 || b.pets[p.ID] != nil):
			p.ID = 1
			for b.pets[p.ID] != nil {
				p.ID++
			}
		}
		b.pets[p.ID] = &p
		writeJSON(w, http.StatusOK, p)
	}
}

func (b *backend) inventory(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for _, p := range b.pets {
		out[p.Status]++
	}
	writeJSON(w, http.StatusOK, out)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "request body must be a JSON object: "+err.Error())
		return false
	}
	return true
}

func fail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
