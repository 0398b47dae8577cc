#!/bin/bash
# Restore writes regular files on several threads (lanes).  Whatever the
# number of lanes the result is the same: full fidelity (same_tree),
# hardlinks whose target a lane may not have written yet, and, when
# chunks are damaged, the same files reported and the same first error,
# the earliest file in the snapshot's order, as with a single writer.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root: device nodes and owners"; exit 77; }
new_store
use_xattr_dir
SRC=$XDIR/src
mkdir -p "$SRC/many" "$SRC/race" "$SRC/ro"
# 1,800 small files, most in one bundle: restore spreads a bundle's files
# over the lanes in runs, so every lane gets a queue.
for d in $(seq 1 12); do
	mkdir "$SRC/many/d$d"
	for f in $(seq 1 150); do echo "file $d/$f $RANDOM" >"$SRC/many/d$d/f$f"; done
done
# Pairs: a file large enough for its own chunks, then a hardlink to it.
# The reading thread meets each link right after handing its target to a
# lane.
for p in $(seq 10 49); do
	head -c $((200000 + p * 1000)) /dev/urandom >"$SRC/race/p${p}a"
	ln "$SRC/race/p${p}a" "$SRC/race/p${p}b"
done
# Small files linked in pairs: these share bundles, and so lanes.
for p in $(seq 100 299); do
	echo "small $p" >"$SRC/race/s${p}a"
	ln "$SRC/race/s${p}a" "$SRC/race/s${p}b"
done
head -c 3000000 /dev/urandom >"$SRC/big.bin"
ln -s many/d1/f1 "$SRC/link"
mkfifo "$SRC/fifo"
mknod "$SRC/null" c 1 3
truncate -s 30M "$SRC/sparse"
printf 'middle' | dd of="$SRC/sparse" bs=1 seek=12000000 conv=notrunc status=none
echo "read only" >"$SRC/ro/f"
chmod 500 "$SRC/ro"
chmod 4751 "$SRC/big.bin"
chown 1234:5678 "$SRC/many/d3/f7"
ok setfattr -n user.lane -v yes "$SRC/many/d5/f9"
ok setfacl -m u:1234:rw "$SRC/race/p20a"
touch -d '@981173106.123456789' "$SRC/many/d2/f2"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1

for n in 1 2 5; do
	R=$XDIR/r$n
	out=$(CAIRN_RESTORE_THREADS=$n "$CAIRN" restore tank@1 "$R" 2>&1) ||
		fail "restore with $n lanes failed: $out"
	same_tree "$SRC" "$R"
done

# Root writes into a 0500 directory anyway, so the order (every file
# before its directory's mode) shows only in a restore run as a user.
if command -v setpriv >/dev/null; then
	U=$(mktemp -d /tmp/cairn-user.XXXXXX)
	chmod 755 "$U" "$TESTDIR"
	chown nobody "$U"
	chown -R nobody "$CAIRN_STORE"
	out=$(CAIRN_RESTORE_THREADS=2 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$CAIRN" restore tank@1 "$U/r" ro race many/d1 2>&1) || fail "restore as a user failed: $out"
	chown -R root "$CAIRN_STORE"
	[ "$(stat -c %a "$U/r/ro")" = 500 ] || fail "ro/: mode $(stat -c %a "$U/r/ro")"
	[ "$(cat "$U/r/ro/f")" = "read only" ] || fail "ro/f not written before ro/ became read-only"
	[ "$(manifest "$SRC/race")" = "$(manifest "$U/r/race")" ] || fail "race/ restored as a user differs"
	chmod -R u+w "$U"
	rm -rf "$U"
elif [ "${CI:-}" = true ]; then
	fail "setpriv missing (util-linux)"
fi

# Damage the last chunk of e1 and the first of e9.  e1 is long, so with
# two lanes e9 (on the other lane) fails first in time; the error returned
# must still be e1's, the earlier in the snapshot.
mkdir "$SRC/err"
head -c 12000000 /dev/urandom >"$SRC/err/e1"
head -c 3000000 /dev/urandom >"$SRC/err/e9"
ok cairn snapshot tank@2
# chunk_with FILE head|tail: the chunk file (over 4 KiB) holding FILE's
# first or last bytes (random data is stored uncompressed).  64-byte
# windows are tried from that end inwards, 4 KiB apart, since a chunk
# boundary may cut the outermost window, or leave a tiny last chunk.
chunk_with() {
	python3 - "$CAIRN_STORE/.chunks" "$1" "$2" <<'PY'
import os, sys
chunks = []
for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(d, f)
        if os.path.getsize(p) > 4096:
            chunks.append((p, open(p, 'rb').read()))
data = open(sys.argv[2], 'rb').read()
for k in range(64):
    off = 4096 * k if sys.argv[3] == 'head' else len(data) - 64 - 4096 * k
    want = data[off:off + 64]
    hit = [p for p, b in chunks if want in b]
    if hit:
        print(hit[0])
        break
PY
}
tail1=$(chunk_with "$SRC/err/e1" tail)
head9=$(chunk_with "$SRC/err/e9" head)
[ -f "$tail1" ] && [ -f "$head9" ] || fail "chunks of e1 and e9 not found: '$tail1' '$head9'"
for v in "$tail1" "$head9"; do printf 'XXXX' | dd of="$v" bs=1 seek=200 conv=notrunc status=none; done
first="" raced=0
for n in 1 2 2 2 5; do
	R=$XDIR/bad$n.$RANDOM
	out=$(CAIRN_RESTORE_THREADS=$n "$CAIRN" restore tank@2 "$R" 2>&1); rc=$?
	[ $rc = 1 ] || fail "restore of damaged chunks with $n lanes: exit $rc"
	echo "$out" | grep -q "err/e1: chunk $(basename "$tail1")" || fail "$n lanes: e1 not reported: $out"
	echo "$out" | grep -q "err/e9: chunk $(basename "$head9")" || fail "$n lanes: e9 not reported: $out"
	echo "$out" | grep -q "2 files could not be restored" || fail "$n lanes: count: $out"
	last=$(echo "$out" | grep "(file ")
	echo "$last" | grep -q "file err/e1" || fail "$n lanes: first error is not e1's: $last"
	[ -z "$first" ] && first=$last
	[ "$last" = "$first" ] || fail "$n lanes: '$last', 1 lane: '$first'"
	cmp -s "$SRC/big.bin" "$R/big.bin" || fail "$n lanes: a sound file was not restored"
	# warnings come as failures happen: e9's first means the lanes raced
	[ "$(echo "$out" | grep -o -m1 'err/e[19]: chunk')" = "err/e9: chunk" ] && raced=1
done
[ $raced = 1 ] || fail "e9 never failed before e1: the race this test is about did not happen"
done_test
