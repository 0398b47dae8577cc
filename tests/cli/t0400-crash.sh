#!/bin/bash
# tier: stress
# Crash test: kill -9 `cairn snapshot` and `cairn restore` at random moments
# and check that the store only ever shows the old or the new state.
#
# Each round changes the source, starts a snapshot (recursive every other
# round, so two datasets share one transaction) in the background and kills
# it after 0..W-1 ms, where W starts at KILL_MS (default 300) and shrinks
# to three quarters of the last uninterrupted snapshot's time whenever a
# snapshot finished before its kill: a fast machine still sees kills land
# before the commit.  Then:
#   - a snapshot whose command exited 0 is listed;
#   - a killed snapshot is either not listed at all or listed completely
#     (the kill came after the commit): -r snapshots are all-or-none;
#   - a killed, unlisted snapshot is taken again under the same name and
#     that must succeed;
#   - the newest snapshot is restored, the restore is killed after 0..150 ms
#     (a window that shrinks the same way),
#     and `restore --force` into the same directory must complete;
#   - restored trees must match the checksum manifest of the source saved
#     when the snapshot was taken (content, types, modes, owners, sizes,
#     mtimes, symlink targets).
# Every FULL_EVERY rounds (default: only at the end) every listed snapshot
# is restored and compared; in between, one random one every other round.
# At the end every chunk file with a final (64 hex) name must be a whole,
# valid blob whose plain bytes hash to its name, and the catalog must pass
# SQLite's integrity check.  Temporary files may remain.  When run as root,
# restore --force over an earlier (killed or finished) restore is also
# checked as user nobody, where read-only restored files get in the way.
#
# The test fails unless it covered what it claims: at least ROUNDS/5
# snapshots killed before their commit, at least one that reached it (rounds
# 5, 15, ... kill only once the snapshot is listed), and at least ROUNDS/5
# restores killed.
# ROUNDS (default 25) sets the number of rounds; tests/cli/long-crash.sh runs
# this script with ROUNDS=300.  KEEP_GOING=1 goes on after a failed round.
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-25}
FULL_EVERY=${FULL_EVERY:-0}
KILL_MS=${KILL_MS:-300} # snapshots are killed after 0..KILL_MS-1 ms
new_store

SRC=$TESTDIR/src
MAN=$TESTDIR/man # one manifest per committed snapshot, named by its escaped name
mkdir -p "$SRC" "$MAN"
cp -a /usr/include/linux "$SRC/linux"
# About 330 small files are plenty for bundles; each restore creates them all.
find "$SRC/linux" -type f ! -name '[a-k]*' -delete
for i in 0 1 2; do
	head -c $(((1 + RANDOM % 4) * 1048576)) /dev/urandom >"$SRC/big$i.bin"
done
ln -s linux/kernel.h "$SRC/link"
ln "$SRC/big0.bin" "$SRC/hard"
mkfifo "$SRC/fifo"
: >"$SRC/empty"
truncate -s 8M "$SRC/sparse"
mkdir -p "$SRC/ro/sub" && echo ro >"$SRC/ro/sub/f" && chmod 555 "$SRC/ro"
echo readonly >"$SRC/readonly" && chmod 444 "$SRC/readonly"
echo private >"$SRC/private" && chmod 400 "$SRC/private"

ok cairn create -o source="$SRC" -o chunksize=64K -o compression=zstd-9 tank
ok cairn create tank/linux # inherits source $SRC/linux

# Counters for the summary.
window=$KILL_MS rwindow=150 # kill windows (ms) for snapshots and restores
n_done=0 n_killed_before=0 n_killed_after=0 n_rkilled=0 n_verified=0

esc() { echo "${1//\//%}"; }

# manifest DIR: everything a faithful restore reproduces, one line per item.
manifest() {
	(
		cd "$1" || exit 1
		find . ! -type d -printf '%p %y %m %U:%G %s %T@ %l\n' | LC_ALL=C sort
		find . -type d -printf '%p %m %U:%G %T@\n' | LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum
	)
}

