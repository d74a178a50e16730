package daemon

import (
	"context"
	"time"

	"github.com/switchboardhq/switchboard/assertion"
	"github.com/switchboardhq/switchboard/internal/broker"
)

// DefaultIssuer is the iss of backend assertions when AssertionOptions
// names none: the daemon's base URL at its default address.
const DefaultIssuer = "http://127.0.0.1:7766"

// AssertionOptions tune the assertion every HTTP-binding request carries
// (package assertion, docs/identity.md).
type AssertionOptions struct {
	// Issuer is the daemon's base URL as backends know it (iss); serve
	// sets it from the address it listens on. Default DefaultIssuer.
	Issuer string
	// Rotation is how long one signing key signs (default
	// assertion.DefaultRotation).
	Rotation time.Duration
}

// startAssertions builds the signer over the store's shared key set and
// hands it to the broker's HTTP bindings.
func (d *Daemon) startAssertions(opts Options, bo *broker.Options) error {
	o := opts.Assertion
	if o.Issuer == "" {
		o.Issuer = DefaultIssuer
	}
	s, err := assertion.New(opts.Store, assertion.Options{Issuer: o.Issuer, Rotation: o.Rotation})
	if err != nil {
		return err
	}
	d.Assertions = s
	bo.Assert = func(ctx context.Context, c broker.AssertedCall) (string, error) {
		return s.Sign(ctx, assertion.Call(c))
	}
	return nil
}
