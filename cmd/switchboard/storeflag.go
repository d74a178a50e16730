package main

import (
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// A DSN on the command line is visible to every local user in ps and
// /proc/*/cmdline, password included. --store-file and $SWITCHBOARD_STORE
// keep it out of the process table; --store with a password still works
// but warns.

// kvPassword finds a password in a key=value DSN ("host=db password=x").
var kvPassword = regexp.MustCompile(`(^|\s)password\s*=\s*\S`)

// dsnHasPassword reports whether dsn carries a password.
func dsnHasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return true
		}
	}
	if u, err := url.Parse(dsn); err == nil && u.Query().Get("password") != "" {
		return true
	}
	return kvPassword.MatchString(dsn)
}

// readStoreFile reads a DSN from path (the whole file, trimmed), for
// --store-file: the way a secret is mounted in a container.
func readStoreFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput, "--store-file: %v", err)
	}
	dsn := strings.TrimSpace(string(b))
	if dsn == "" {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput, "--store-file %s is empty; write the postgres:// URL in it", path)
	}
	return dsn, nil
}

// storeFromFlags resolves --store, --store-file and $SWITCHBOARD_STORE:
// the two flags exclude each other; warn is set when a password was given
// on the command line.
func storeFromFlags(store, file string, storeOnCmdline bool) (dsn string, warn bool, err error) {
	if file != "" {
		if storeOnCmdline {
			return "", false, switchboard.Errorf(switchboard.CodeInvalidInput, "give --store or --store-file, not both")
		}
		dsn, err = readStoreFile(file)
		return dsn, false, err
	}
	return store, storeOnCmdline && dsnHasPassword(store), nil
}
