#!/usr/bin/env bash
# A Docker engine for the compose and testcontainers stages (scripts/compose-stage.sh,
# scripts/testcontainers-stage.sh), on a machine that may have none.
#
#   eval "$(bash scripts/docker-engine.sh start)"   # prints export lines: DOCKER_HOST, DOCKER_CONFIG,
#                                                    # TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
#   ...                                              # docker, docker compose, docker buildx
#   bash scripts/docker-engine.sh stop               # stops what start started, if anything
#
# start uses the engine that answers (DOCKER_HOST, or the default socket) when there
# is one. Otherwise it starts Debian's docker.io (installed with apt-get when
# dockerd is missing) by hand, without systemd: dockerd with its own data root
# (kept in the cache below, so images and build caches survive the run), exec
# root, pidfile, Unix socket and bridge, and with no iptables rules, so that it
# neither touches the machine's firewall nor masquerades containers' traffic
# out of the machine (a published port is served by docker-proxy on
# 127.0.0.1). Then it makes sure
# the CLI has the plugins the stages need, Compose v2+ and buildx >= 0.17
# (compose builds through buildx bake); where they are missing it builds them
# from their Go modules at the versions pinned below into the cache, and points
# DOCKER_CONFIG at a directory holding them.
#
# Every one-time part (the plugins, the data root with its images) is kept in
# PAYMENTS_OUTBOX_CI_CACHE (default /var/cache/payments-outbox-ci); deleting it
# costs only time. One engine runs from that cache at a time: a second start
# waits for the first one's stop.
set -euo pipefail

cache="${PAYMENTS_OUTBOX_CI_CACHE:-/var/cache/payments-outbox-ci}"
run="${PAYMENTS_OUTBOX_CI_RUN:-/run/payments-outbox-ci}" # short: socket paths are limited to 107 bytes
# The engine's own bridge and the pool its networks come from: away from
# Docker's defaults (172.17.0.0/16 and up), which another engine on the
# machine may be using.
bridge=pocibr0
bridge_cidr=10.213.0.1/24
address_pool=10.213.16.0/20

# The plugins' pinned versions: Compose v5 builds through buildx >= 0.17.
compose_module=github.com/docker/compose/v5
compose_version=v5.6.0
buildx_module=github.com/docker/buildx
buildx_version=v0.38.2

