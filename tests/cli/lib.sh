# lib.sh - sourced by every CLI test: a scratch store and small assertions.
# Each test runs the real binary ($CAIRN) on real files in its own tmpdir.
set -u
: "${CAIRN:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/cairn}"
# tmpfs when there is one: a store is 65,536 directories, and creating and
# removing them on a disk filesystem dominates a test's time.
TESTDIR=$(mktemp -d "${CAIRN_TEST_TMP:-/dev/shm}/cairn-test.XXXXXX" 2>/dev/null ||
	mktemp -d /tmp/cairn-test.XXXXXX)
export CAIRN_STORE="$TESTDIR/store"
fails=0

cairn() { "$CAIRN" "$@"; }

# fail MESSAGE: counts a failure.  Also noted in a file, so that a check
# run in a subshell (a pipeline's last command, a command substitution)
# still fails the test: done_test counts the file's lines too.
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
	echo x >>"$TESTDIR/.fails" 2>/dev/null
}

# ok CMD...: CMD must succeed.
ok() {
	"$@" || fail "expected success: $*"
}

# fails_with CODE PATTERN CMD...: CMD must exit CODE and print PATTERN on stderr.
fails_with() {
	local code=$1 pat=$2
	shift 2
	local err
	err=$("$@" 2>&1 >/dev/null)
	local rc=$?
	[ $rc -eq "$code" ] || fail "expected exit $code, got $rc: $* ($err)"
	echo "$err" | grep -q -- "$pat" || fail "expected '$pat' in stderr of: $* (got: $err)"
}

# same_tree A B: B is a faithful copy of A: content, types, modes, owners,
# mtimes (ns), symlink targets, device numbers, xattrs and ACLs (compared
# as xattrs, and as getfacl prints them), the hardlink structure, and
# sparseness (every hole of A is a hole of B).  See same_tree.py.
same_tree() {
	local d
	d=$(python3 "$(dirname "${BASH_SOURCE[0]}")/same_tree.py" "$1" "$2" 2>&1) || {
		fail "trees differ: $1 $2"
		echo "$d" | head -8 >&2
	}
	local a b
	a=$(cd "$1" && getfacl -R -P -n . 2>&1 | sort)
	b=$(cd "$2" && getfacl -R -P -n . 2>&1 | sort)
	[ "$a" = "$b" ] || {
		fail "ACLs differ: $1 $2"
		diff <(echo "$a") <(echo "$b") | head -5 >&2
	}
}

# use_xattr_dir: sets XDIR to a scratch directory whose filesystem keeps
# user.* xattrs and ACLs: $TESTDIR when it does (tmpfs from Linux 6.6 on),
# else one under /var/tmp (removed on exit).  Fails the test if there is
# none, so xattr checks never drop silently.
XATTR_DIRS=""
use_xattr_dir() {
	local d
	for d in "$TESTDIR" "${CAIRN_XATTR_TMP:-/var/tmp}"; do
		if [ "$d" != "$TESTDIR" ]; then
			d=$(mktemp -d "$d/cairn-xattr.XXXXXX") || continue
			XATTR_DIRS="$XATTR_DIRS $d"
		fi
		if touch "$d/.probe" && setfattr -n user.probe -v 1 "$d/.probe" 2>/dev/null &&
			setfacl -m u:1:r "$d/.probe" 2>/dev/null; then
			rm -f "$d/.probe"
			XDIR=$d
			return 0
		fi
		rm -f "$d/.probe"
	done
	fail "no scratch filesystem with user xattrs and ACLs (tried $TESTDIR, /var/tmp)"
	XDIR=$TESTDIR
}
trap '[ -n "${KEEP:-}" ] || rm -rf "$TESTDIR" ${XATTR_DIRS:-}' EXIT

# one_file_src: $SRC ($TESTDIR/src), a source of one small file.
one_file_src() {
	SRC=$TESTDIR/src
	mkdir -p "$SRC"
	echo content >"$SRC/f"
}

