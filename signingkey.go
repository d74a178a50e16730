package switchboard

import "time"

// SigningKey is a key switchboard signs with for others: the assertion
// every HTTP-binding request carries (package assertion). Keys live in the
// store so that every replica signs with the same key set and publishes
// the same JWKS (GET /.well-known/jwks.json). Private is the PKCS #8 DER of
// the private key; it never leaves the daemon (never serialized).
type SigningKey struct {
	ID        string    `json:"kid"`
	Algorithm string    `json:"alg"`
	Private   []byte    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
}