log() { echo "docker-engine: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# build_plugin MODULE VERSION PACKAGE LDFLAGS OUT builds a CLI plugin from its
# Go module, in the module's own directory (so its go.mod and go.sum decide
# every dependency), once per version.
build_plugin() {
	local module=$1 version=$2 pkg=$3 ldflags=$4 out=$5 dir
	[ -x "$out" ] && return 0
	log "building $module@$version (once; kept in $(dirname "$out"))"
	dir=$(GOFLAGS=-mod=mod GOWORK=off go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[ -d "$dir" ] || die "go mod download $module@$version gave no directory"
	mkdir -p "$(dirname "$out")"
	(cd "$dir" && CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
		go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg") || die "building $module@$version failed"
	mv "$out.tmp" "$out"
}

# version_at_least HAVE WANT: HAVE (v1.2.3 or 1.2.3) is WANT or newer.
version_at_least() {
	[ "$(printf '%s\n%s\n' "${2#v}" "${1#v}" | sort -V | head -1)" = "${2#v}" ]
}

# plugins prints the export line that gives the CLI Compose and buildx, building
# them when the CLI lacks them.
plugins() {
	local have_compose have_buildx
	have_compose=$(docker compose version --short 2>/dev/null || true)
	have_buildx=$(docker buildx version 2>/dev/null | awk '{print $2}' || true)
	if [ -n "$have_compose" ] && version_at_least "$have_compose" 2.0.0 &&
		[ -n "$have_buildx" ] && version_at_least "$have_buildx" 0.17.0; then
		log "using the CLI's compose $have_compose and buildx $have_buildx"
		return
	fi
	local plugin_dir="$cache/plugins"
	build_plugin "$compose_module" "$compose_version" ./cmd \
		"-X $compose_module/internal.Version=$compose_version" \
		"$plugin_dir/compose-$compose_version/docker-compose" &
	local compose_pid=$!
	build_plugin "$buildx_module" "$buildx_version" ./cmd/buildx \
		"-X $buildx_module/version.Version=$buildx_version -X $buildx_module/version.Package=$buildx_module" \
		"$plugin_dir/buildx-$buildx_version/docker-buildx"
	wait "$compose_pid"
	local config="$cache/docker-config"
	mkdir -p "$config/cli-plugins"
	ln -sfn "$plugin_dir/compose-$compose_version/docker-compose" "$config/cli-plugins/docker-compose"
	ln -sfn "$plugin_dir/buildx-$buildx_version/docker-buildx" "$config/cli-plugins/docker-buildx"
	[ -f "$config/config.json" ] || echo '{}' >"$config/config.json"
	log "compose $(DOCKER_CONFIG=$config docker compose version --short), buildx $(DOCKER_CONFIG=$config docker buildx version | awk '{print $2}') in $config"
	echo "export DOCKER_CONFIG=$config"
}

start() {
	# testcontainers, and anything else that looks for the engine's host, must
	# dial loopback: on a machine with a /.dockerenv it would dial the default
	# gateway instead.
	echo "export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1"
	command -v docker >/dev/null || install_docker
	if docker info >/dev/null 2>&1; then
		log "using the engine at ${DOCKER_HOST:-the default socket}"
		plugins
		return
	fi
	command -v dockerd >/dev/null || install_docker
	# The plugins first: the CLI needs no engine to tell their versions, and a
	# failed build then leaves no dockerd behind.
	plugins
	mkdir -p "$cache" "$run"
	local sock="$run/docker.sock" pidfile="$run/dockerd.pid" lock="$cache/engine.lock"
	# The lock is held by dockerd itself (fd 9): it is free again when dockerd exits.
	exec 9>"$lock"
	if ! flock -n 9; then
		log "another engine runs from $cache; waiting for it to stop (up to 30 minutes)"
		flock -w 1800 9 || die "$cache is still in use by another engine"
	fi
	if [ -e "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
		die "$pidfile names a running dockerd, but $lock was free"
	fi
	rm -f "$pidfile" "$sock"
	if ! ip link show "$bridge" >/dev/null 2>&1; then
		ip link add name "$bridge" type bridge
		ip addr add "$bridge_cidr" dev "$bridge"
	fi
	ip link set "$bridge" up
	mkdir -p "$cache/docker"
	log "starting dockerd (data root $cache/docker, socket $sock; log $run/dockerd.log)"
	setsid dockerd \
		--data-root "$cache/docker" \
		--exec-root "$run/exec" \
		--pidfile "$pidfile" \
		--host "unix://$sock" \
		--bridge "$bridge" \
		--default-address-pool "base=$address_pool,size=24" \
		--iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
		--storage-driver overlay2 \
		</dev/null >"$run/dockerd.log" 2>&1 &
	local pid=$!
	exec 9>&-
	export DOCKER_HOST="unix://$sock"
	for _ in $(seq 1 120); do
		docker info >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || {
			tail -n 20 "$run/dockerd.log" >&2
			die "dockerd exited"
		}
		sleep 0.5
	done
	docker info >/dev/null 2>&1 || {
		tail -n 20 "$run/dockerd.log" >&2
		PAYMENTS_OUTBOX_DOCKERD_PID=$pid stop
		die "dockerd did not answer on $sock within 60s"
	}
	log "engine $(docker version --format '{{.Server.Version}}') up (pid $pid)"
	echo "export DOCKER_HOST=unix://$sock"
	echo "export PAYMENTS_OUTBOX_DOCKERD_PID=$pid"
}

install_docker() {
	log "installing Debian's docker.io"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
		--no-install-recommends docker.io >/dev/null
}

# stop stops the dockerd that start started (PAYMENTS_OUTBOX_DOCKERD_PID): its
# containers first (docker stop gives each its grace period), then dockerd,
# which stops its containerd; then the bridge goes.
stop() {
	local pid="${PAYMENTS_OUTBOX_DOCKERD_PID:-}"
	[ -n "$pid" ] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		local running
		running=$(docker ps -q 2>/dev/null || true)
		# shellcheck disable=SC2086 # one argument per container id
		[ -z "$running" ] || docker stop --time 20 $running >/dev/null 2>&1 || true
		kill -TERM "$pid"
		for _ in $(seq 1 60); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "dockerd (pid $pid) did not stop in 30s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	ip link delete "$bridge" 2>/dev/null || true
	log "engine stopped"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
