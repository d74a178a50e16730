// Package e2e holds end-to-end tests that drive the daemon's demo app and
// browser SDK in real headless Chromium (Debian's chromium package at
// /usr/bin/chromium, which .ci/run installs). The tests skip, saying why,
// only when that executable is missing.
package e2e