# rmtree DIR: moves DIR away at once and deletes it in the background.
ntrash=0
rmtree() {
	[ -e "$1" ] || return 0
	ntrash=$((ntrash + 1))
	mv "$1" "$TESTDIR/trash.$ntrash"
	(chmod -R u+w "$TESTDIR/trash.$ntrash" 2>/dev/null; rm -rf "$TESTDIR/trash.$ntrash") &
}

# mutate ROUND: small and large changes, additions and removals.
mutate() {
	local r=$1 f
	chmod u+w "$SRC/ro"
	mapfile -t f < <(find "$SRC/linux" -type f -name '*.h' | shuf -n 3)
	echo "/* round $r */" >>"${f[0]}"
	[ $((RANDOM % 2)) = 0 ] && rm -f "${f[1]}"
	touch -d "@$((1000000000 + RANDOM))" "${f[2]}"
	echo "new $r $RANDOM" >"$SRC/linux/new-$r.h"
	echo "$r" >"$SRC/ro/sub/f"
	chmod 555 "$SRC/ro"
	local i=$((RANDOM % 3)) j
	j=$(((i + 1) % 3))
	head -c $(((1 + RANDOM % 6) * 1048576)) /dev/urandom >"$SRC/big$i.bin"
	dd if=/dev/urandom of="$SRC/big$j.bin" bs=64k count=4 seek=$((RANDOM % 48)) \
		conv=notrunc status=none
	head -c $((RANDOM * 40)) /dev/urandom | base64 >"$SRC/text.b64"
	printf 'r%d' "$r" | dd of="$SRC/sparse" bs=1 seek=$((RANDOM * 240)) conv=notrunc status=none
	if [ $((RANDOM % 4)) = 0 ]; then
		rm -f "$SRC/link" && ln -s "linux/new-$r.h" "$SRC/link"
	fi
}

# save_manifests NAME RECURSIVE: what snapshot NAME (and tank/linux@.. with -r) must restore to.
save_manifests() {
	manifest "$SRC" >"$TESTDIR/pending.tank"
	[ "$2" = 1 ] && manifest "$SRC/linux" >"$TESTDIR/pending.linux"
	return 0
}

# commit_manifests SNAP RECURSIVE: the snapshot is known to be committed.
commit_manifests() {
	mv "$TESTDIR/pending.tank" "$MAN/$(esc "tank@$1")"
	[ "$2" = 1 ] && mv "$TESTDIR/pending.linux" "$MAN/$(esc "tank/linux@$1")"
	return 0
}

listed() { "$CAIRN" list -H -o name -t snapshot; }

is_listed() { listed | grep -qxF -- "$1"; }

# check_list: exactly the committed snapshots are listed.
check_list() {
	local got want
	got=$(listed) || {
		fail "list failed"
		return
	}
	want=$(ls "$MAN" | sed 's/%/\//g' | LC_ALL=C sort)
	got=$(echo "$got" | LC_ALL=C sort)
	[ "$got" = "$want" ] || {
		fail "listed snapshots differ from committed ones"
		diff <(echo "$want") <(echo "$got") | head -5 >&2
	}
}

# verify SNAP [DIR]: SNAP restores (exit 0) to exactly its manifest.
verify() {
	local s=$1 d=${2:-$TESTDIR/verify} out
	if [ -z "${2:-}" ]; then
		rmtree "$d"
		out=$("$CAIRN" restore "$s" "$d" 2>&1) || {
			fail "restore $s: $out"
			return
		}
	fi
	manifest "$d" >"$TESTDIR/got"
	cmp -s "$TESTDIR/got" "$MAN/$(esc "$s")" || {
		fail "restore of $s differs from the source it was taken from"
		diff "$MAN/$(esc "$s")" "$TESTDIR/got" | head -5 >&2
	}
	n_verified=$((n_verified + 1))
}

verify_all() {
	local s
	for s in $(listed); do
		verify "$s"
	done
}

# kill_after MS PID: SIGKILL PID after 0..MS-1 milliseconds; its exit code
# goes to $rc (137 when the kill came first).  No subshell: only the shell
# that started PID can wait for it.
kill_after() {
	sleep "$(printf '0.%03d' $((RANDOM % $1)))"
	kill -9 "$2" 2>/dev/null
	wait "$2" 2>/dev/null
	rc=$?
}

