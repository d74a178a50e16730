package httpapi

import (
	"io"
	"log"
	"net/http"
	"sync/atomic"
	"time"
)

// Connection timeouts of the daemon's HTTP server (a
// client that announces a body and never sends it, or holds thousands of
// idle keep-alive connections, must not hold the daemon's sockets).
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// BodyReadTimeout bounds reading a request's body, from the end of its
	// headers until the body's end or the response's start (ServeHTTP).
	// It is per request, not the server's ReadTimeout: that one would also
	// cut the event streams, which outlive any fixed bound.
	BodyReadTimeout = 30 * time.Second
	// IdleTimeout closes a keep-alive connection that waits this long for
	// its next request.
	IdleTimeout = 2 * time.Minute
)

// ServerOptions configures NewHTTPServer; a nil pointer means defaults.
type ServerOptions struct {
	// IdleTimeout overrides the package's IdleTimeout when positive.
	IdleTimeout time.Duration
	// ErrorLog receives the server's own errors (nil: the log package's
	// standard logger).
	ErrorLog *log.Logger
}

// NewHTTPServer returns the http.Server that serves h with the timeouts
// above. It sets no ReadTimeout or WriteTimeout: event streams (SSE) and
// long calls run as long as their own bounds allow; the body of each
// request is bounded by ServeHTTP instead (BodyReadTimeout).
func NewHTTPServer(h http.Handler, opts *ServerOptions) *http.Server {
	if opts == nil {
		opts = &ServerOptions{}
	}
	idle := opts.IdleTimeout
	if idle <= 0 {
		idle = IdleTimeout
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: idle, ErrorLog: opts.ErrorLog}
}

// bodyRead is a request body that remembers whether it was read to its
// end, and ends its read deadline then.
type bodyRead struct {
	io.ReadCloser
	eof  atomic.Bool
	done func() // ends the body's read deadline
}

func (b *bodyRead) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.eof.Swap(true) {
		b.done()
	}
	return n, err
}

// guardBody puts a read deadline on r's body (BodyReadTimeout from now,
// or timeout when positive), ended when the body is read to its end or the
// response starts (statusWriter), and returns the request to serve with
// it; nil when r has no body.
func guardBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) (*http.Request, *bodyRead) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r, nil
	}
	if timeout <= 0 {
		timeout = BodyReadTimeout
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return r, nil // not a connection with deadlines (a test recorder): nothing to guard
	}
	var once atomic.Bool
	b := &bodyRead{ReadCloser: r.Body, done: func() {
		if !once.Swap(true) {
			_ = rc.SetReadDeadline(time.Time{})
		}
	}}
	r2 := r.WithContext(r.Context()) // the server keeps its own r, and with it the real body for its cleanup
	r2.Body = b
	return r2, b
}
