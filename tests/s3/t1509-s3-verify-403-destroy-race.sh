#!/bin/bash
# verify holds nothing: a snapshot destroyed after verify listed its
# chunks, whose objects a gc then removed, is no damage, and verify does
# not report a missing chunk no target snapshot uses any more (t0641).
# To a credential without ListBucket such a removed object is answered
# 403 (tests/s3/faultproxy.py missing-403), and verify reports it as
# "missing, or this credential may not read it": that too is no damage
# once no target snapshot uses it, but verify reported each one and
# exited 1.  A chunk that a snapshot still needs and that is answered 403
# is still reported.
# gdb stops verify between listing the chunks and reading them
# (refset_sorted), as in t0641.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
command -v gdb >/dev/null || { echo "needs gdb"; exit 77; }
fault_proxy
proxied_store
ok cairn config gc_atime_cutoff=0
mkdir -p "$TESTDIR/a" "$TESTDIR/b"
head -c 300000 /dev/urandom >"$TESTDIR/a/f"
head -c 300000 /dev/urandom >"$TESTDIR/b/g"
ok cairn create -o source="$TESTDIR/a" -o chunksize=64K tank
ok cairn snapshot tank@a >/dev/null
# lost: a chunk of tank@a that verify reads once (content or tree)
lost=$(verify_reads 1)
before=$(objects)
ok cairn create -o source="$TESTDIR/b" -o chunksize=64K tank2
ok cairn snapshot tank2@b >/dev/null
[ "$(objects)" -gt "$before" ] || fail "tank2@b added no object"
sleep 1 # the chunks' atimes before gc's start, on the coarse clock

cat >"$TESTDIR/window.sh" <<EOF
"$CAIRN" destroy tank2@b || exit 1
"$CAIRN" gc >$TESTDIR/gc.out 2>&1 || exit 1
"$S3TOOL" rm "$BUCKET" "$lost" || exit 1
EOF
cat >"$TESTDIR/gdb.cmds" <<EOF
set pagination off
set confirm off
break refset_sorted
run verify >$TESTDIR/v.out 2>&1
delete
shell bash $TESTDIR/window.sh
continue
printf "exitcode=%d\\n", \$_exitcode
EOF
echo missing-403 >"$MODE"
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
	gdb -q -batch -nx -x "$TESTDIR/gdb.cmds" --args "$CAIRN" >"$TESTDIR/gdb.out" 2>&1
echo pass >"$MODE"
grep -q 'Breakpoint 1, refset_sorted' "$TESTDIR/gdb.out" || fail "verify did not stop: $(tail -5 "$TESTDIR/gdb.out")"
cat "$TESTDIR/gc.out" >&2
[ "$(objects)" = "$((before - 1))" ] ||
	fail "gc did not remove tank2@b's objects, or lost is there: $(objects) of $before - 1: the race was not made"
out=$(cat "$TESTDIR/v.out")
echo "$out" | grep -q "credential wrong" && fail "verify blamed the credential: $out"
echo "$out" | grep -q "chunk ${lost##*/} (snapshot tank@a, .*403.*missing, or this credential may not read it" ||
	fail "a chunk tank@a needs, answered 403, not reported: $out"
echo "$out" | grep -q ': 1 bad chunks' || fail "count of bad chunks (only tank@a's lost one): $out"
grep -q '^exitcode=1$' "$TESTDIR/gdb.out" || fail "verify exit: $(grep exitcode "$TESTDIR/gdb.out") ($out)"
done_test
