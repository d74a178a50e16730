// Package assertion is how switchboard tells an app's backend who is
// acting for whom: every HTTP-binding request carries a short-lived JWT in
// the Switchboard-Assertion header, signed by the daemon, naming the user
// (sub), the agent acting for them (act.sub, RFC 8693's actor claim), the
// backend it is meant for (aud), the tool and the invocation (jti). The
// backend verifies it against the keys published at
// /.well-known/jwks.json and applies its own per-user rules; the caller's
// own token never reaches it (internal/httpbind).
//
// The signing keys (ES256) live in the store, so every replica signs with
// the same key set and publishes the same JWKS. A key signs for Rotation;
// then the next signature makes a new one, and the old key stays published
// until every assertion it signed has expired.
//
// JOSE is go-jose (github.com/go-jose/go-jose/v4): one maintained library
// for signing, key sets and verification, which golang-jwt needs a second
// JWKS library for (docs/identity.md).
package assertion

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/switchboardhq/switchboard"
)

// Header is the request header the assertion travels in.
const Header = "Switchboard-Assertion"

// Algorithm is the JWS algorithm of every assertion: ECDSA P-256 with
// SHA-256, the one every JOSE library verifies.
const Algorithm = "ES256"

// Defaults and bounds for Options.
const (
	// MaxLifetime bounds an assertion's life (exp - iat), as DESIGN pins.
	MaxLifetime = time.Minute
	// DefaultRotation is how long one key signs before the next is made.
	DefaultRotation = 24 * time.Hour
	// skew is how long past its last assertion's expiry a retired key is
	// still published, for verifiers whose clocks run late.
	skew = time.Minute
)

// Store is the part of switchboard.Store the key set lives in.
type Store interface {
	SigningKeyCreate(ctx context.Context, k switchboard.SigningKey) error
	SigningKeyList(ctx context.Context, since time.Time) ([]switchboard.SigningKey, error)
	SigningKeyDelete(ctx context.Context, before time.Time) (int, error)
}

// Options configures a Signer. Issuer is required.
type Options struct {
	// Issuer is the daemon's base URL as backends know it (the iss claim).
	Issuer string
	// Rotation is how long a key signs (default DefaultRotation).
	Rotation time.Duration
	// Lifetime is exp - iat (default and at most MaxLifetime).
	Lifetime time.Duration
	Now      func() time.Time
}

// Signer signs assertions and publishes their keys. Safe for concurrent
// use.
type Signer struct {
	store Store
	opts  Options

	mu  sync.Mutex
	cur *key // the key this replica signs with, nil until the first call
}

type key struct {
	id      string
	created time.Time
	signer  jose.Signer
}

// New returns a Signer over store.
func New(store Store, opts Options) (*Signer, error) {
	if store == nil {
		return nil, errors.New("assertion: a store is required")
	}
	if opts.Issuer == "" {
		return nil, errors.New("assertion: Options.Issuer (the daemon's base URL) is required")
	}
	if opts.Rotation <= 0 {
		opts.Rotation = DefaultRotation
	}
	if opts.Lifetime <= 0 || opts.Lifetime > MaxLifetime {
		opts.Lifetime = MaxLifetime
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Signer{store: store, opts: opts}, nil
}

// Issuer is the iss of every assertion.
func (s *Signer) Issuer() string { return s.opts.Issuer }

// Call is what one backend request is made for.
type Call struct {
	// Caller is who makes the call: sub is the user it acts for
	// (Caller.ActsFor), act.sub the caller itself when that is someone
	// else (an agent, a tab).
	Caller     switchboard.Principal
	Tool       string
	Invocation string
	// Audience is the backend the assertion is meant for (aud).
	Audience string
}

// Claims is an assertion's payload, as a backend reads it.
type Claims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Actor    *Actor `json:"act,omitempty"`
	Audience string `json:"aud"`
	ID       string `json:"jti"`
	Tool     string `json:"tool"`
	IssuedAt int64  `json:"iat"`
	Expiry   int64  `json:"exp"`
}

// Actor is RFC 8693's actor claim: who acts for the subject.
type Actor struct {
	Subject string `json:"sub"`
}

// ClaimsOf is what Sign puts in the assertion for c at now.
func (s *Signer) ClaimsOf(c Call, now time.Time) Claims {
	sub := c.Caller.ActsFor()
	cl := Claims{Issuer: s.opts.Issuer, Subject: sub, Audience: c.Audience, ID: c.Invocation, Tool: c.Tool,
		IssuedAt: now.Unix(), Expiry: now.Add(s.opts.Lifetime).Unix()}
	// A user calling for themselves has no actor; the operator's calls with
	// no recorded caller neither.
	if c.Caller.Kind != "" && c.Caller.ID != "" && c.Caller.String() != sub {
		cl.Actor = &Actor{Subject: c.Caller.String()}
	}
	return cl
}

