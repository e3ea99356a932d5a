# Sourced by scripts/images.sh and scripts/compose-test.sh (and usable by
# hand: `source scripts/podman-env.sh`): makes podman usable on a machine
# whose hard resource limits are below the container defaults podman asks
# for (nofile 1048576), where runc fails with "error setting rlimit type
# 7: operation not permitted". It writes a containers.conf with
# default_ulimits inside the machine's limits and exports CONTAINERS_CONF,
# unless CONTAINERS_CONF is set already.
lcm_podman_env() {
	[[ -n ${CONTAINERS_CONF:-} ]] && return 0
	local hard
	hard=$(ulimit -Hn)
	if [[ $hard == unlimited ]] || ((hard >= 1048576)); then
		return 0
	fi
	local nofile=$((hard < 65536 ? hard : 65536))
	local dir=${XDG_RUNTIME_DIR:-/tmp}/lcm-podman
	mkdir -p "$dir"
	# nproc counts the processes of a uid across all containers: 4096 is
	# plenty for LCM's (every image runs as 65532), and within what runc
	# may set here.
	cat >"$dir/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=4096:4096"]
CONF
	export CONTAINERS_CONF=$dir/containers.conf
}
lcm_podman_env