# rich_tree DIR: every kind of object same_tree checks (devices and owners
# when root), with marker strings in names and content for the plaintext
# greps of the encryption tests.
rich_tree() {
	local s=$1
	mkdir -p "$s/d1/d2" "$s/hd"
	echo "MARKERCONTENT_cairn_7f3a first" >"$s/MARKERNAME_secret_file.txt"
	for i in $(seq 1 40); do echo "small $i MARKERCONTENT_cairn_7f3a" >"$s/d1/s$i"; done
	head -c 2500000 /dev/urandom >"$s/big.bin"
	{ cat "$s/big.bin"; echo MARKERCONTENT_cairn_7f3a; } >"$s/big2.bin"
	: >"$s/empty"
	ln -s d1/s1 "$s/link"
	echo three >"$s/h1" && ln "$s/h1" "$s/h2" && ln "$s/h1" "$s/hd/h3"
	mkfifo "$s/fifo"
	truncate -s 20M "$s/sparse"
	printf 'middle' | dd of="$s/sparse" bs=1 seek=9000000 conv=notrunc status=none
	chmod 4751 "$s/empty"
	touch -d '@981173106.123456789' "$s/d1/s2"
	setfattr -n user.MARKERXATTR -v MARKERCONTENT_cairn_7f3a "$s/big.bin" || fail "setfattr"
	setfacl -m u:1234:rw "$s/big2.bin" || fail "setfacl"
	if [ "$(id -u)" = 0 ]; then
		mknod "$s/null" c 1 3
		chown -h 1234:5678 "$s/link"
		chown 42:43 "$s/fifo"
	fi
}

# small_disk SIZE: a tmpfs of SIZE mounted at $MNT ($TESTDIR/mnt), for a
# disk that fills up; unmounted on exit.  Needs root and a mountable tmpfs
# (exit 77 otherwise, which CI counts as a failure).
small_disk() {
	[ "$(id -u)" = 0 ] || { echo "needs root to mount a tmpfs"; exit 77; }
	MNT=$TESTDIR/mnt
	mkdir -p "$MNT"
	mount -t tmpfs -o size="$1" tmpfs "$MNT" || { echo "cannot mount a tmpfs here"; exit 77; }
	trap 'umount "$MNT" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR" ${XATTR_DIRS:-}' EXIT
}

