#!/bin/sh
# Installs the Debian packages cairn builds and tests with, if missing.
# One group per line, so that additions merge cleanly.
set -e
need=""
want() {
	for p in "$@"; do
		dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
	done
}
# build
want build-essential pkg-config libzstd-dev libxxhash-dev libsqlite3-dev libssl-dev zlib1g-dev
# tests
want attr strace gdb python3 sqlite3 bc clang libclang-rt-14-dev zstd acl fuse3 e2fsprogs dosfstools fusefat python3-xxhash mount util-linux coreutils
# S3 backend (libcurl, libxml2) and the single-node Ceph its tests run against
want libcurl4-openssl-dev libxml2-dev curl ceph-mon ceph-osd radosgw ceph-common
# encryption: the kernel key retention service
want libkeyutils-dev keyutils
# cairn mount (FUSE), man pages, completion tests
want libfuse3-dev scdoc man-db groff-base
# zfs compatibility: the real clients (sanoid, syncoid) and faketime for sanoid's policy
want sanoid faketime pv mbuffer lzop
# bench peers (bench/backup.sh, send.sh, crypt.sh run them in the same script)
want restic borgbackup time
[ -z "$need" ] && exit 0
echo "deps: installing$need"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq $need >/dev/null
