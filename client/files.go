package client

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Download is a file the daemon served.
type Download struct {
	Name        string
	ContentType string
	Content     []byte
}

// JobFile downloads the file a finished job produced (document.export's
// PDF or DOCX): GET /api/v1/jobs/{id}/file. CONFLICT while the job runs or
// when it failed.
func (c *Client) JobFile(ctx context.Context, id string) (Download, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/jobs/"+pathEscape(id)+"/file", nil)
	if err != nil {
		return Download{}, switchboard.Errorf(switchboard.CodeInvalidInput, "build request: %v", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return Download{}, c.transportError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return Download{}, switchboard.Errorf(switchboard.CodeUnavailable, "read response from %s: %v", c.base, err)
	}
	if resp.StatusCode >= 300 {
		var env switchboard.ErrorEnvelope
		if json.Unmarshal(b, &env) != nil || env.Error == nil {
			return Download{}, switchboard.Errorf(switchboard.CodeInternal, "daemon answered %s: %s", resp.Status, excerpt(b))
		}
		return Download{}, env.Error
	}
	d := Download{ContentType: resp.Header.Get("Content-Type"), Content: b}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		d.Name = params["filename"]
	}
	return d, nil
}

// WaitJob polls a job until it ends (or ctx does) and returns it; the
// poll backs off from 50 ms to 1 s.
func (c *Client) WaitJob(ctx context.Context, id string) (switchboard.Job, error) {
	wait := 50 * time.Millisecond
	for {
		j, err := c.Job(ctx, id)
		if err != nil || j.Status.Terminal() {
			return j, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return j, switchboard.Errorf(switchboard.CodeTimeout, "job %s is still %s", id, j.Status)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}