# manifest DIR: the files' content (md5sum per path), to compare a restore
# with the source as it was (tests needing modes/owners/times use same_tree).
manifest() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum); }
# sleep_ms N: sleeps N mod 1000 milliseconds (random delays in race tests).
sleep_ms() { sleep "$(printf '0.%03d' $(($1 % 1000)))"; }
# overlapped A B: the runs stamped in files A and B (start and end lines,
# date +%s%N) overlapped in time; race tests count these to prove the race.
overlapped() {
	local a b
	mapfile -t a <"$1"
	mapfile -t b <"$2"
	[ ${#a[@]} = 2 ] && [ ${#b[@]} = 2 ] && [ "${a[0]}" -lt "${b[1]}" ] && [ "${b[0]}" -lt "${a[1]}" ]
}

# wait_in_syscall PID WHAT REGEX: waits (at most 60 s) until PID's main
# thread sleeps in a system call whose /proc/PID/syscall line matches the
# extended REGEX.  Returns 1 at once if PID is gone, for the caller to judge.
# If PID never gets there, the test's failure ("never WHAT") is recorded
# and it returns 0, so the caller goes on (and cleans up).
wait_in_syscall() {
	local s
	for _ in $(seq 1 1200); do
		s=$(cat "/proc/$1/syscall" 2>/dev/null) || return 1
		[[ $s =~ $3 ]] && return 0
		sleep 0.05
	done
	fail "process $1 never $2"
}

# wait_reading PID: until PID sleeps in read(0, ...) or in the poll recv
# makes before each read.
wait_reading() { wait_in_syscall "$1" "waited for input" '^(0 0x0 |7 )'; }

# wait_sleeping PID: until PID sleeps in nanosleep or clock_nanosleep (a
# busy wait's back-off, as for another writer's lock).
wait_sleeping() { wait_in_syscall "$1" "slept" '^(35|230) '; }

# claim_race URL: two inits on chunk location URL both find it free, then
# both write their claim: each is held just before that write until its
# go-file exists; the first goes once both wait, the second once the
# first is done.  The first must win, the second fail saying it lost the
# race (which proves the race happened), leaving no directory; the
# winner's id is left in $TESTDIR/race-a.id for the caller to compare.
claim_race() {
	local a=$TESTDIR/race-a b=$TESTDIR/race-b
	rm -rf "$a" "$b" "$a.go" "$b.go"
	CAIRN_TEST_CLAIM_WAIT=$a.go "$CAIRN" -s "$a" init --chunks "$1" >/dev/null 2>"$a.err" &
	local apid=$!
	wait_sleeping $apid
	CAIRN_TEST_CLAIM_WAIT=$b.go "$CAIRN" -s "$b" init --chunks "$1" >/dev/null 2>"$b.err" &
	local bpid=$!
	wait_sleeping $bpid
	: >"$a.go"
	wait $apid || fail "the first of two racing inits failed: $(cat "$a.err")"
	: >"$b.go"
	wait $bpid
	local rb=$?
	[ $rb = 1 ] && grep -q "another store claimed it meanwhile" "$b.err" ||
		fail "the second of two racing inits (exit $rb): $(cat "$b.err")"
	[ -e "$b" ] && fail "the init that lost the race left $b"
	sed -n 's/^store_id = //p' "$a/backend.conf" >"$a.id"
	[ -s "$a.id" ] || fail "the winner recorded no store_id"
}

# The mount tests need /dev/fuse and fusermount3: a skip outside CI, a
# failure under CI.
need_fuse() {
	if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		[ "${CI:-}" = true ] && { echo "FAIL: /dev/fuse or fusermount3 missing under CI"; exit 1; }
		echo "no /dev/fuse or fusermount3"
		exit 77
	fi
}

new_store() {
	rm -rf "$CAIRN_STORE"
	"$CAIRN" init >/dev/null || fail "init"
}

# random_volume SIZE SNAP: the volume vol over SIZE random bytes (the
# image $TESTDIR/vol.img), and its snapshot vol@SNAP.
random_volume() {
	head -c "$1" /dev/urandom >"$TESTDIR/vol.img"
	ok cairn create -V -o source="$TESTDIR/vol.img" vol
	ok cairn snapshot "vol@$2"
}

# loop_target: $loop, a loop device (root only) over $TESTDIR/tgt.img,
# 4 MiB of random bytes, whose first contents $TESTDIR/tgt.orig keeps.
loop_target() {
	head -c 4194304 /dev/urandom >"$TESTDIR/tgt.img"
	cp "$TESTDIR/tgt.img" "$TESTDIR/tgt.orig"
	loop=$(losetup -f --show "$TESTDIR/tgt.img") || fail "losetup"
}

# second_store: a new, empty store at $B for replication tests; ca runs
# cairn on the first store, cb on this one.
second_store() {
	B=$TESTDIR/b
	rm -rf "$B"
	"$CAIRN" -s "$B" init >/dev/null || fail "init $B"
}
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }

# tank_with_kid: $T (3 MB of random bytes in f, 3 MB more in kid/g) as the
# source of tank and tank/kid on the first store, snapshot together as @s1.
tank_with_kid() {
	T=$TESTDIR/src
	mkdir -p "$T/kid"
	head -c 3000000 /dev/urandom >"$T/f"
	head -c 3000000 /dev/urandom >"$T/kid/g"
	ok ca create -o source="$T" tank
	ok ca create tank/kid
	ok ca snapshot -r tank@s1
}

# racy_first_snapshot: $SRC/racy, a 41-byte file with an old mtime, taken
# into tank@one under the coarse-ctime shim, which shows whole-second
# times below $SRC and freezes racy's ctime at that backup's second.
racy_first_snapshot() {
	printf 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n' >"$SRC/racy"
	touch -d '@981173106' "$SRC/racy"
	build_shim coarse-ctime
	ok cairn create -o source="$SRC" tank
	export COARSE_ROOT=$(realpath "$SRC") FREEZE_NAME=racy FREEZE_STATE=$TESTDIR/frozen
	shimmed tank@one "froze racy"
	[ $rc = 0 ] || fail "tank@one: exit $rc: $out"
}

# third_store: a new, empty store at $C (a second sender, or a second
# receiver); from then on cc runs cairn on it.  (Defined only here, not
# for every test: cc is also the C compiler, which build_shim runs.)
third_store() {
	C=$TESTDIR/c
	rm -rf "$C"
	"$CAIRN" -s "$C" init >/dev/null || fail "init $C"
	cc() { "$CAIRN" -s "$C" "$@"; }
}

# recv_state DS: each dataset and snapshot at or under DS on the second
# store with its guid, then each one's resume token: what a refused
# receive must leave as it was.
recv_state() {
	cb list -H -p -o name,guid -t all -r "$1"
	cb get -r -H -o name,value receive_resume_token "$1"
}

# cut_recv DS STREAM [STORE]: recv -s of the first half of the stream in
# the file STREAM into DS, on the second store (or on STORE: a function
# like cb), is refused and leaves partial state there; $tok is DS's
# resume token.
cut_recv() {
	local ds=$1 stream=$2 on=${3:-cb}
	head -c $(($(stat -c %s "$stream") / 2)) "$stream" | "$on" recv -s "$ds" >/dev/null 2>&1 &&
		fail "the cut stream into $ds was received"
	tok=$("$on" get -H -o value receive_resume_token "$ds")
	case $tok in 3-* | 2-*) ;; *) fail "the cut left no partial state on $ds: $tok" ;; esac
}

