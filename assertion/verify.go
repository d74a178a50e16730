package assertion

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// MaxTokenBytes bounds an assertion a verifier reads; a real one is under
// 1 KiB.
const MaxTokenBytes = 8 << 10

// Expected is what a backend requires of an assertion.
type Expected struct {
	// Issuer is the daemon's base URL (iss).
	Issuer string
	// Audience is the backend itself (aud): its binding's audience, by
	// default the origin of the URL the daemon calls it at.
	Audience string
	// Now is the verifier's clock; zero means time.Now.
	Now time.Time
	// Leeway tolerates clock skew on iat and exp (default 5 s).
	Leeway time.Duration
}

// Verify checks an assertion as a backend must (docs/identity.md): an
// ES256 signature by a key of keys (the daemon's JWKS, matched by kid),
// the issuer, the audience, not expired, not issued in the future, a life
// of at most MaxLifetime, and a user subject. Any failure is an error that
// says which; the backend answers 401.
func Verify(token string, keys jose.JSONWebKeySet, want Expected) (Claims, error) {
	if token == "" {
		return Claims{}, errors.New("no " + Header + " header")
	}
	if len(token) > MaxTokenBytes {
		return Claims{}, fmt.Errorf("the assertion is longer than %d bytes", MaxTokenBytes)
	}
	jws, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return Claims{}, fmt.Errorf("the assertion is not an ES256 JWS: %w", err)
	}
	payload, err := jws.Verify(keys)
	if err != nil {
		return Claims{}, fmt.Errorf("the assertion's signature does not verify with the daemon's keys: %w", err)
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Claims{}, fmt.Errorf("the assertion's claims are not JSON: %w", err)
	}
	now, leeway := want.Now, want.Leeway
	if now.IsZero() {
		now = time.Now()
	}
	if leeway <= 0 {
		leeway = 5 * time.Second
	}
	switch {
	case c.Issuer != want.Issuer:
		return c, fmt.Errorf("the assertion's issuer is %q, not %q", c.Issuer, want.Issuer)
	case c.Audience != want.Audience:
		return c, fmt.Errorf("the assertion is meant for %q, not %q", c.Audience, want.Audience)
	case !now.Before(time.Unix(c.Expiry, 0).Add(leeway)):
		return c, fmt.Errorf("the assertion expired at %s", time.Unix(c.Expiry, 0).UTC().Format(time.RFC3339))
	case time.Unix(c.IssuedAt, 0).After(now.Add(leeway)):
		return c, errors.New("the assertion was issued in the future")
	case c.Expiry-c.IssuedAt > int64(MaxLifetime/time.Second):
		return c, fmt.Errorf("the assertion lives %d s, more than %d s", c.Expiry-c.IssuedAt, int64(MaxLifetime/time.Second))
	case !strings.HasPrefix(c.Subject, "user:") || len(c.Subject) == len("user:"):
		return c, fmt.Errorf("the assertion's subject %q is not a user", c.Subject)
	}
	return c, nil
}
