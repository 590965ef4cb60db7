#!/usr/bin/env bash
# image.sh: build rlapi's container image (deploy/container/Containerfile)
# from this checkout, with nothing to download: a static rlapi (CGO off,
# Go's time zone database built in) and the host's CA bundle are staged in
# a temporary build context beside a passwd entry for the image's user, and
# the Containerfile copies them onto an empty image.
#
#   scripts/image.sh [TAG]     TAG defaults to rlapi:<version> (git describe)
#
# Environment:
#   BUILDER   buildah, podman or docker (default: the first one found)
#   ARCHIVE   also write the image to this path as a docker-archive (what
#             docker load reads; the docker format keeps the health check,
#             which OCI's image config has no field for), for a test or a
#             transfer (buildah and podman only)
#   BUILDAH_FLAGS  extra global flags for buildah (the test passes --root,
#             --runroot and --storage-driver vfs to keep its images apart)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "image: error: $*" >&2; exit 1; }

version=${VERSION:-$(git -C "$repo" describe --tags --always --dirty 2>/dev/null || echo dev)}
tag=${1:-rlapi:$version}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -r "$ca" ] || die "no CA bundle at $ca (Debian: apt-get install ca-certificates; or set CA_BUNDLE)"

builder=${BUILDER:-}
if [ -z "$builder" ]; then
	for b in buildah podman docker; do
		if command -v "$b" >/dev/null 2>&1; then builder=$b; break; fi
	done
fi
[ -n "$builder" ] || die "no image builder: install buildah (Debian: apt-get install buildah), podman or docker"

ctx=$(mktemp -d "${TMPDIR:-/tmp}/rlapi-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
(cd "$repo" && CGO_ENABLED=0 go build -trimpath -tags timetzdata \
	-ldflags "-s -w -X github.com/rlctl/rlctl/internal/version.Version=$version" \
	-o "$ctx/rlapi" ./cmd/rlapi)
cp "$ca" "$ctx/ca-certificates.crt"
echo 'rlapi:x:65532:65532:rlapi:/nonexistent:/sbin/nologin' >"$ctx/passwd"
echo 'rlapi:x:65532:' >"$ctx/group"

file="$repo/deploy/container/Containerfile"
case "$builder" in
buildah)
	# shellcheck disable=SC2086 # BUILDAH_FLAGS is a list of flags
	buildah ${BUILDAH_FLAGS:-} bud --quiet --format docker -f "$file" -t "$tag" "$ctx" >/dev/null
	if [ -n "${ARCHIVE:-}" ]; then
		# shellcheck disable=SC2086
		buildah ${BUILDAH_FLAGS:-} push --quiet "$tag" "docker-archive:$ARCHIVE:$tag"
	fi
	;;
podman)
	podman build --quiet --format docker -f "$file" -t "$tag" "$ctx" >/dev/null
	[ -z "${ARCHIVE:-}" ] || podman save --quiet --format docker-archive -o "$ARCHIVE" "$tag"
	;;
docker)
	[ -z "${ARCHIVE:-}" ] || die "ARCHIVE needs buildah or podman"
	docker build --quiet -f "$file" -t "$tag" "$ctx" >/dev/null
	;;
*)
	die "BUILDER=$builder: want buildah, podman or docker"
	;;
esac
echo "$tag"
