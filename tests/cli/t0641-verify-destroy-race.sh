#!/bin/bash
# verify beside destroy and GC: a snapshot destroyed after verify listed
# its chunks, whose chunks a GC then removed, is no damage.  Verify holds
# nothing, so this happens when a prune and a GC run during a long verify;
# it reported each such chunk "missing" and exited 1.  A chunk that a
# snapshot still needs and that is missing is still reported (exit 1).
# gdb stops verify between listing the chunks and reading them
# (refset_sorted, called by its reading phase), which makes the order
# exact: no sleeps stand in for it.
. "$(dirname "$0")/lib.sh"
command -v gdb >/dev/null || { echo "needs gdb"; exit 77; }
new_store
mkdir -p "$TESTDIR/a" "$TESTDIR/b"
head -c 200000 /dev/urandom >"$TESTDIR/a/f"
head -c 200000 /dev/urandom >"$TESTDIR/b/g"
ok cairn create -o source="$TESTDIR/a" -o compression=off tank
ok cairn create -o source="$TESTDIR/b" -o compression=off tank2
ok cairn snapshot tank@a
ok cairn snapshot tank2@b
ok cairn config gc_atime_cutoff=0
sleep 1 # the chunks' atimes before GC's start, on the coarse clock

# chunk_of FILE: the chunk holding FILE's first bytes (no compression: the
# payload follows a 24-byte header).
chunk_of() {
	local want c
	want=$(head -c 64 "$1" | od -An -tx1 | tr -d ' \n')
	for c in $(find "$CAIRN_STORE/.chunks" -type f -size +4k); do
		[ "$(tail -c +25 "$c" | head -c 64 | od -An -tx1 | tr -d ' \n')" = "$want" ] && { echo "$c"; return; }
	done
}
gone=$(chunk_of "$TESTDIR/b/g")
lost=$(chunk_of "$TESTDIR/a/f")
[ -n "$gone" ] && [ -n "$lost" ] || fail "chunks not found"

# verify_paused CMDS: runs verify under gdb, running CMDS once it has
# listed the chunks; its output goes to $TESTDIR/v.out, gdb's (with
# "exitcode=N") to $TESTDIR/gdb.out.
verify_paused() {
	cat >"$TESTDIR/gdb.cmds" <<EOF
set pagination off
set confirm off
break refset_sorted
run verify >$TESTDIR/v.out 2>&1
delete
shell $1
continue
printf "exitcode=%d\\n", \$_exitcode
EOF
	# (LeakSanitizer cannot run under ptrace: off for this one, as for strace.)
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
		gdb -q -batch -nx -x "$TESTDIR/gdb.cmds" --args "$CAIRN" >"$TESTDIR/gdb.out" 2>&1
	grep -q 'Breakpoint 1, refset_sorted' "$TESTDIR/gdb.out" || fail "verify did not stop: $(tail -5 "$TESTDIR/gdb.out")"
}

# The gdb "shell" runs with the test's environment (CAIRN_STORE).
cat >"$TESTDIR/window.sh" <<EOF
"$CAIRN" destroy tank2@b || exit 1
"$CAIRN" gc >$TESTDIR/gc.out 2>&1 || exit 1
[ ! -e "$gone" ] || echo "gc kept it" >>$TESTDIR/gc.out
rm -f "$lost"
EOF
verify_paused "bash $TESTDIR/window.sh"
cat "$TESTDIR/gc.out" >&2
[ -e "$gone" ] && fail "GC did not remove the destroyed snapshot's chunk: the race was not made"
out=$(cat "$TESTDIR/v.out")
echo "$out" | grep -q "$(basename "$gone")" && fail "a destroyed snapshot's chunk reported: $out"
echo "$out" | grep -q "chunk $(basename "$lost") (snapshot tank@a, file f).*missing" ||
	fail "a missing chunk that tank@a needs not reported: $out"
echo "$out" | grep -q ': 1 bad chunks' || fail "count of bad chunks: $out"
grep -q '^exitcode=1$' "$TESTDIR/gdb.out" || fail "verify exit: $(grep exitcode "$TESTDIR/gdb.out") ($out)"
done_test
