package oauthas

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

const grantPrefix = "sbg_"

// Grant is a user's consent to one client, as the API lists it. Its
// tokens are good while it is not revoked.
type Grant struct {
	ID           string    `json:"id"`
	User         string    `json:"user"`
	Client       string    `json:"client"`
	ClientName   string    `json:"clientName"`
	Agent        string    `json:"agent"`
	RedirectHost string    `json:"redirectHost"`
	Scopes       []string  `json:"scopes"`
	CreatedAt    time.Time `json:"createdAt"`
	RevokedAt    time.Time `json:"revokedAt,omitzero"`
}

type grantData struct {
	ClientName   string   `json:"clientName"`
	Agent        string   `json:"agent"`
	RedirectHost string   `json:"redirectHost"`
	Scopes       []string `json:"scopes"`
}

type grant = Grant

func grantOfRecord(rec switchboard.OAuthRecord) Grant {
	var d grantData
	_ = json.Unmarshal(rec.Data, &d)
	return Grant{ID: rec.ID, User: rec.User, Client: rec.Client, ClientName: d.ClientName, Agent: d.Agent,
		RedirectHost: d.RedirectHost, Scopes: d.Scopes, CreatedAt: rec.CreatedAt, RevokedAt: rec.RevokedAt}
}

// errGrantEnded is why a token's grant is not good: it names none, it is
// unknown, or it was revoked.
var errGrantEnded = errors.New("the grant ended")

// grantEnded is an error matching errGrantEnded with its own message.
type grantEnded struct{ msg string }

func (e grantEnded) Error() string        { return e.msg }
func (e grantEnded) Is(target error) bool { return target == errGrantEnded }

// liveGrant returns the grant or why it is not good.
func (s *Server) liveGrant(ctx context.Context, id string) (Grant, error) {
	if !strings.HasPrefix(id, grantPrefix) {
		return Grant{}, grantEnded{"the token names no grant"}
	}
	rec, err := s.store.OAuthGet(ctx, switchboard.OAuthGrant, id)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		return Grant{}, grantEnded{fmt.Sprintf("the grant %s does not exist; authorize again", id)}
	}
	if err != nil {
		return Grant{}, err
	}
	if !rec.RevokedAt.IsZero() {
		return Grant{}, grantEnded{fmt.Sprintf("the grant %s was revoked at %s; authorize again", id, rec.RevokedAt.UTC().Format(time.RFC3339))}
	}
	return grantOfRecord(rec), nil
}

// CheckToken is oauth.VerifierOptions.Check for this server's access
// tokens: the grant named by the jti must be live and match the token's
// client and user. It reads the store on every call, so a revocation
// stops the very next call on every replica, not after the token's 15
// minutes.
func (s *Server) CheckToken(ctx context.Context, claims map[string]any) error {
	jti, _ := claims["jti"].(string)
	id, _, _ := strings.Cut(jti, ".")
	g, err := s.liveGrant(ctx, id)
	if err != nil {
		return err
	}
	if c, _ := claims["client_id"].(string); c != g.Client {
		return fmt.Errorf("the token's client %q is not its grant's", c)
	}
	if u, _ := claims["sub"].(string); u != g.User {
		return fmt.Errorf("the token's subject %q is not its grant's user", u)
	}
	return nil
}

// Grants lists the grants user gave (every user's when user is ""),
// newest first, revoked ones included.
func (s *Server) Grants(ctx context.Context, user string) ([]Grant, error) {
	recs, err := s.store.OAuthList(ctx, switchboard.OAuthGrant, user)
	if err != nil {
		return nil, err
	}
	out := make([]Grant, 0, len(recs))
	for _, r := range recs {
		out = append(out, grantOfRecord(r))
	}
	return out, nil
}

// Revoke revokes a grant. user, when not "", must be the grant's: another
// user's grant is NOT_FOUND, as an unknown id, so ids cannot be probed.
// The ledger says who: the user, or the operator when user is "".
func (s *Server) Revoke(ctx context.Context, id, user string) (Grant, error) {
	rec, err := s.store.OAuthGet(ctx, switchboard.OAuthGrant, id)
	if err != nil || (user != "" && rec.User != user) {
		if err == nil || switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return Grant{}, switchboard.Errorf(switchboard.CodeNotFound, "no OAuth grant %q", id)
		}
		return Grant{}, err
	}
	rec, fresh, err := s.revokeGrant(ctx, id)
	if err != nil {
		return Grant{}, err
	}
	if !fresh {
		return grantOfRecord(rec), nil // revoked already: the first revocation stands, recorded once
	}
	s.log.InfoContext(ctx, "OAuth grant revoked", "grant", id, "user", rec.User, "client", rec.Client)
	actor := cmp.Or(user, switchboard.Operator)
	s.record(ctx, actor, "oauth.revoke", grantOfRecord(rec), map[string]any{"override": actor != rec.User})
	return grantOfRecord(rec), nil
}
