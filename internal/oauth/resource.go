package oauth

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// MetadataPath is where RFC 9728 puts a protected resource's metadata: at
// the host's root, and with the resource's path appended
// (/.well-known/oauth-protected-resource/mcp), which is the URL MCP
// clients try first and the one the 401 challenge names.
const MetadataPath = "/.well-known/oauth-protected-resource"

// DefaultScope is the OAuth scope a token needs to use /mcp at all. With
// it alone the agent may use every tool its user may; "tools:<glob>"
// scopes narrow that (see Scopes).
const DefaultScope = "mcp"

// Resource describes /mcp as a protected resource.
type Resource struct {
	// URL is the resource identifier: the absolute URL clients reach /mcp
	// at (https://app.example.com/mcp). Access tokens must name it in aud.
	URL string
	// AuthorizationServers are the issuers whose tokens the resource
	// takes; empty publishes none (admin and agent tokens only).
	AuthorizationServers []string
	// Scope is the scope /mcp requires (DefaultScope when empty).
	Scope string
}

// ParseResource validates u as the /mcp resource URL: absolute, http or
// https, no query or fragment (RFC 8707 §2).
func ParseResource(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
		return nil, fmt.Errorf("resource URL %q must be an absolute http(s) URL such as https://app.example.com/mcp", u)
	}
	if p.RawQuery != "" || p.Fragment != "" || p.User != nil {
		return nil, fmt.Errorf("resource URL %q must have no query, fragment or user info (RFC 8707)", u)
	}
	return p, nil
}

// RequiredScope is the scope /mcp requires.
func (r Resource) RequiredScope() string {
	if r.Scope == "" {
		return DefaultScope
	}
	return r.Scope
}

// MetadataURL is the path-suffixed metadata URL of the resource, the one
// a 401 names: https://host/.well-known/oauth-protected-resource/mcp.
func (r Resource) MetadataURL() string {
	p, err := ParseResource(r.URL)
	if err != nil {
		return ""
	}
	path := strings.TrimSuffix(p.EscapedPath(), "/")
	return p.Scheme + "://" + p.Host + MetadataPath + path
}

// Metadata is the RFC 9728 document.
func (r Resource) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               r.URL,
		AuthorizationServers:   r.AuthorizationServers,
		ScopesSupported:        []string{r.RequiredScope()},
		BearerMethodsSupported: []string{"header"}, // never the query: tokens stay out of URLs and logs
		ResourceName:           "switchboard",
	}
}

// Routes serves the metadata at both places RFC 9728 allows, with no
// token needed (the metadata is public: it is how a client learns where
// to get one). The patterns are for an http.ServeMux.
func (r Resource) Routes() map[string]http.Handler {
	h := auth.ProtectedResourceMetadataHandler(r.Metadata())
	routes := map[string]http.Handler{MetadataPath: h}
	if p, err := ParseResource(r.URL); err == nil {
		if path := strings.TrimSuffix(p.Path, "/"); path != "" {
			routes[MetadataPath+path] = h
		}
	}
	return routes
}
