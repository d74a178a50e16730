#!/usr/bin/env bash
# Builds switchboard's OCI image with ko (no Docker daemon, no Dockerfile),
# then smoke-tests the binary inside the image: `version`, and `serve
# --demo` answering /healthz, /readyz, the console, the SDK and the demo
# page, and stopping cleanly on SIGTERM. CI runs it (.ci/run).
#
# ko publishes to a registry. With SWITCHBOARD_IMAGE_REPO unset the script
# starts go-containerregistry's own in-memory registry on loopback (`crane
# registry serve`) and publishes there; the image is also written as an OCI
# tarball (OUT, default ./out/switchboard-image.tar) that `docker load` or
# `podman load` reads. The base image is SWITCHBOARD_BASE_IMAGE when set
# (e.g. cgr.dev/chainguard/static, ko's default); otherwise, because CI here
# reaches no public registry, a minimal base is assembled from this
# machine's CA bundle: /etc/passwd and /etc/group with `nonroot` (65532),
# its home, /tmp and /etc/ssl/certs/ca-certificates.crt — nothing else (no
# shell, no libc: the binary is static, pure-Go SQLite).
#
#   scripts/image.sh                                   # build locally + smoke test
#   SWITCHBOARD_IMAGE_REPO=ghcr.io/acme/switchboard \
#     SWITCHBOARD_BASE_IMAGE=cgr.dev/chainguard/static scripts/image.sh   # publish
set -euo pipefail
cd "$(dirname "$0")/.."

KO_VERSION=v0.19.1
CRANE_VERSION=v0.21.7
TOOLS="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}/image-tools"
OUT="${OUT:-$PWD/out/switchboard-image.tar}"
log() { printf '== %s\n' "$*" >&2; }

# The builders, pinned, from the Go module proxy.
for tool in "github.com/google/ko@$KO_VERSION" "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"; do
  bin="$TOOLS/$(basename "${tool%@*}")-${tool#*@}"
  if [ ! -x "$bin/$(basename "${tool%@*}")" ]; then
    log "installing $tool"
    GOBIN="$bin" go install "$tool"
  fi
done
KO="$TOOLS/ko-$KO_VERSION/ko"
CRANE="$TOOLS/crane-$CRANE_VERSION/crane"

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

REPO="${SWITCHBOARD_IMAGE_REPO:-}"
if [ -z "$REPO" ]; then
  "$CRANE" registry serve --address 127.0.0.1:0 2>"$WORK/registry.log" &
  PIDS+=($!)
  for _ in $(seq 1 50); do
    port="$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$WORK/registry.log")"
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "${port:-}" ] || { cat "$WORK/registry.log" >&2; log "the local registry did not start"; exit 1; }
  REPO="127.0.0.1:$port/switchboard"
  log "publishing to the local registry $REPO"
fi

BASE="${SWITCHBOARD_BASE_IMAGE:-}"
if [ -z "$BASE" ]; then
  ca=/etc/ssl/certs/ca-certificates.crt
  [ -f "$ca" ] || { log "no CA bundle at $ca (apt-get install ca-certificates), or set SWITCHBOARD_BASE_IMAGE"; exit 1; }
  root="$WORK/base"
  mkdir -p "$root/etc/ssl/certs" "$root/home/nonroot" "$root/tmp"
  cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
  chmod 1777 "$root/tmp"
  # Numeric owners, fixed times: the same inputs give the same layer.
  tar --sort=name --mtime=@0 --numeric-owner --owner=0 --group=0 -C "$root" -cf "$WORK/base.tar" etc tmp
  tar --mtime=@0 --numeric-owner --owner=65532 --group=65532 -C "$root" -rf "$WORK/base.tar" home
  BASE="${REPO%/*}/switchboard-base:latest"
  "$CRANE" append --platform linux/amd64 -f "$WORK/base.tar" -t "$BASE" >/dev/null
  log "base image $BASE assembled from this machine's CA bundle"
fi

mkdir -p "$(dirname "$OUT")"
log "ko build ./cmd/switchboard"
ref="$(KO_DOCKER_REPO="$REPO" KO_DEFAULTBASEIMAGE="$BASE" "$KO" build --bare --platform=linux/amd64 \
  --sbom=none --image-user=65532 --image-label=org.opencontainers.image.source=https://github.com/switchboardhq/switchboard \
  ./cmd/switchboard)"
log "built $ref"
"$CRANE" pull --format=tarball "$ref" "$OUT"
log "wrote $OUT"

# The image's config: the entrypoint and the unprivileged user.
cfg="$("$CRANE" config "$ref")"
echo "$cfg" | grep -q '"User":"65532"' || { echo "$cfg" >&2; log "the image does not run as 65532"; exit 1; }
echo "$cfg" | grep -q '"Entrypoint":\["/ko-app/switchboard"\]' || { echo "$cfg" >&2; log "unexpected entrypoint"; exit 1; }

# The binary as the image holds it, run as the container would run it.
mkdir -p "$WORK/rootfs"
"$CRANE" export "$ref" - | tar -x -C "$WORK/rootfs"
bin="$WORK/rootfs/ko-app/switchboard"
[ -x "$bin" ] || { log "no /ko-app/switchboard in the image"; exit 1; }
"$bin" version
addr="127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
SWITCHBOARD_DATA="$WORK/data" "$bin" serve --demo --addr "$addr" >"$WORK/serve.log" 2>&1 &
serve=$!
PIDS+=($serve)
for _ in $(seq 1 100); do
  curl -fsS "http://$addr/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
for path in /healthz /readyz / /sdk/switchboard.js; do
  curl -fsS -o /dev/null "http://$addr$path" || { cat "$WORK/serve.log" >&2; log "GET $path failed"; exit 1; }
done
demo="$(grep -o "http://$addr/demo/[^ \"]*" "$WORK/serve.log" | head -n1)"
[ -n "$demo" ] || { cat "$WORK/serve.log" >&2; log "serve --demo printed no demo URL"; exit 1; }
curl -fsS "$demo" | grep -q '<title>' || { log "the demo page did not load"; exit 1; }
kill -TERM "$serve"
if ! wait "$serve"; then
  cat "$WORK/serve.log" >&2
  log "serve did not stop cleanly on SIGTERM"
  exit 1
fi
log "image smoke test passed: $ref"
