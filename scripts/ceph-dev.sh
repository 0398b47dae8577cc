#!/bin/bash
# A throw-away single-node Ceph for tests and benchmarks: one monitor, one
# memstore OSD and one radosgw, all on 127.0.0.1, all state under DIR.
#
#   scripts/ceph-dev.sh start DIR   prints `export ...` lines (S3 keys, endpoint)
#   scripts/ceph-dev.sh env DIR     prints the same lines again
#   scripts/ceph-dev.sh stop DIR    stops every daemon it started
#   scripts/ceph-dev.sh kill-rgw DIR / start-rgw DIR   fault injection for tests
#
# cephx is on (keys made with ceph-authtool): radosgw stalls at
# "get_initial_auth_request returned -13" when auth is "none".
set -euo pipefail

die() { echo "ceph-dev: $*" >&2; exit 1; }

free_port() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "no free loopback port"
}

conf() { echo "$D/ceph.conf"; }
ceph_cmd() { timeout 60 ceph -c "$(conf)" --connect-timeout 30 "$@"; }

write_conf() {
	local monport=$1 rgwport=$2
	cat >"$(conf)" <<EOF
[global]
fsid = $(cat /proc/sys/kernel/random/uuid)
mon host = v1:127.0.0.1:$monport
mon initial members = a
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr2 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $D/keyring
run dir = $D/run
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
log file = $D/log/\$name.log
crash dir = $D/crash
exec dir = $D/run
mon data = $D/mon
osd data = $D/osd
osd objectstore = memstore
memstore device bytes = ${CEPH_DEV_BYTES:-4294967296}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pg autoscale mode = off
mon pg warn min per osd = 0
mon max pg per osd = 1000
osd crush chooseleaf type = 0
mon allow pool delete = true
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd max object name len = 460
osd max object namespace len = 64
osd op num threads per shard = 1
osd op num shards = 2
rgw dns name = localhost
rgw frontends = beast endpoint=127.0.0.1:$rgwport
rgw data = $D/rgw
rgw thread pool size = 64
rgw lc debug interval = 10
rgw enable usage log = false
log to stderr = false
err to stderr = false
debug ms = 0
EOF
}

wait_for() { # seconds, command...
	local n=$1; shift
	for _ in $(seq $((n * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

start_rgw() {
	local port
	port=$(cat "$D/rgw.port")
	radosgw -c "$(conf)" -n client.rgw.a --keyring "$D/keyring" \
		>"$D/log/radosgw.out" 2>&1 || die "radosgw failed to start: $(tail -5 "$D/log/client.rgw.a.log" 2>/dev/null)"
	wait_for 120 curl -fsS -o /dev/null "http://127.0.0.1:$port/" ||
		die "radosgw does not answer on 127.0.0.1:$port; see $D/log/client.rgw.a.log"
}

print_env() {
	. "$D/s3.env"
	echo "export AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID"
	echo "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY"
	echo "export CAIRN_S3_ENDPOINT=$CAIRN_S3_ENDPOINT"
}

start() {
	[ -e "$D/ceph.conf" ] && die "$D already holds a cluster (stop it first)"
	mkdir -p "$D"/{run,log,crash,mon,osd,rgw}
	D=$(cd "$D" && pwd)
	local monport rgwport
	monport=$(free_port)
	rgwport=$(free_port)
	[ "$monport" != "$rgwport" ] || rgwport=$(free_port)
	echo "$rgwport" >"$D/rgw.port"
	write_conf "$monport" "$rgwport"

	# Keys: the monitor's own, an admin, the OSD and radosgw.
	ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
	ceph-authtool "$D/keyring" --gen-key -n client.admin \
		--cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
	ceph-authtool "$D/keyring" --gen-key -n osd.0 \
		--cap mon 'allow profile osd' --cap osd 'allow *' --cap mgr 'allow profile osd' >/dev/null
	ceph-authtool "$D/keyring" --gen-key -n client.rgw.a \
		--cap mon 'allow rw' --cap osd 'allow rwx' --cap mgr 'allow rw' >/dev/null

	monmaptool --create --clobber --fsid "$(sed -n 's/^fsid = //p' "$(conf)")" \
		--addv a "[v1:127.0.0.1:$monport]" "$D/monmap" >/dev/null
	ceph-mon -c "$(conf)" --mkfs -i a --monmap "$D/monmap" --keyring "$D/keyring" >"$D/log/mkfs.out" 2>&1 ||
		die "ceph-mon --mkfs failed: $(cat "$D/log/mkfs.out")"
	ceph-mon -c "$(conf)" -i a >"$D/log/mon.out" 2>&1 || die "ceph-mon failed: $(cat "$D/log/mon.out")"
	wait_for 60 ceph_cmd -s || die "monitor does not answer; see $D/log/mon.a.log"

	# The OSD: register it, make its (memory) store, start it.
	local uuid
	uuid=$(cat /proc/sys/kernel/random/uuid)
	ceph_cmd osd new "$uuid" 0 >/dev/null
	ceph-osd -c "$(conf)" -i 0 --mkfs --osd-uuid "$uuid" >"$D/log/osd-mkfs.out" 2>&1 ||
		die "ceph-osd --mkfs failed: $(tail -5 "$D/log/osd-mkfs.out")"
	ceph-osd -c "$(conf)" -i 0 >"$D/log/osd.out" 2>&1 || die "ceph-osd failed: $(cat "$D/log/osd.out")"
	wait_for 60 sh -c "ceph -c '$(conf)' --connect-timeout 10 osd stat | grep -q '1 up'" ||
		die "OSD did not come up; see $D/log/osd.0.log"

	start_rgw

	# An S3 user with fixed random keys.
	local ak sk
	ak=$(head -c 15 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F | head -c 20)
	sk=$(head -c 30 /dev/urandom | base64 | tr -d '/+=\n' | head -c 40)
	timeout 60 radosgw-admin -c "$(conf)" -n client.admin user create --uid=cairn --display-name=cairn \
		--access-key="$ak" --secret-key="$sk" >"$D/log/user.out" 2>&1 ||
		die "radosgw-admin user create failed: $(cat "$D/log/user.out")"
	cat >"$D/s3.env" <<EOF
AWS_ACCESS_KEY_ID=$ak
AWS_SECRET_ACCESS_KEY=$sk
CAIRN_S3_ENDPOINT=http://127.0.0.1:$rgwport
EOF
	print_env
}

pids() {
	local f
	for f in "$D"/run/*.pid; do
		[ -e "$f" ] && cat "$f"
	done
}

stop_pidfile() { # pidfile
	local f=$1 pid
	[ -e "$f" ] || return 0
	pid=$(cat "$f")
	# Only signal the process if it still is the daemon we started.
	if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$D/ceph.conf"; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

stop() {
	[ -e "$D/ceph.conf" ] || die "$D holds no cluster"
	local f
	for f in "$D/run/client.rgw.a.pid" "$D/run/osd.0.pid" "$D/run/mon.a.pid"; do
		stop_pidfile "$f"
	done
	for f in "$D"/run/*.pid; do
		[ -e "$f" ] && stop_pidfile "$f"
	done
	rm -rf "$D"
}

[ $# -eq 2 ] || die "usage: ceph-dev.sh start|stop|env|kill-rgw|start-rgw DIR"
D=$2
case $1 in
start) start ;;
stop) stop ;;
env) print_env ;;
kill-rgw) D=$(cd "$D" && pwd); f="$D/run/client.rgw.a.pid"; [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; rm -f "$f" ;;
start-rgw) D=$(cd "$D" && pwd); start_rgw ;;
*) die "unknown command $1" ;;
esac