// Sign returns the compact JWS of c's assertion.
func (s *Signer) Sign(ctx context.Context, c Call) (string, error) {
	now := s.opts.Now()
	k, err := s.key(ctx, now)
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(s.ClaimsOf(c, now))
	if err != nil {
		return "", err
	}
	jws, err := k.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign the assertion: %w", err)
	}
	return jws.CompactSerialize()
}

// key returns the key to sign with at now: this replica's while it is
// fresh, else the freshest in the store (another replica's rotation),
// else a new one.
func (s *Signer) key(ctx context.Context, now time.Time) (*key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && now.Before(s.cur.created.Add(s.opts.Rotation)) {
		return s.cur, nil
	}
	keys, err := s.store.SigningKeyList(ctx, now.Add(-s.opts.Rotation))
	if err != nil {
		return nil, fmt.Errorf("read the signing keys: %w", err)
	}
	for _, sk := range keys {
		if sk.Algorithm != Algorithm || !now.Before(sk.CreatedAt.Add(s.opts.Rotation)) || sk.CreatedAt.After(now) {
			continue
		}
		k, err := parse(sk)
		if err != nil {
			return nil, err
		}
		s.cur = k
		return k, nil
	}
	sk, err := generate(now)
	if err != nil {
		return nil, err
	}
	if err := s.store.SigningKeyCreate(ctx, sk); err != nil {
		return nil, fmt.Errorf("store a new signing key: %w", err)
	}
	// Keys whose every assertion has expired are of no use to anyone.
	if _, err := s.store.SigningKeyDelete(ctx, s.publishedSince(now)); err != nil {
		return nil, fmt.Errorf("remove retired signing keys: %w", err)
	}
	k, err := parse(sk)
	if err != nil {
		return nil, err
	}
	s.cur = k
	return k, nil
}

// publishedSince is the oldest creation time of a key still published at
// now: it signed until created+Rotation, and what it signed lives for
// Lifetime more.
func (s *Signer) publishedSince(now time.Time) time.Time {
	return now.Add(-s.opts.Rotation - s.opts.Lifetime - skew)
}

func generate(now time.Time) (switchboard.SigningKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return switchboard.SigningKey{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return switchboard.SigningKey{}, err
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id) // never fails on supported platforms
	return switchboard.SigningKey{ID: "sbk_" + hex.EncodeToString(id), Algorithm: Algorithm, Private: der,
		CreatedAt: now.UTC().Truncate(time.Microsecond)}, nil
}

func parse(sk switchboard.SigningKey) (*key, error) {
	priv, err := privateKey(sk)
	if err != nil {
		return nil, err
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256,
		Key: jose.JSONWebKey{Key: priv, KeyID: sk.ID, Algorithm: Algorithm, Use: "sig"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", sk.ID, err)
	}
	return &key{id: sk.ID, created: sk.CreatedAt, signer: sig}, nil
}

func privateKey(sk switchboard.SigningKey) (*ecdsa.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(sk.Private)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", sk.ID, err)
	}
	priv, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %s is not an ECDSA key", sk.ID)
	}
	return priv, nil
}

// JWKS returns the public keys a backend verifies assertions with: every
// key that signed or may still have live assertions, newest first.
func (s *Signer) JWKS(ctx context.Context) (jose.JSONWebKeySet, error) {
	keys, err := s.store.SigningKeyList(ctx, s.publishedSince(s.opts.Now()))
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for _, sk := range keys {
		if sk.Algorithm != Algorithm {
			continue
		}
		priv, err := privateKey(sk)
		if err != nil {
			return set, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &priv.PublicKey, KeyID: sk.ID, Algorithm: Algorithm, Use: "sig"})
	}
	return set, nil
}

// ServeHTTP answers GET /.well-known/jwks.json: public keys, no token
// needed. Verifiers may cache it briefly and fetch again on an unknown kid.
func (s *Signer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	set, err := s.JWKS(r.Context())
	if err != nil {
		http.Error(w, `{"error":{"code":"UNAVAILABLE","message":"the signing keys cannot be read now; retry"}}`, http.StatusServiceUnavailable)
		return
	}
	b, _ := json.Marshal(set)
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=60")
	_, _ = w.Write(b)
}
