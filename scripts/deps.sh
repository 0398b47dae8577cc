#!/bin/sh
# Installs the Debian packages cairn builds and tests with, if missing.
set -e
need=""
for p in build-essential pkg-config libzstd-dev libxxhash-dev libsqlite3-dev libssl-dev \
	 zlib1g-dev attr strace python3 sqlite3 bc libkeyutils-dev keyutils; do
	dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
[ -z "$need" ] && exit 0
echo "deps: installing$need"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $need >/dev/null