# kill_at_commit PID SNAP: SIGKILL PID as soon as SNAP is listed (the commit
# point is reached; the kill lands after it, or finds PID gone); rc as above.
kill_at_commit() {
	while kill -0 "$1" 2>/dev/null && ! is_listed "$2"; do sleep 0.005; done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	rc=$?
}

for round in $(seq 1 "$ROUNDS"); do
	name=r$round
	rec=$((round % 2))
	mutate "$round"
	save_manifests "$name" "$rec"
	args=(snapshot)
	[ $rec = 1 ] && args+=(-r)
	started=$(date +%s%N)
	"$CAIRN" "${args[@]}" "tank@$name" >"$TESTDIR/snap.log" 2>&1 &
	if [ $((round % 10)) = 5 ]; then
		kill_at_commit $! "tank@$name"
	else
		kill_after "$window" $!
		# Finished first: aim the next kills inside the time it took.
		[ "$rc" = 0 ] && window=$(((($(date +%s%N) - started) / 1000000) * 3 / 4 + 1))
	fi
	a=0 b=0
	is_listed "tank@$name" && a=1
	is_listed "tank/linux@$name" && b=1
	case $rc in
	0)
		n_done=$((n_done + 1))
		[ $a = 1 ] || fail "round $round: snapshot exited 0 but tank@$name is not listed"
		;;
	137)
		if [ $a = 1 ]; then
			n_killed_after=$((n_killed_after + 1))
		else
			n_killed_before=$((n_killed_before + 1))
		fi
		;;
	*)
		fail "round $round: snapshot exited $rc: $(cat "$TESTDIR/snap.log")"
		;;
	esac
	[ $rec = 1 ] && [ $a != $b ] && fail "round $round: -r snapshot half committed (tank $a, tank/linux $b)"
	[ $rec = 0 ] && [ $b = 1 ] && fail "round $round: tank/linux@$name appeared without -r"
	if [ $a = 0 ]; then
		# Killed before the commit: the same name must work now.
		out=$("$CAIRN" "${args[@]}" "tank@$name" 2>&1) ||
			fail "round $round: re-run of killed snapshot tank@$name failed: $out"
		is_listed "tank@$name" || fail "round $round: re-run tank@$name not listed"
	fi
	is_listed "tank@$name" && commit_manifests "$name" "$rec"
	check_list

	# Kill a restore of the newest snapshot, then finish it with --force.
	if is_listed "tank@$name"; then
		rd=$TESTDIR/restore
		rmtree "$rd"
		started=$(date +%s%N)
		"$CAIRN" restore "tank@$name" "$rd" >"$TESTDIR/restore.log" 2>&1 &
		kill_after "$rwindow" $!
		[ "$rc" = 0 ] && rwindow=$(((($(date +%s%N) - started) / 1000000) * 3 / 4 + 1))
		[ "$rc" = 137 ] && n_rkilled=$((n_rkilled + 1))
		[ "$rc" = 0 ] || [ "$rc" = 137 ] ||
			fail "round $round: restore exited $rc: $(cat "$TESTDIR/restore.log")"
		if out=$("$CAIRN" restore --force "tank@$name" "$rd" 2>&1); then
			verify "tank@$name" "$rd"
		else
			fail "round $round: restore --force after a killed restore failed: $out"
		fi
	fi

	# One random older snapshot every other round, or all of them now and then.
	if [ "$FULL_EVERY" -gt 0 ] && [ $((round % FULL_EVERY)) = 0 ]; then
		verify_all
	elif [ $((round % 2)) = 0 ]; then
		s=$(listed | shuf -n 1)
		[ -n "$s" ] && verify "$s"
	fi
	[ $fails -gt 0 ] && [ -z "${KEEP_GOING:-}" ] && break
done

verify_all
check_list

# Every final-name chunk file is a whole blob of the digest it is named by;
# names are either final names or temporary names.
if command -v python3 >/dev/null; then
	out=$(python3 - "$CAIRN_STORE/.chunks" <<'EOF'
import ctypes, hashlib, os, re, struct, sys
root = sys.argv[1]
final = re.compile(r'[0-9a-f]{64}\Z')
temp = re.compile(r'([0-9a-f]{64})\.tmp\.\d+\.\d+\Z')
try:
    zstd = ctypes.CDLL("libzstd.so.1")
    zstd.ZSTD_decompress.restype = ctypes.c_size_t
    zstd.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    zstd.ZSTD_isError.restype = ctypes.c_uint
    zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]