# top_and_kid: a new store and a second one ($B), and a source $S with a
# file at its top and one in $S/k (for a dataset p over $S, p/k over $S/k).
top_and_kid() {
	new_store
	second_store
	S=$TESTDIR/src
	mkdir -p "$S/k"
	echo top >"$S/f"
	echo k >"$S/k/f"
}
# names DS / snaps DS: what the second store holds under DS, every type or
# snapshots only, on one line.
names() { cb list -H -o name -t all -r "$1" 2>/dev/null | tr '\n' ' '; }
snaps() { cb list -H -o name -t snapshot -r "$1" | tr '\n' ' '; }

# rnd FILE: 500 kB of random bytes (several 64 KiB chunks, none shared).
rnd() { head -c 500000 /dev/urandom >"$1"; }

# three_groups S3KIDS KID...: on a new store with 64 KiB chunks (and a
# second one, $B), tank over $T with a child tank/KID for each KID, and
# snapshots tank@s1, s2 and s3, each after a new random file in $T and
# in each child's directory (for s3 only in those of S3KIDS, a list that
# may be empty).  A -R -I stream of s1..s3 then has two groups of about
# 0.5-1 MB each, for the resume tests to cut inside one.
three_groups() {
	local s3kids=$1 k
	shift
	new_store
	second_store
	ok ca config chunk_size=65536 >/dev/null
	mkdir -p "$T"
	ok ca create -o source="$T" tank
	for k; do
		mkdir -p "$T/$k"
		ok ca create "tank/$k"
	done
	rnd "$T/f"
	for k; do rnd "$T/$k/$(kid_file "$k")"; done
	ok ca snapshot -r tank@s1
	rnd "$T/f2"
	for k; do rnd "$T/$k/$(kid_file "$k")2"; done
	ok ca snapshot -r tank@s2
	rnd "$T/f3"
	for k in $s3kids; do rnd "$T/$k/$(kid_file "$k")3"; done
	ok ca snapshot -r tank@s3
}
# kid_file KID: the name of the random files in KID's directory (w: g, x: h)
kid_file() { case $1 in w) echo g ;; x) echo h ;; *) echo "$1f" ;; esac; }

# cut_s1_s3 BYTES PATTERN: tk on $B gets tank@s1 whole, then a send -R -I
# of s1..s3 (kept in $TESTDIR/i) cut after BYTES; sets tok to the resume
# token it left, which must match PATTERN (a case pattern).
cut_s1_s3() {
	ca send -R tank@s1 | cb recv tk || fail "full send -R"
	ca send -R -I @s1 tank@s3 >"$TESTDIR/i" || fail "send -R -I"
	head -c "$1" "$TESTDIR/i" | cb recv -s tk 2>/dev/null && fail "a cut stream was received"
	tok=$(cb get -H -o value receive_resume_token tk)
	# shellcheck disable=SC2254
	case $tok in $2) ;; *) fail "the cut receive left no partial state: $tok" ;; esac
}

# eio_shim: builds tests/cli/chunk-eio.c into $SHIM, an LD_PRELOAD shim
# that fails a call on a chunk with EIO (see its head for EIO_CALL and
# EIO_KEEP).
eio_shim() {
	SHIM=$TESTDIR/chunk-eio.so
	cc -shared -fPIC -o "$SHIM" "$(dirname "${BASH_SOURCE[0]}")/chunk-eio.c" -ldl ||
		fail "cannot build the shim"
}

