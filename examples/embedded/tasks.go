package main

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Task is one item of the list.
type Task struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Done      bool      `json:"done"`
	CreatedAt time.Time `json:"createdAt"`
}

// taskList is the app's state: in memory, as a real app would keep it in
// its own database.
type taskList struct {
	mu    sync.Mutex
	tasks []Task
	next  int
}

type listInput struct {
	Done  *bool  `json:"done,omitempty"`
	Query string `json:"query,omitempty"`
}

type listOutput struct {
	Tasks []Task `json:"tasks"`
}

type createInput struct {
	Title string `json:"title"`
}

type completeInput struct {
	ID string `json:"id"`
}

var listTool = switchboard.Tool{
	Name:        "tasks.list",
	Description: "List the tasks, oldest first. Filter by done state or by words in the title.",
	Class:       switchboard.ClassRead,
	InputSchema: json.RawMessage(`{"type":"object","properties":{
		"done":{"type":"boolean","description":"only tasks in this state"},
		"query":{"type":"string","description":"only tasks whose title contains this text"}},
		"additionalProperties":false}`),
	OutputSchema: json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array"}},"required":["tasks"]}`),
}

var createTool = switchboard.Tool{
	Name:        "tasks.create",
	Description: "Create an open task with a title.",
	Class:       switchboard.ClassMutate,
	InputSchema: json.RawMessage(`{"type":"object","properties":{
		"title":{"type":"string","minLength":1,"maxLength":200,"description":"what needs doing"}},
		"required":["title"],"additionalProperties":false}`),
}

var completeTool = switchboard.Tool{
	Name:        "tasks.complete",
	Description: "Mark a task done by its id.",
	Class:       switchboard.ClassMutate,
	InputSchema: json.RawMessage(`{"type":"object","properties":{
		"id":{"type":"string","description":"the task id, from tasks.list or tasks.create"}},
		"required":["id"],"additionalProperties":false}`),
}

func (l *taskList) list(_ context.Context, in listInput) (listOutput, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := listOutput{Tasks: []Task{}}
	for _, t := range l.tasks {
		if in.Done != nil && t.Done != *in.Done {
			continue
		}
		if in.Query != "" && !strings.Contains(strings.ToLower(t.Title), strings.ToLower(in.Query)) {
			continue
		}
		out.Tasks = append(out.Tasks, t)
	}
	return out, nil
}

func (l *taskList) create(_ context.Context, in createInput) (Task, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	t := Task{ID: "t" + strconv.Itoa(l.next), Title: in.Title, CreatedAt: time.Now().UTC()}
	l.tasks = append(l.tasks, t)
	return t, nil
}

func (l *taskList) complete(_ context.Context, in completeInput) (Task, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.tasks, func(t Task) bool { return t.ID == in.ID })
	if i < 0 {
		// A coded error: the caller sees NOT_FOUND, not a generic failure.
		return Task{}, switchboard.Errorf(switchboard.CodeNotFound, "no task %q; list the tasks to find its id", in.ID)
	}
	l.tasks[i].Done = true
	return l.tasks[i], nil
}