except OSError:
    zstd = None
try:
    xxh = ctypes.CDLL("libxxhash.so.0")
    xxh.XXH3_64bits.restype = ctypes.c_uint64
    xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
except OSError:
    xxh = None
bad, finals, temps, unchecked = [], 0, 0, 0
for sub in sorted(os.listdir(root)):
    for name in os.listdir(os.path.join(root, sub)):
        path = os.path.join(root, sub, name)
        if temp.match(name):
            temps += 1
            continue
        if not final.match(name) or name[:4] != sub:
            bad.append(f"{sub}/{name}: unexpected name")
            continue
        finals += 1
        b = open(path, "rb").read()
        if len(b) < 24 or b[:4] != b"CRNB":
            bad.append(f"{sub}/{name}: bad header ({len(b)} bytes)")
            continue
        ver, flags, res, plain_len, pay_len, xx = struct.unpack_from("<BBHIIQ", b, 4)
        if ver != 1 or flags & ~1 or res or pay_len != len(b) - 24 or plain_len > 32 << 20:
            bad.append(f"{sub}/{name}: bad header fields or truncated "
                       f"(payload {pay_len}, file {len(b)})")
            continue
        payload = b[24:]
        if xxh and xxh.XXH3_64bits(payload, len(payload)) != xx:
            bad.append(f"{sub}/{name}: payload checksum mismatch")
            continue
        if flags & 1:
            if not zstd:
                unchecked += 1
                continue
            out = ctypes.create_string_buffer(max(plain_len, 1))
            n = zstd.ZSTD_decompress(out, plain_len, payload, len(payload))
            if zstd.ZSTD_isError(n) or n != plain_len:
                bad.append(f"{sub}/{name}: does not decompress")
                continue
            plain = out.raw[:plain_len]
        else:
            plain = payload
        if len(plain) != plain_len or hashlib.sha256(plain).hexdigest() != name:
            bad.append(f"{sub}/{name}: content does not hash to its name")
for x in bad[:10]:
    print("BAD", x)
print(f"chunks: {finals} final, {temps} temporary, {unchecked} not decoded, {len(bad)} bad")
sys.exit(1 if bad else 0)
EOF
	) || fail "damaged chunk files: $out"
	echo "$out" | tail -n 1
else
	echo "python3 missing: chunk files not checked"
fi

