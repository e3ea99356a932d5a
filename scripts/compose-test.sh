#!/usr/bin/env bash
# The compose stack end to end (make compose-test; docs/testing.md): builds
# the images (scripts/images.sh), brings up Debian test host 19, and runs
# deploy/compose/compose_test.go, which starts deploy/compose with
# podman-compose in a scratch directory, signs in through the proxy, joins
# the host, runs jobs on the workers of both segments, a job with one NATS
# node stopped and requests through an API replica's restart, then tears
# the stack down.
#
# Needs root, podman, runc, podman-compose, the dnsname CNI plugin
# (golang-github-containernetworking-plugin-dnsname), debootstrap when no
# base image can be pulled; scripts/test.sh installs them.
# LCM_COMPOSE_SKIP_IMAGES=1 uses the images already built.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/podman-env.sh
source scripts/podman-env.sh
start=$SECONDS
if [[ ${LCM_COMPOSE_SKIP_IMAGES:-} != 1 ]]; then
	bash scripts/images.sh
fi
echo "=== images ready after $((SECONDS - start)) s" >&2
bash deploy/testhosts/testhosts.sh up 19 >/dev/null
eval "$(bash deploy/testhosts/testhosts.sh env)"
export CI=${CI:-true}
go test -tags compose -count=1 -timeout 20m -run TestComposeStack -v ./deploy/compose/ 2>&1 | tee /tmp/lcm-compose-test.log
status=${PIPESTATUS[0]}
echo "=== compose test: exit $status after $((SECONDS - start)) s" >&2
exit "$status"
