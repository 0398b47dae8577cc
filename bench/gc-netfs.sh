#!/bin/bash
# bench/gc-netfs.sh - cold GC mark, `--order inode` against `--order none`,
# where metadata reads pay a network round trip: the store is served over
# sshfs (SFTP over ssh to 127.0.0.1, a private sshd on its own port), and
# the same store is also marked locally in the same run as the peer.
# Results go to BENCHMARKS.md ("Garbage collection").
#
# The kernel here has no NFS (no nfsd, no nfs client in /proc/filesystems,
# no modules), so sshfs is the network file system measured.  Cold means:
# sshfs unmounted (its FUSE inodes and dentries gone), `sync; echo 3 >
# /proc/sys/vm/drop_caches` (the server's ext4 inode, dentry and page
# caches: server and client share this kernel), then mounted afresh with
# sshfs's directory cache off and FUSE's entry and attribute timeouts 0.
#
# The store (bench/mkstore.c) sits on the root ext4 under $CAIRN_BENCH_DIR:
# CAIRN_BENCH_CHUNKS (default 20,000: a cold touch over sshfs costs ~4 ms
# here, so 20k chunks already take ~80 s a run) chunk files, 2 datasets x 5
# snapshots.  Each run is `cairn gc -j --order inode|none` with the
# default batch and LRU (1,048,576), nothing to remove; pairs alternate
# none/inode CAIRN_BENCH_ROUNDS times (default 2).
#
# Root only (drop_caches, mounts).  Installs openssh-server and sshfs if
# they are missing.  On exit: sshfs unmounted, the private sshd stopped;
# the store is kept for the next run (CAIRN_BENCH_CLEAN=1 deletes it).
# Environment: CAIRN_BENCH_DIR (default /var/tmp/cairn-bench-gcnet),
# CAIRN_BENCH_CHUNKS, CAIRN_BENCH_ROUNDS, CAIRN_BENCH_PORT (default 2222),
# CAIRN_BENCH_NOAPPEND=1 (do not touch BENCHMARKS.md).
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench-gcnet}
N=${CAIRN_BENCH_CHUNKS:-20000}
ROUNDS=${CAIRN_BENCH_ROUNDS:-2}
PORT=${CAIRN_BENCH_PORT:-2222}
LOG=$BASE/log
SSHD=$BASE/ssh
NETMNT=$BASE/sshfs
STORE=$BASE/store
say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (drop_caches, mounts)"
mkdir -p "$BASE" "$LOG" "$NETMNT"
need() { # need COMMAND PACKAGE
	command -v "$1" >/dev/null && return
	say "installing $2"
	apt-get -o DPkg::Lock::Timeout=900 install -y "$2" >/dev/null || die "cannot install $2"
}
need /usr/bin/time time
need /usr/sbin/sshd openssh-server
need sshfs sshfs
command -v python3 >/dev/null || die "needs python3"

# ---- build ----
say "building into $BASE/build"
# mkstore links with the library like the command (the Makefile's bench rule).
make -s -C "$ROOT" B="$BASE/build" "$BASE/build/cairn" "$BASE/build/bench/mkstore" >&2 ||
	die "make failed"
CAIRN=${CAIRN_BENCH_BIN:-$BASE/build/cairn}
MKSTORE=$BASE/build/bench/mkstore

# ---- store ----
PARAMS="$N 2 5 $((N / 10)) $((N / 20)) 150"
if [ -e "$STORE.complete" ] && [ "$(cat "$STORE.complete")" = "$PARAMS" ]; then
	say "reusing $STORE ($PARAMS)"
else
	rm -rf "$STORE" "$STORE.complete"
	say "making $STORE: mkstore $PARAMS"
	# shellcheck disable=SC2086
	nice -n 10 "$MKSTORE" "$STORE" $PARAMS >"$LOG/mkstore" 2>&1 || die "mkstore failed: $(cat "$LOG/mkstore")"
	echo "$PARAMS" >"$STORE.complete"
fi

