#!/bin/bash
# The rest of issue 9's list, each as a regression test:
#  - "What was seen" 1-2: `send -R -I tank@3 tank@7` cut inside group @6:
#    the target has @4 and @5 on every dataset (whole groups), and then
#    both `send -R -I tank@5 tank@7 | recv` and `sync -R` converge;
#  - verify before apply: property changes carried by a -R stream are not
#    applied when the stream is cut before its first group end;
#  - sync per dataset from the newest common *bookmark* when the snapshot
#    it marks is gone on the source.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
list() { "$CAIRN" -s "$1" list -H -p -t snapshot -r -o name,guid "$2" | sed "s|^$2\([@/]\)|X\1|"; }
# groupends STREAM: the end offset of each GROUPEND record
groupends() {
	python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off = 12
while off < len(d):
    t, n = struct.unpack_from("<BI", d, off)
    if t == 8: print(off + 13 + n)
    off += 13 + n
PY
}
S=$TESTDIR/src
DS="tank tank/a tank/b tank/a/x"
for d in $DS; do mkdir -p "$S/$d"; done
ok ca create -o source="$S/tank" tank
for d in tank/a tank/b tank/a/x; do ok ca create -o source="$S/$d" "$d"; done
for k in 1 2 3 4 5 6 7; do
	for d in $DS; do head -c 20000 /dev/urandom >"$S/$d/f$k"; done
	ok ca snapshot -r tank@$k
done

# ---- seen 1-2: a cut -R -I stream, then another base, then sync ----
ca send -R tank@3 | cb recv bk || fail "recv -R @3"
ca send -R -I @3 tank@7 >"$TESTDIR/s37" || fail "send -R -I @3 @7"
ends=($(groupends "$TESTDIR/s37"))
[ "${#ends[@]}" = 4 ] || fail "expected 4 groups, got ${#ends[@]}"
cut=$((ends[1] + 500)) # inside group @6
head -c "$cut" "$TESTDIR/s37" | cb recv bk >/dev/null 2>&1 && fail "the cut stream was accepted"
got=$(cb list -H -o name -t snapshot -r bk) || fail "list bk after the cut"
for k in 4 5; do
	n=$(echo "$got" | grep -c "@$k$")
	[ "$n" = 4 ] || fail "group @$k has $n of 4 snapshots after the cut"
done
[ "$(echo "$got" | grep -c "@6$")" = 0 ] || fail "group @6 torn"
cp -a "$B" "$TESTDIR/b.cut"
ca send -R -I @5 tank@7 | cb recv bk || fail "send -R -I tank@5 tank@7 | recv after the cut"
[ "$(list "$CAIRN_STORE" tank)" = "$(list "$B" bk)" ] || fail "-I @5 @7 after the cut: no convergence"
rm -rf "$B" && cp -a "$TESTDIR/b.cut" "$B"
ca sync -R tank "$B:bk" 2>"$TESTDIR/err" || fail "sync -R after the cut: $(cat "$TESTDIR/err")"
[ "$(list "$CAIRN_STORE" tank)" = "$(list "$B" bk)" ] || fail "sync -R after the cut: no convergence"

# ---- property changes wait for verified data ----
ok ca set user:note=changed tank/a
ok ca set compression=zstd-9 tank/b
for d in $DS; do head -c 20000 /dev/urandom >"$S/$d/f8"; done
ok ca snapshot -r tank@8
ca send -R -I @7 tank@8 >"$TESTDIR/s78" || fail "send -R -I @7 @8"
# every property but available (the free space of the filesystem)
props() { cb get -H -p -r -o name,property,value,source all bk | awk -F'\t' '$2 != "available"'; }
before=$(props)
[ -n "$before" ] || fail "get all bk printed nothing"
ends=($(groupends "$TESTDIR/s78"))
n=0
for cut in 300 $((ends[0] / 3)) $((ends[0] / 2)) $((ends[0] - 10)); do
	head -c "$cut" "$TESTDIR/s78" | cb recv bk >/dev/null 2>&1 && fail "cut at $cut accepted"
	[ "$(props)" = "$before" ] ||
		{ fail "a -R stream cut at $cut (before its group end) changed properties"; break; }
	n=$((n + 1))
done
[ "$n" = 4 ] || fail "only $n cuts"
cb recv bk <"$TESTDIR/s78" || fail "the whole -R stream"
[ "$(cb get -H -o value user:note bk/a)" = changed ] || fail "user:note not received"
[ "$(cb get -H -o value compression bk/b)" = zstd-9 ] || fail "compression not received"

# ---- sync from the newest common bookmark ----
ok ca bookmark -r tank@8 tank#b8 2>/dev/null || for d in $DS; do ok ca bookmark "$d@8" "$d#b8"; done
ok ca destroy -r tank@8
for d in $DS; do head -c 20000 /dev/urandom >"$S/$d/f9"; done
ok ca snapshot -r tank@9
# the source no longer has @8, only its bookmark: sync sends @9 from #b8
out=$(ca sync -v -p -R tank "$B:bk" 2>&1) || fail "sync from a bookmark: $out"
echo "$out" | grep -q "^synced tank@9" || fail "sync -v: $out"
for d in bk bk/a bk/b bk/a/x; do
	[ "$(cb list -H -p -o guid "$d@9")" = "$(ca list -H -p -o guid "${d/bk/tank}@9")" ] ||
		fail "$d@9 not received from the bookmark"
done
rm -rf "$TESTDIR/r"
cb restore bk/a/x@9 "$TESTDIR/r" || fail "restore bk/a/x@9"
same_tree "$S/tank/a/x" "$TESTDIR/r"
done_test
