package main

import (
	"net"
	"testing"

	"github.com/switchboardhq/switchboard/internal/mcpserver"
)

func TestElicitationFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]mcpserver.Elicitation{"": mcpserver.ElicitURL, "url": mcpserver.ElicitURL, "form": mcpserver.ElicitForm, "off": mcpserver.ElicitOff} {
		if got, err := elicitation(in); err != nil || got != want {
			t.Errorf("elicitation(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := elicitation("yes"); err == nil {
		t.Error(`elicitation("yes") accepted`)
	}
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7766}, "http://127.0.0.1:7766/#approvals"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://127.0.0.1:8080/#approvals"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://127.0.0.1:8080/#approvals"},
	} {
		if got := consoleURL(tc.addr); got != tc.want {
			t.Errorf("consoleURL(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
