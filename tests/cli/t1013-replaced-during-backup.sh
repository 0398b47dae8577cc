#!/bin/bash
# A file replaced by another (renamed over its name, as editors and atomic
# writers do) between the walk's stat and the read: the entry holds the
# stat's mode, owner, times and size, so reading the new file's bytes into
# it recorded a file that never existed (the old one's mode and size, the
# new one's content cut to that size), silently.  Now the open sees another
# inode: the file is left out naming it (exit 1), and the next backup has
# the new file.  The races are made certain with strace: a small file is
# read when its bundle is packed, so the swap is done once the first file
# of the group is being opened; a large one is read right after its stat,
# but in an incremental backup the statahead helper stats it ahead.
. "$(dirname "$0")/lib.sh"
new_store
command -v strace >/dev/null || { echo "needs strace"; exit 77; }
SRC=$TESTDIR/src
mkdir "$SRC"
for i in 1 2 3 4 5; do echo "file $i" >"$SRC/f$i"; done
printf 'OLD-CONTENT\n' >"$SRC/victim" && chmod 644 "$SRC/victim"
head -c 3000000 /dev/urandom >"$SRC/big" && chmod 644 "$SRC/big"
ok cairn create -o source="$SRC" tank

# swap_traced INJECT PATTERN SNAP NEW NAME: runs `snapshot tank@SNAP`
# under strace with INJECT on the openat calls under $SRC (delays); once
# its trace shows PATTERN, renames NEW over $SRC/NAME.  Sets $out and $rc;
# fails when PATTERN never showed (the swap did not happen in the window).
swap_traced() {
	local inject=$1 pattern=$2 snap=$3 new=$4 name=$5
	rm -f "$TESTDIR/trace"
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o "$TESTDIR/trace" -P "$SRC" \
		-e trace=openat,newfstatat -e inject="$inject" \
		"$CAIRN" snapshot "tank@$snap" >"$TESTDIR/out" 2>&1 &
	local pid=$! got=0
	for _ in $(seq 1000); do
		if grep -q "$pattern" "$TESTDIR/trace" 2>/dev/null; then
			got=1
			break
		fi
		sleep 0.01
	done
	[ $got = 1 ] && mv "$new" "$SRC/$name"
	wait $pid
	rc=$?
	out=$(cat "$TESTDIR/out")
	[ $got = 1 ] || fail "the backup never reached '$pattern' in its trace: $out"
}

# 1. a small file, replaced while it waits for its bundle
head -c 5000 /dev/urandom | base64 >"$TESTDIR/new" && chmod 600 "$TESTDIR/new"
# (every open under the source is held 0.2 s; the swap follows the one of f1)
swap_traced openat:delay_enter=200000 'openat([0-9]*, "f1".*DELAYED' victim "$TESTDIR/new" victim
[ $rc = 1 ] || fail "a replaced small file: exit $rc ($out)"
echo "$out" | grep -q "victim: replaced by another file" || fail "the replaced file is not named: $out"
ok cairn restore tank@victim "$TESTDIR/r1"
if [ -e "$TESTDIR/r1/victim" ]; then
	fail "recorded as $(stat -c '%s bytes, mode %a' "$TESTDIR/r1/victim"): $(head -c 20 "$TESTDIR/r1/victim")"
fi
cmp -s "$SRC/f1" "$TESTDIR/r1/f1" || fail "the other files were not stored"
ok cairn snapshot tank@after1
ok cairn restore tank@after1 "$TESTDIR/a1"
cmp -s "$SRC/victim" "$TESTDIR/a1/victim" && [ "$(stat -c %a "$TESTDIR/a1/victim")" = 600 ] ||
	fail "the next backup does not have the new file"

# 2. a large file, replaced after its stat: in an incremental backup the
# statahead helper stats ahead of the walk, which is held meanwhile in the
# open of a-big (changed, so read again), before big (changed too)
head -c 3000000 /dev/urandom >"$SRC/a-big"
ok cairn snapshot tank@before2
head -c 3000000 /dev/urandom >"$SRC/a-big"
head -c 3000000 /dev/urandom >"$SRC/big" # changed too: an unchanged one is not read
head -c 4000000 /dev/urandom >"$TESTDIR/newbig" && chmod 600 "$TESTDIR/newbig"
swap_traced openat:delay_enter=1000000 'newfstatat([0-9]*, "big"' big "$TESTDIR/newbig" big
grep -q 'openat([0-9]*, "big".*= [0-9]' "$TESTDIR/trace" || fail "big was not opened"
[ $rc = 1 ] || fail "a replaced large file: exit $rc ($out)"
echo "$out" | grep -q "big: replaced by another file" || fail "the replaced large file is not named: $out"
ok cairn restore tank@big "$TESTDIR/r2"
if [ -e "$TESTDIR/r2/big" ]; then
	fail "big recorded as $(stat -c '%s bytes, mode %a' "$TESTDIR/r2/big") (it was 3000000/644, then 4000000/600)"
fi
ok cairn snapshot tank@after2
ok cairn restore tank@after2 "$TESTDIR/a2"
cmp -s "$SRC/big" "$TESTDIR/a2/big" || fail "the next backup does not have the new big"

# 3. a sparse file truncated while it is read: once the read found no
# data past its last extent, the entry took the old size as a trailing
# hole (a restore gave 8 MiB for a file cut to 6 MiB).  The size recorded
# is where the file ends now, as when a dense file shrinks under the read.
# The read's second SEEK_DATA (its third lseek) is held while the file
# shrinks; the one before it, SEEK_HOLE, shows in the trace.
truncate -s 8M "$SRC/sparse"
head -c 1000000 /dev/urandom | dd of="$SRC/sparse" bs=1M seek=4 conv=notrunc status=none
ok cairn snapshot tank@before3
touch -d '1 hour ago' "$SRC/sparse" # changed, so the backup reads it again
rm -f "$TESTDIR/trace"
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o "$TESTDIR/trace" -P "$SRC/sparse" \
	-e trace=lseek -e inject=lseek:delay_enter=1000000:when=3 \
	"$CAIRN" snapshot tank@shrunk >"$TESTDIR/out" 2>&1 &
pid=$! got=0
for _ in $(seq 1000); do
	grep -q 'lseek(.*SEEK_HOLE' "$TESTDIR/trace" 2>/dev/null && { got=1; break; }
	sleep 0.01
done
[ $got = 1 ] && truncate -s 6M "$SRC/sparse"
wait $pid || fail "backup of a shrinking sparse file: $(cat "$TESTDIR/out")"
[ $got = 1 ] || fail "the backup never reached SEEK_HOLE on sparse: $(cat "$TESTDIR/out")"
grep -q 'SEEK_DATA.*DELAYED' "$TESTDIR/trace" || fail "the second SEEK_DATA was not held: $(cat "$TESTDIR/trace")"
ok cairn restore tank@shrunk "$TESTDIR/r3"
size=$(stat -c %s "$TESTDIR/r3/sparse")
[ "$size" = 6291456 ] || fail "sparse recorded as $size bytes after it shrank to 6 MiB"
cmp -s "$TESTDIR/r3/sparse" "$SRC/sparse" || fail "sparse restored unlike the file it was"
ok cairn snapshot tank@after3
ok cairn restore tank@after3 "$TESTDIR/a3"
cmp -s "$SRC/sparse" "$TESTDIR/a3/sparse" || fail "the next backup does not have the shrunk sparse file"
done_test
