#!/usr/bin/env bash
#
# test/deps.sh
#	Install the Debian packages that building and testing sqlite_shard_fdw
#	need, and nothing else.
#
# Asks dpkg (one fast, local call) which of the packages are missing and only
# then runs "apt-get update" once and "apt-get install -y" of the missing
# ones, so on a machine that has everything it makes no apt call at all and
# prints nothing.  Run as root, or as a user with sudo.  `make deps` runs it;
# `make test` and `make demo` run it first.

set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}

PACKAGES=(
	"postgresql-$PG_MAJOR"			# the server
	"postgresql-client-$PG_MAJOR"	# psql
	"postgresql-server-dev-$PG_MAJOR"	# PGXS, server headers
	postgresql-common				# pg_virtualenv, pg_createcluster
	postgresql-contrib				# contrib modules for comparison tests
	libsqlite3-dev					# sqlite3.h, libsqlite3.so
	sqlite3							# the CLI that builds every fixture
	make
	gcc
	libc6-dev
	python3							# the differential test
)

# missing_packages PKG...: print the packages dpkg does not report as installed.
missing_packages()
{
	local status
	status=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "$@" 2>/dev/null || true)
	local pkg
	for pkg in "$@"; do
		if ! grep -q "^$pkg ii" <<<"$status"; then
			echo "$pkg"
		fi
	done
}

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps.sh: dpkg-query not found; this script knows Debian and Ubuntu only" >&2
	exit 1
fi

mapfile -t missing < <(missing_packages "${PACKAGES[@]}")
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "deps.sh: missing packages: ${missing[*]}; run as root to install them" >&2
		exit 1
	fi
fi

echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp -t ssfdw_deps.XXXXXX)
trap 'rm -f "$log"' EXIT
if ! { $SUDO apt-get update -q &&
	   $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
	   >"$log" 2>&1 </dev/null; then
	tail -n 50 "$log" >&2
	echo "deps.sh: apt-get failed" >&2
	exit 1
fi

mapfile -t still < <(missing_packages "${PACKAGES[@]}")
if [ "${#still[@]}" -ne 0 ]; then
	echo "deps.sh: still missing after install: ${still[*]}" >&2
	exit 1
fi
