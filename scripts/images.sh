#!/usr/bin/env bash
# Builds LCM's container images with podman:
#
#   localhost/lcm/lcm-api, lcm-worker, lcm-scanner, lcm-agentgw, lcm-nats
#       from ./Containerfile (one build stage, one image per process)
#   localhost/lcm/lcm-postgres, lcm-proxy
#       the compose stack's PostgreSQL 15 and nginx, from Debian packages
#       (deploy/compose/images/*)
#
# each tagged with the version (VERSION) and "latest". `make images` builds
# the web UI first; run alone, this script builds it when web/dist is empty.
#
# Base images (build arguments of the Containerfiles):
#   LCM_BUILDER_IMAGE  default docker.io/library/golang:1.26-bookworm
#   LCM_RUNTIME_IMAGE  default docker.io/library/debian:bookworm-slim
# When a default base is neither present nor pullable (no access to
# docker.io), a local one is made once instead:
#   localhost/lcm-base/debian:bookworm   debootstrap --variant=minbase
#       --include=ca-certificates bookworm, rootfs cached in LCM_IMAGES_CACHE
#       (default /var/cache/lcm-images), imported with `podman import`
#   localhost/lcm-base/golang:<go version>   the same rootfs plus this
#       machine's Go toolchain (go env GOROOT)
# debootstrap needs root.
#
# Other environment:
#   LCM_IMAGE_TAG        tag besides "latest" (default: the content of VERSION)
#   LCM_IMAGES_OFFLINE=1 do not try to pull the default bases
#   LCM_IMAGES           the images to build (default: all seven)
#   LCM_DEBIAN_MIRROR    mirror for debootstrap (default: this machine's)
# The host's Go module and build caches are mounted into the build stage, and
# its GOPROXY/GOSUMDB passed, so a rebuild after `make build` only links.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=scripts/podman-env.sh
source scripts/podman-env.sh

log() { printf '=== %s\n' "$*" >&2; }
die() { printf 'images.sh: %s\n' "$*" >&2; exit 1; }

command -v podman >/dev/null || die "podman is not installed (apt-get install podman runc)"
tag=${LCM_IMAGE_TAG:-$(cat VERSION)}
builder=${LCM_BUILDER_IMAGE:-docker.io/library/golang:1.26-bookworm}
runtime=${LCM_RUNTIME_IMAGE:-docker.io/library/debian:bookworm-slim}
cache=${LCM_IMAGES_CACHE:-/var/cache/lcm-images}
all="lcm-api lcm-worker lcm-scanner lcm-agentgw lcm-nats lcm-postgres lcm-proxy"
want=${LCM_IMAGES:-$all}

# available IMAGE: present locally, or pulled now (bounded: a registry that
# cannot be reached must not hang the build).
available() {
	podman image exists "$1" && return 0
	[[ ${LCM_IMAGES_OFFLINE:-} == 1 ]] && return 1
	log "pulling $1"
	timeout 120 podman pull -q "$1" >/dev/null 2>&1
}

mirror() {
	if [[ -n ${LCM_DEBIAN_MIRROR:-} ]]; then
		echo "$LCM_DEBIAN_MIRROR"
		return
	fi
	local m
	m=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	echo "${m:-http://deb.debian.org/debian}"
}

