#!/usr/bin/env bash
# The whole LCM test suite on a fresh Debian machine: installs what the tests
# need (as root), brings up the Debian test hosts, builds the binaries with
# release metadata, runs the Go tests against SQLite and PostgreSQL, real
# NATS, real sshd, and the browser tests in Debian's chromium.
#
# Environment: CI=true makes every missing dependency a failure (never a skip).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

log() { printf '\n=== %s ===\n' "$*"; }

# Debian packages the tests use: sshd for test hosts, debootstrap to build
# them, ffmpeg/espeak-ng/pocketsphinx for speech, dig/named-checkzone for
# DNS, an SMTP sink, chromium for the UI, ansible for the comparison bench,
# systemd-analyze to verify the agent's unit, python3-paho-mqtt for the
# hostile MQTT client battery against the agent gateway, podman with
# podman-compose and the dnsname CNI plugin for the compose stack,
# nats-server for the three-node cluster and two-replica tests, rpm for the RPM
# version-ordering property test.
packages=(openssh-server openssh-client sudo debootstrap debian-archive-keyring util-linux iproute2 procps
  ffmpeg espeak-ng pocketsphinx pocketsphinx-en-us dnsutils bind9-utils python3-aiosmtpd chromium ansible
  docker-registry skopeo podman runc buildah podman-compose golang-github-containernetworking-plugin-dnsname
  systemd python3-paho-mqtt nats-server openssl rpm nginx)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "need root to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The machine's own sshd must not take 0.0.0.0:22 from the test hosts.
if pgrep -x sshd >/dev/null && ss -ltn | grep -qE '(0\.0\.0\.0|\*):22 '; then
  log "stopping the machine's sshd (it listens on 0.0.0.0:22, which the test hosts need)"
  pkill -x sshd || true
fi

log "Debian test hosts"
bash deploy/testhosts/testhosts.sh up 15
# Host 16 runs in its own network namespace (198.18.16.2): the firewall
# tests (internal/firewall) switch ufw and nftables on there.
bash deploy/testhosts/testhosts.sh up-netns 16
# Host 17: internal/actions' socket-activated sshd and stopped-firewalld
# tests; host 18: the rescan e2e of cmd/api; host 20: the fault suite's
# secret scan (internal/faults); 16 keeps its namespace.
bash deploy/testhosts/testhosts.sh up 20
eval "$(bash deploy/testhosts/testhosts.sh env)"

log "build"
make -s build
export LCM_API_BIN="$root/bin/lcm-api"

export LCM_TEST_POSTGRES_URL=${LCM_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
export LCM_TEST_NATS_URL=${LCM_TEST_NATS_URL:-nats://127.0.0.1:4222}

log "go vet + gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n $unformatted ]]; then echo "gofmt needed: $unformatted" >&2; exit 1; fi
go vet ./...

log "go test"
# -p 2: the machine has 2 cores; the e2e tests start real processes.
go test -p 2 -count=1 -timeout 20m ./... 2>&1 | tee /tmp/lcm-go-test.log
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then exit "$status"; fi

log "fuzz targets, briefly"
bash scripts/fuzz.sh 3000x

log "fault suite, short (make faults runs the full sizes)"
bash scripts/faults.sh short

if [[ -f web/package.json ]]; then
  log "svelte-check"
  (cd web && npm run -s check)
  log "browser tests"
  (cd web && npm run test:e2e)
fi

log "compose stack (images, podman-compose, test host 19)"
bash scripts/compose-test.sh