# As a user other than root, restore --force over what an earlier restore
# (killed or not) left must work too: restored files are read-only when
# their snapshot says so.  Root never sees this, so when the test runs as
# root, repeat it as nobody on a small store of its own.
nonroot_force() {
	local nr=$TESTDIR/nonroot out
	mkdir -p "$nr/src/ro"
	echo a >"$nr/src/ro/f"
	echo b >"$nr/src/private"
	head -c 3000000 /dev/urandom >"$nr/src/big"
	chown -R 65534:65534 "$nr"
	chmod 444 "$nr/src/ro/f" "$nr/src/big"
	chmod 400 "$nr/src/private"
	chmod 555 "$nr/src/ro"
	chmod 711 "$TESTDIR"
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env CAIRN_STORE="$nr/store" "$CAIRN" "$@"; }
	# In the background, a function runs in a subshell: without exec, $!
	# would be that shell, and killing it would leave the restore running
	# beside the next one (it then made ro/ read-only under it).
	nobody_exec() { exec setpriv --reuid=65534 --regid=65534 --clear-groups env CAIRN_STORE="$nr/store" "$CAIRN" "$@"; }
	nobody init >/dev/null && nobody create -o source="$nr/src" nr && nobody snapshot nr@1 || {
		fail "non-root: could not set up a store"
		return
	}
	out=$(nobody restore nr@1 "$nr/r" 2>&1) || fail "non-root restore: $out"
	local i kills=0 t0 ms
	t0=$(date +%s%N)
	out=$(nobody restore --force nr@1 "$nr/r" 2>&1) ||
		fail "non-root restore --force over a finished restore: $out"
	# Kill inside the time a whole restore takes here.
	ms=$((($(date +%s%N) - t0) / 1000000 * 3 / 4 + 1))
	for i in $(seq 1 20); do
		rm -rf "$nr/k"
		nobody_exec restore nr@1 "$nr/k" >/dev/null 2>&1 &
		kill_after "$ms" $!
		[ "$rc" = 137 ] && kills=$((kills + 1))
		out=$(nobody restore --force nr@1 "$nr/k" 2>&1) || {
			fail "non-root restore --force after a killed restore: $out"
			break
		}
		[ $kills -ge 3 ] && break
	done
	[ $kills -gt 0 ] || fail "non-root: no restore was killed in 20 tries (window $ms ms)"
	[ "$(cat "$nr/r/ro/f" 2>/dev/null)" = a ] && cmp -s "$nr/src/big" "$nr/r/big" ||
		fail "non-root restore --force: wrong content"
	chmod 700 "$TESTDIR"
}
# restore --force of a snapshot over the restore of another one, where a
# path changed type: a FIFO, a symlink or a directory became a regular
# file.  (The crash loop only ever finishes a restore of the same
# snapshot.)  Bounded by a timeout: opening a FIFO for writing blocks.
type_change_force() {
	local kind=$1 s=$TESTDIR/swap-$1 t=$TESTDIR/swap-$1-restore out rc
	mkdir -p "$s"
	echo same >"$s/other"
	case $kind in
	fifo) mkfifo "$s/p" ;;
	symlink) ln -s nowhere "$s/p" ;;
	dir) mkdir "$s/p" && echo inside >"$s/p/f" ;;
	esac
	ok cairn create -o source="$s" "swap-$kind"
	ok cairn snapshot "swap-$kind@a"
	rm -rf "${s:?}/p"
	echo new-data >"$s/p"
	ok cairn snapshot "swap-$kind@b"
	ok cairn restore "swap-$kind@a" "$t"
	out=$(timeout 10 "$CAIRN" restore --force "swap-$kind@b" "$t" 2>&1)
	rc=$?
	[ $rc = 124 ] && out="hung (killed after 10 s)"
	if [ "$kind" = dir ] && [ $rc = 1 ] && echo "$out" | grep -q 'file p'; then
		return # refusing to delete a directory, and saying so, is fine (tar does too)
	fi
	[ $rc = 0 ] || fail "restore --force over a restore where a $kind became a file: exit $rc: $out"
	[ -f "$t/p" ] && [ ! -L "$t/p" ] && [ "$(cat "$t/p")" = new-data ] ||
		fail "restore --force: the $kind p is not the regular file of swap-$kind@b"
	[ "$(cat "$t/other")" = same ] || fail "restore --force: other file of swap-$kind@b"
}
for kind in fifo symlink dir; do
	type_change_force $kind
done

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$CAIRN"; then
	nonroot_force
fi

if command -v sqlite3 >/dev/null; then
	ic=$(sqlite3 "$CAIRN_STORE/catalog.db" 'PRAGMA integrity_check' 2>&1)
	[ "$ic" = ok ] || fail "catalog integrity: $ic"
fi

echo "$ROUNDS rounds: $n_done snapshots completed, $n_killed_before killed before commit," \
	"$n_killed_after killed after commit, $n_rkilled restores killed, $n_verified restores verified"
# The test checks its own coverage: kills before the commit point, the
# commit point reached (a completed or after-commit-killed snapshot), and
# killed restores.  Every tenth round (5, 15, ...) waits for the commit
# before its kill, so the commit point is always reached.
min=$((ROUNDS / 5))
[ $n_killed_before -ge $min ] || fail "only $n_killed_before snapshots killed before their commit (want >= $min)"
[ $((n_done + n_killed_after)) -ge 1 ] || fail "no snapshot reached its commit point"
[ $n_rkilled -ge $min ] || fail "only $n_rkilled restores killed (want >= $min)"
wait # background deletions
chmod -R u+w "$TESTDIR" 2>/dev/null
done_test