# minbase: the cached debootstrap rootfs (built once).
minbase() {
	local dir=$cache/bookworm-minbase
	if [[ ! -f $dir/.lcm-complete ]]; then
		[[ $(id -u) -eq 0 ]] || die "making the local base image needs root (debootstrap); or set LCM_RUNTIME_IMAGE/LCM_BUILDER_IMAGE to images you have"
		command -v debootstrap >/dev/null || die "debootstrap is not installed"
		log "debootstrap --variant=minbase bookworm into $dir (once, ~1 min)"
		rm -rf "$dir" "$dir.tmp"
		mkdir -p "$cache"
		debootstrap --variant=minbase --include=ca-certificates bookworm "$dir.tmp" "$(mirror)" >"$cache/debootstrap.log" 2>&1 ||
			die "debootstrap failed, see $cache/debootstrap.log"
		# This machine's apt sources (security updates included) for the
		# images that install packages; no package lists or caches inside.
		if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
			cp /etc/apt/sources.list.d/debian.sources "$dir.tmp/etc/apt/sources.list.d/"
			rm -f "$dir.tmp/etc/apt/sources.list"
		fi
		rm -rf "$dir.tmp"/var/lib/apt/lists/* "$dir.tmp"/var/cache/apt/*.bin "$dir.tmp"/var/cache/apt/archives/*.deb \
			"$dir.tmp"/var/log/* "$dir.tmp"/usr/share/doc/* "$dir.tmp"/usr/share/man/*/* "$dir.tmp"/usr/share/info/*
		touch "$dir.tmp/.lcm-complete"
		mv "$dir.tmp" "$dir"
	fi
	echo "$dir"
}

local_runtime() {
	local img=localhost/lcm-base/debian:bookworm
	if ! podman image exists "$img"; then
		local dir
		dir=$(minbase)
		log "importing $dir as $img"
		tar -C "$dir" --exclude=./.lcm-complete -c . | podman import -q \
			--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'CMD ["/bin/bash"]' - "$img" >/dev/null
	fi
	echo "$img"
}

local_builder() {
	local goroot gover img
	goroot=$(go env GOROOT) || die "no Go toolchain on this machine for the local builder image"
	gover=$(go env GOVERSION)
	img=localhost/lcm-base/golang:${gover#go}
	if ! podman image exists "$img"; then
		local dir
		dir=$(minbase)
		log "importing $dir plus $goroot as $img"
		tar -c -C "$dir" --exclude=./.lcm-complete . -C / "${goroot#/}" | podman import -q \
			--change "ENV PATH=$goroot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
			--change 'ENV GOTOOLCHAIN=local' --change 'CMD ["/bin/bash"]' - "$img" >/dev/null
	fi
	echo "$img"
}

if ! available "$builder"; then
	log "$builder cannot be pulled: using a local builder base"
	builder=$(local_builder)
fi
if ! available "$runtime"; then
	log "$runtime cannot be pulled: using a local runtime base"
	runtime=$(local_runtime)
fi
log "bases: builder $builder, runtime $runtime"

if [[ ! -f web/dist/index.html ]]; then
	log "web/dist is empty: make web"
	make -s web
fi

args=(--network host --layers
	--build-arg "BUILDER_IMAGE=$builder" --build-arg "RUNTIME_IMAGE=$runtime"
	--build-arg "GOPROXY=$(go env GOPROXY 2>/dev/null || echo https://proxy.golang.org,direct)"
	--build-arg "GOSUMDB=$(go env GOSUMDB 2>/dev/null || echo sum.golang.org)"
	--build-arg "LDFLAGS=$(make -s print-ldflags)")
# The host's module and build caches: the build stage finds what `make
# build` compiled (same flags, -trimpath) and downloads nothing twice.
if command -v go >/dev/null; then
	modcache=$(go env GOMODCACHE) gocache=$(go env GOCACHE)
	mkdir -p "$modcache" "$gocache"
	args+=(--volume "$modcache:/go/pkg/mod" --volume "$gocache:/root/.cache/go-build")
fi
# The CAs this machine trusts, for the build only (a TLS-intercepting proxy
# in front of the module proxy); the images keep their base's CAs.
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
	args+=(--volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
fi

logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
build() { # image, containerfile, context, extra args...
	local image=$1 file=$2 ctx=$3
	shift 3
	local start=$SECONDS
	if ! podman build "${args[@]}" "$@" -f "$file" -t "localhost/lcm/$image:$tag" -t "localhost/lcm/$image:latest" "$ctx" >"$logdir/$image.log" 2>&1; then
		tail -n 40 "$logdir/$image.log" >&2
		die "building $image failed"
	fi
	log "built localhost/lcm/$image:$tag ($((SECONDS - start)) s)"
}

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for image in $want; do
	case $image in
	lcm-api | lcm-worker | lcm-scanner | lcm-agentgw | lcm-nats)
		build "$image" Containerfile "$root" --target "$image" ;;
	lcm-postgres) build "$image" deploy/compose/images/postgres/Containerfile deploy/compose/images/postgres ;;
	lcm-proxy) build "$image" deploy/compose/images/proxy/Containerfile deploy/compose/images/proxy ;;
	*) die "unknown image $image (images: $all)" ;;
	esac
done
# The previous builds' images and build stages that no tag holds any more
# (every build links new release metadata into them): gone, so repeated
# builds do not fill the disk. This build's stages stay as its cache.
podman image prune -f --filter label=org.lcmproject.lcm.images=1 --filter "until=$started" >/dev/null 2>&1 || true
podman images --filter reference='localhost/lcm/*' --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep ":$tag " >&2 || true