# ---- private sshd on 127.0.0.1, stopped on exit ----
SSHD_PID=
cleanup() {
	mountpoint -q "$NETMNT" && { fusermount3 -u "$NETMNT" || umount -l "$NETMNT" || true; }
	[ -n "$SSHD_PID" ] && kill "$SSHD_PID" 2>/dev/null || true
	if [ -n "${CAIRN_BENCH_CLEAN:-}" ]; then rm -rf "$STORE" "$STORE.complete"; fi
}
trap cleanup EXIT
mkdir -p "$SSHD" /run/sshd
chmod 700 "$SSHD"
[ -e "$SSHD/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$SSHD/host_key"
[ -e "$SSHD/client_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$SSHD/client_key"
cp "$SSHD/client_key.pub" "$SSHD/authorized_keys"
cat >"$SSHD/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $SSHD/host_key
PidFile $SSHD/sshd.pid
AuthorizedKeysFile $SSHD/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
EOF
rm -f "$SSHD/sshd.pid"
/usr/sbin/sshd -f "$SSHD/sshd_config" -E "$SSHD/sshd.log" || die "sshd failed: $(cat "$SSHD/sshd.log")"
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$SSHD/sshd.pid" ] && break; sleep 0.2; done
SSHD_PID=$(cat "$SSHD/sshd.pid")

mount_net() {
	sshfs -p "$PORT" -o IdentityFile="$SSHD/client_key",StrictHostKeyChecking=no \
		-o UserKnownHostsFile=/dev/null,BatchMode=yes \
		-o dir_cache=no,entry_timeout=0,attr_timeout=0,negative_timeout=0 \
		"root@127.0.0.1:$STORE" "$NETMNT" || die "sshfs mount failed"
}

# run NAME STORE ORDER local|net: one cold `cairn gc -j --order ORDER`.
run() {
	local name=$1 store=$2 order=$3 where=$4
	mountpoint -q "$NETMNT" && fusermount3 -u "$NETMNT"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	[ "$where" = net ] && mount_net
	CAIRN_STORE=$store nice -n 10 /usr/bin/time -f '%e %M %U %S' -o "$LOG/$name.time" \
		"$CAIRN" gc -j --order "$order" >"$LOG/$name.out" 2>"$LOG/$name.err" ||
		die "$name: gc failed: $(cat "$LOG/$name.err")"
	python3 - "$LOG/$name.out" "$LOG/$name.time" "$LOG/$name.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
w, rss, u, s = open(sys.argv[2]).read().split()[-4:]
d.update(wall_s=float(w), rss_kib=int(rss), user_s=float(u), sys_s=float(s))
json.dump(d, open(sys.argv[3], "w"))
EOF
	say "$name: mark $(python3 -c 'import json,sys; print("%.2f s" % (json.load(open(sys.argv[1]))["mark_ns"] / 1e9))' "$LOG/$name.json")"
}
rm -f "$LOG"/*.json
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq 1 "$ROUNDS"); do
	for o in none inode; do
		run "local-$o-$r" "$STORE" $o local
		run "net-$o-$r" "$NETMNT" $o net
	done
done
fusermount3 -u "$NETMNT"

# ---- report ----
REPORT=$LOG/report.md
python3 - "$LOG" "$ROUNDS" >"$REPORT" <<'EOF'
import json, os, sys
log, rounds = sys.argv[1], int(sys.argv[2])
def j(name):
    return json.load(open(os.path.join(log, name + ".json")))
print("| where | order | round | mark s | touches/s | wall s | user s | sys s | peak RSS MiB |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for where in ("local", "net"):
    for o in ("none", "inode"):
        for r in range(1, rounds + 1):
            d = j("%s-%s-%d" % (where, o, r))
            m = d["mark_ns"] / 1e9
            print("| %s | %s | %d | %.2f | %.1f K | %.2f | %.1f | %.1f | %d |" % (
                "sshfs" if where == "net" else "local ext4", o, r, m, d["touched"] / m / 1e3,
                d["wall_s"], d["user_s"], d["sys_s"], d["rss_kib"] // 1024))
print()
print("| cold mark, inode >= 5x faster than none | none s (best) | inode s (best) | ratio | verdict |")
print("|---|---:|---:|---:|---|")
for where in ("local", "net"):
    best = lambda o: min(j("%s-%s-%d" % (where, o, r))["mark_ns"] for r in range(1, rounds + 1)) / 1e9
    ratio = best("none") / best("inode")
    print("| %s | %.2f | %.2f | %.2fx | %s |" % ("sshfs (127.0.0.1)" if where == "net" else "local ext4",
          best("none"), best("inode"), ratio, "PASS" if ratio >= 5 else "MISS"))
d = j("net-none-1")
print()
print("Store: %d chunks on disk, %d snapshots, %d references." % (d["disk_chunks"], d["snapshots"], d["referenced_chunks"]))
EOF
cat "$REPORT"

if [ -z "${CAIRN_BENCH_NOAPPEND:-}" ]; then
	{
		echo
		echo "### Cold mark order over a network file system (bench/gc-netfs.sh)"
		echo
		echo "Command: \`bench/gc-netfs.sh\` (CAIRN_BENCH_CHUNKS=$N, CAIRN_BENCH_ROUNDS=$ROUNDS). Date: $(date -u '+%Y-%m-%d %H:%M UTC')."
		echo "Machine: $(nproc) vCPUs, $(uname -r), sshfs $(sshfs --version 2>&1 | awk '/SSHFS/ {print $3}') to a private sshd on 127.0.0.1 serving the root ext4; load average at the start: $LOAD0, at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
		echo
		cat "$REPORT"
	} >>"$ROOT/BENCHMARKS.md"
	say "appended to BENCHMARKS.md"
fi
