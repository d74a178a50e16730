package switchboard

import "time"

// OAuthRecord is one piece of the embedded OAuth authorization server's
// state (internal/oauthas), kept in the store so that every replica sees
// it: a sign-in in progress, a one-time ticket or code, a user's grant to
// a client, a refresh token, a registered client, a token-signing key.
// Secrets (codes, tickets, refresh tokens) are stored only as hashes: the
// ID of such a record is the hash.
type OAuthRecord struct {
	// Kind is what the record is (OAuthGrant, OAuthRequest, ...).
	Kind string `json:"kind"`
	// ID identifies it within its kind.
	ID string `json:"id"`
	// Ref is the record it belongs to: a code's or ticket's request, a
	// refresh token's grant.
	Ref string `json:"ref,omitempty"`
	// User is the user it was made for ("user:alice"), when it has one.
	User string `json:"user,omitempty"`
	// Client is the OAuth client id, when it has one.
	Client string `json:"client,omitempty"`
	// Data is the kind's own JSON document.
	Data []byte `json:"-"`
	// CreatedAt is set by the store when zero.
	CreatedAt time.Time `json:"createdAt"`
	// ExpiresAt, when set, is when the record stops being good.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// UsedAt is when a one-time record was used (OAuthUse).
	UsedAt time.Time `json:"usedAt,omitzero"`
	// RevokedAt is when a grant was revoked.
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// Kinds of OAuthRecord.
const (
	OAuthRequest = "request" // an authorization request, until its code is used
	OAuthTicket  = "ticket"  // the one-time consent ticket the host's sign-in gets
	OAuthCode    = "code"    // an authorization code
	OAuthGrant   = "grant"   // a user's consent to a client: its tokens live while it does
	OAuthRefresh = "refresh" // a refresh token, used once (rotation)
	OAuthClient  = "client"  // a dynamically registered client
	OAuthKey     = "key"     // an access-token signing key (Data: PKCS #8 DER)
)