# flip_byte FILE: every bit of the byte in the middle of FILE inverted (a
# fixed value written there changes nothing when the data already has it,
# once in 256 runs of random data).
flip_byte() {
	local mid byte
	mid=$(($(stat -c %s "$1") / 2))
	byte=$(od -An -tu1 -j "$mid" -N1 "$1" | tr -d ' ')
	printf "\\x$(printf %02x $((byte ^ 0xff)))" | dd of="$1" bs=1 seek="$mid" conv=notrunc status=none
}

# drop_group_chunk IN OUT WHICH: copies the send stream IN to OUT without
# one CHUNK record of its second group (every other record keeps its own
# checksum): WHICH is "first" (the group's first chunk, a data chunk) or
# "index" (the last chunk before the group's first SNAPEND: its first
# snapshot's index root, which goes out after the data chunks).
drop_group_chunk() {
	command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
	python3 - "$@" <<'PY' || fail "cannot edit the stream"
import struct, sys
data = open(sys.argv[1], "rb").read()
which = sys.argv[3]
CHUNK, SNAPEND, GROUPEND = 5, 6, 8
recs, off, groups = [], 12, 0
while off < len(data):
    t, n = struct.unpack_from("<BI", data, off)
    recs.append((t, groups, data[off:off + 13 + n]))
    off += 13 + n
    groups += t == GROUPEND
chunks = [i for i, (t, g, _) in enumerate(recs) if t == CHUNK and g == 1]
end = next(i for i, (t, g, _) in enumerate(recs) if t == SNAPEND and g == 1)
drop = chunks[0] if which == "first" else max(i for i in chunks if i < end)
assert groups == 2, groups
open(sys.argv[2], "wb").write(data[:12] + b"".join(r for i, (_, _, r) in enumerate(recs) if i != drop))
PY
}

# past_racy_tick: waits out the timestamp tick of the source's last change
# (the kernel's coarse clock, at most 10 ms), so that a backup taken next
# does not record a file changed in it as racy (docs/DESIGN.md, "Writing a
# snapshot"), which the backup after it would read again although unchanged.
past_racy_tick() { sleep 0.1; }

# ---- LD_PRELOAD shims that disturb a backup (dir-swap.c, link-swap.c) ----

# build_shim NAME: compiles tests/cli/NAME.c into $SHIM.  ASan insists on
# coming first among preloaded libraries; these shims only wrap a call or
# two, so the order does not matter ($SHIM_ASAN says so).
build_shim() {
	SHIM=$TESTDIR/$1.so
	cc -shared -fPIC -o "$SHIM" "$(dirname "$0")/$1.c" -ldl || fail "cannot build the shim $1"
	SHIM_ASAN=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0
}

# shimmed DS@SNAP LOGGED VAR=VALUE...: snapshot DS@SNAP under $SHIM, set
# up by the VAR=VALUEs; sets $out and $rc; fails unless the shim logged
# LOGGED (it acted).
shimmed() {
	local snap=$1 logged=$2
	shift 2
	rm -f "$TESTDIR/swap.log"
	out=$(env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" SWAP_LOG="$TESTDIR/swap.log" "$@" \
		"$CAIRN" snapshot "$snap" 2>&1)
	rc=$?
	grep -q "$logged" "$TESTDIR/swap.log" 2>/dev/null || fail "$snap: the shim did not act ($logged)"
}

# reported DS@SNAP WHAT: that snapshot exited 1 naming WHAT (a pattern)
# as changed during the backup.
reported() {
	[ $rc -eq 1 ] || fail "$1: a disturbed snapshot exited $rc: $out"
	echo "$out" | grep -q "$2.*changed during the backup" || fail "$1: not reported: $out"
}

# settles DS@SNAP SRC: the next snapshot, taken undisturbed, restores
# (into $R/DS@SNAP) as SRC is.
settles() {
	ok cairn snapshot "$1"
	ok cairn restore "$1" "$R/$1"
	same_tree "$2" "$R/$1"
}

done_test() {
	local noted
	noted=$(cat "$TESTDIR/.fails" 2>/dev/null | wc -l)
	[ "$noted" -gt $fails ] && fails=$noted
	if [ $fails -gt 0 ]; then
		echo "$fails failures"
		exit 1
	fi
	exit 0
}
