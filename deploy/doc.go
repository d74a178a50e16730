// Package deploy holds the deployment recipes (Dockerfile, compose file,
// systemd unit; see docs/deploy.md) and the tests that run their topology
// — several `switchboard serve` replicas on one Postgres behind a
// round-robin load balancer — as plain processes, where the machine has
// no container runtime. It has no Go API.
package deploy
