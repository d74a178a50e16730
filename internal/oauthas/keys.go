package oauthas

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
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/switchboardhq/switchboard"
)

// keyRotation is how long one access-token key signs; keys stay published
// until every token they signed has expired.
const keyRotation = 7 * 24 * time.Hour

// keySkew keeps a retired key published a little longer, for verifiers
// whose clocks run late.
const keySkew = time.Minute

// keyRing holds the access-token signing keys (ES256) in the store, so
// every replica signs with and verifies against the same set.
type keyRing struct {
	store    Store
	now      func() time.Time
	lifetime time.Duration // of the access tokens the keys sign

	mu   sync.Mutex
	cur  *sigKey
	pubs map[string]*ecdsa.PublicKey // kid → key, for verification
}

type sigKey struct {
	id      string
	created time.Time
	priv    *ecdsa.PrivateKey
}

func (k *sigKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k *sigKey) Key() any                                    { return k.priv }
func (k *sigKey) ID() string                                  { return k.id }

type pubKey struct {
	id  string
	pub *ecdsa.PublicKey
}

func (k pubKey) ID() string                         { return k.id }
func (k pubKey) Algorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k pubKey) Use() string                        { return "sig" }
func (k pubKey) Key() any                           { return k.pub }

type keyData struct {
	DER []byte `json:"der"` // PKCS #8
}

// signing returns the key to sign with now: this replica's while fresh,
// else the freshest in the store (another replica's rotation), else a new
// one.
func (r *keyRing) signing(ctx context.Context) (*sigKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.signingLocked(ctx)
}

func (r *keyRing) signingLocked(ctx context.Context) (*sigKey, error) {
	now := r.now()
	if r.cur != nil && now.Before(r.cur.created.Add(keyRotation)) {
		return r.cur, nil
	}
	keys, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if now.Before(k.created.Add(keyRotation)) && !k.created.After(now) {
			r.cur = k
			return k, nil
		}
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	data, _ := json.Marshal(keyData{DER: der})
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	k := &sigKey{id: "sbat_" + hex.EncodeToString(id), created: now.UTC().Truncate(time.Microsecond), priv: priv}
	// The record expires when no token it signed can still be live.
	rec := switchboard.OAuthRecord{Kind: switchboard.OAuthKey, ID: k.id, Data: data, CreatedAt: k.created,
		ExpiresAt: k.created.Add(keyRotation + r.lifetime + keySkew)}
	if err := r.store.OAuthPut(ctx, rec); err != nil {
		return nil, fmt.Errorf("store a new access-token key: %w", err)
	}
	r.cur = k
	r.pubs[k.id] = &priv.PublicKey
	return k, nil
}

// load reads the published keys, newest first, and refreshes the
// verification cache.
func (r *keyRing) load(ctx context.Context) ([]*sigKey, error) {
	recs, err := r.store.OAuthList(ctx, switchboard.OAuthKey, "")
	if err != nil {
		return nil, fmt.Errorf("read the access-token keys: %w", err)
	}
	now := r.now()
	var out []*sigKey
	pubs := map[string]*ecdsa.PublicKey{}
	for _, rec := range recs {
		if !rec.ExpiresAt.IsZero() && now.After(rec.ExpiresAt) {
			continue
		}
		var d keyData
		if err := json.Unmarshal(rec.Data, &d); err != nil {
			return nil, fmt.Errorf("access-token key %s: %w", rec.ID, err)
		}
		k, err := x509.ParsePKCS8PrivateKey(d.DER)
		if err != nil {
			return nil, fmt.Errorf("access-token key %s: %w", rec.ID, err)
		}
		priv, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("access-token key %s is not an ECDSA key", rec.ID)
		}
		out = append(out, &sigKey{id: rec.ID, created: rec.CreatedAt, priv: priv})
		pubs[rec.ID] = &priv.PublicKey
	}
	r.pubs = pubs
	return out, nil
}

// public returns the published keys for the JWKS. It makes the signing
// key first if there is none yet, so the JWKS is never empty: a verifier
// that fetches it before the first token is issued caches a key set it
// can use.
func (r *keyRing) public(ctx context.Context) ([]op.Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.signingLocked(ctx); err != nil {
		return nil, err
	}
	keys, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]op.Key, 0, len(keys))
	for _, k := range keys {
		out = append(out, pubKey{k.id, &k.priv.PublicKey})
	}
	return out, nil
}

// VerifySignature implements go-oidc's KeySet over the ring: ES256 only,
// the key found by kid (the store is read again for a kid this replica
// has not seen: another replica's new key).
func (r *keyRing) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("the token must carry exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	r.mu.Lock()
	pub := r.pubs[kid]
	if pub == nil && kid != "" {
		if _, err := r.load(ctx); err != nil {
			r.mu.Unlock()
			return nil, err
		}
		pub = r.pubs[kid]
	}
	r.mu.Unlock()
	if pub == nil {
		return nil, fmt.Errorf("the token names an unknown key %q", kid)
	}
	return jws.Verify(pub)
}
