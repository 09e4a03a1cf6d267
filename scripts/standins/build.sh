#!/usr/bin/env bash
# Builds the stand-ins for pinned images that cannot be pulled (README.md
# beside this file says what each is) into the engine DOCKER_HOST names, and
# prints one line per stand-in, NAME=IMAGE:
#
#   bash scripts/standins/build.sh golang distroless postgres localstack
#
# Each image carries a label with a hash of everything it is built from (its
# Dockerfile and files, the Debian rootfs, the machine's Go or Python, the
# project's go.sum files): an image whose label matches is reused, so a run
# after the first builds nothing. The Debian rootfs is debootstrapped once into
# PAYMENTS_OUTBOX_CI_CACHE (default /var/cache/payments-outbox-ci).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache="${PAYMENTS_OUTBOX_CI_CACHE:-/var/cache/payments-outbox-ci}"
label=org.payments-outbox.standin.inputs
suite=bookworm
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# One rootfs for every stand-in: the golang image's system (ca-certificates,
# git, netbase, tzdata), Postgres 15 and its client for the postgres image,
# curl for LocalStack's healthcheck, and the shared libraries the machine's
# Python links.
packages=ca-certificates,curl,git,netbase,tzdata,postgresql-15,postgresql-client-15,libbz2-1.0,libexpat1,libffi8,liblzma5,libncursesw6,libreadline8,libsqlite3-0,libssl3,libtirpc3,libuuid1,zlib1g

log() { echo "standins: $*" >&2; }
die() {
	log "$*"
	exit 1
}
sha() { sha256sum | cut -c1-16; }
hash_files() { (cd "$here" && cat "$@") | sha; }
current() { [ "$(docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$1" 2>/dev/null)" = "$2" ]; }

# build TAG INPUTS DOCKERFILE CONTEXT [ARGS...] builds TAG unless it is current.
build() {
	local tag=$1 inputs=$2 dockerfile=$3 context=$4
	shift 4
	if current "$tag" "$inputs"; then
		return
	fi
	log "building $tag"
	docker buildx build --load --quiet --label "$label=$inputs" --tag "$tag" \
		--file "$dockerfile" "$@" "$context" >/dev/null
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# debian: the rootfs every stand-in starts from, debootstrapped once (its
# packages from Debian's archive, through apt's own mirror) and imported.
debian_inputs=$(printf '%s %s\n' "$suite" "$packages" | sha)
debian=payments-outbox-standin/debian:$suite
debian_image() {
	current "$debian" "$debian_inputs" && return
	local tarball="$cache/rootfs/debian-$suite-$debian_inputs.tar"
	if [ ! -f "$tarball" ]; then
		command -v debootstrap >/dev/null || {
			apt-get update -qq
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 debootstrap >/dev/null
		}
		log "debootstrap $suite (once; kept as $tarball)"
		mkdir -p "$cache/rootfs"
		local rootfs="$scratch/rootfs"
		debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >"$scratch/debootstrap.log" 2>&1 ||
			{
				tail -n 20 "$scratch/debootstrap.log" >&2
				die "debootstrap failed"
			}
		rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
		tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
		rm -rf "$rootfs"
	fi
	docker import --change "LABEL $label=$debian_inputs" --change 'CMD ["bash"]' "$tarball" "$debian" >/dev/null
}

# golang: the machine's Go toolchain and a file GOPROXY of the modules the
# Dockerfile's two builds download, collected by running the same commands
# here against the machine's module cache (the module proxy only for what it
# lacks).
golang_image() {
	local goroot goversion inputs tag
	goroot=$(go env GOROOT)
	goversion=$(go env GOVERSION)
	inputs=$( (
		echo "$debian_inputs $goversion"
		hash_files golang.Dockerfile
		cat "$root/go.sum" "$root/tools/go.sum" "$root/go.mod" "$root/tools/go.mod"
	) | sha)
	tag=payments-outbox-standin/golang:${goversion#go}-$suite
	if ! current "$tag" "$inputs"; then
		local ctx="$scratch/golang" modcache="$scratch/golang-modcache"
		mkdir -p "$ctx"
		local machine_cache machine_proxy
		machine_cache=$(go env GOMODCACHE)
		machine_proxy=$(go env GOPROXY)
		(
			export GOMODCACHE="$modcache" GOFLAGS='-modcacherw -mod=readonly' GOWORK=off GOTOOLCHAIN=local
			export GOPROXY="file://$machine_cache/cache/download,$machine_proxy"
			cd "$root"
			go mod download
			go -C tools build -o /dev/null ./webhookreceiver
		) || die "collecting the build's modules failed"
		mv "$modcache/cache/download" "$ctx/goproxy"
		rm -rf "$modcache"
		cp -a "$goroot" "$ctx/go"
		build "$tag" "$inputs" "$here/golang.Dockerfile" "$ctx" --build-arg "DEBIAN=$debian"
		rm -rf "$ctx"
	fi
	echo "golang=$tag"
}

distroless_image() {
	local tag=payments-outbox-standin/distroless-static:nonroot
	build "$tag" "$( (echo "$debian_inputs" && hash_files distroless.Dockerfile) | sha)" \
		"$here/distroless.Dockerfile" "$here" --build-arg "DEBIAN=$debian"
	echo "distroless=$tag"
}

postgres_image() {
	local tag=payments-outbox-standin/postgres:15-$suite
	build "$tag" "$( (echo "$debian_inputs" && hash_files postgres.Dockerfile postgres-entrypoint.sh) | sha)" \
		"$here/postgres.Dockerfile" "$here" --build-arg "DEBIAN=$debian"
	echo "postgres=$tag"
}

# localstack: the Python that runs the machine's moto (and the AWS CLI the init
# hooks call), copied to the same path in the image: its scripts name it.
localstack_image() {
	local prefix moto inputs
	prefix=$(python3 -c 'import sys, moto; print(sys.prefix)' 2>/dev/null) ||
		die "python3 cannot import moto: the localstack stand-in runs the machine's moto (scripts/moto_server.py)"
	command -v aws >/dev/null || die "the AWS CLI is missing: the init hook (localstack/init-aws.sh) needs it"
	case "$prefix" in
	/usr | /usr/local) die "python3's prefix is $prefix: the stand-in copies the whole prefix, so it needs a Python of its own (pyenv, a venv's base)" ;;
	esac
	moto=$(python3 -c 'import moto; print(moto.__version__)')
	# A tag with LocalStack's version first: testcontainers' LocalStack module
	# reads the version from the tag.
	local tag=payments-outbox-standin/localstack:4.14.0-moto$moto
	inputs=$( (
		echo "$debian_inputs $prefix $moto $(python3 --version) $(aws --version 2>&1)"
		hash_files localstack.Dockerfile localstack.py awslocal
		cat "$root/scripts/moto_server.py"
	) | sha)
	if ! current "$tag" "$inputs"; then
		local ctx="$scratch/localstack"
		mkdir -p "$ctx"
		cp "$here/localstack.py" "$here/awslocal" "$root/scripts/moto_server.py" "$ctx/"
		cp -a "$prefix" "$ctx/python"
		build "$tag" "$inputs" "$here/localstack.Dockerfile" "$ctx" \
			--build-arg "DEBIAN=$debian" --build-arg "PYTHON_PREFIX=$prefix"
		rm -rf "$ctx"
	fi
	echo "localstack=$tag"
}

[ $# -gt 0 ] || die "usage: $0 golang|distroless|postgres|localstack..."
debian_image
for name in "$@"; do
	case "$name" in
	golang | distroless | postgres | localstack) "${name}_image" ;;
	*) die "no stand-in named $name" ;;
	esac
done
