package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// OAuthGrant is a user's approval of one OAuth client on the embedded
// authorization server (docs/oauth.md, "Mode 2"); its tokens work while
// it is not revoked.
type OAuthGrant struct {
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

// OAuthGrants lists grants, newest first: with the admin token every
// user's (or user's alone when not ""), with a tab's session token its
// user's.
func (c *Client) OAuthGrants(ctx context.Context, user string) ([]OAuthGrant, error) {
	var out struct {
		Items []OAuthGrant `json:"items"`
	}
	path := "/api/v1/oauth/grants"
	if user != "" {
		path += "?user=" + url.QueryEscape(user)
	}
	err := c.Do(ctx, http.MethodGet, path, nil, &out)
	return out.Items, err
}

// RevokeOAuthGrant revokes a grant: its tokens stop at their next call.
func (c *Client) RevokeOAuthGrant(ctx context.Context, id string) (OAuthGrant, error) {
	var g OAuthGrant
	err := c.Do(ctx, http.MethodDelete, "/api/v1/oauth/grants/"+pathEscape(id), nil, &g)
	return g, err
}
