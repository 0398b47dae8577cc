#!/bin/bash
# Writer liveness does not depend on pids (issue 10, item 1).
#
# A. A backup running in another PID namespace (it is pid 1 there, and
#    registers as writers/1.*) is stopped with SIGSTOP right after it has
#    deduplicated against garbage chunks (their atimes moved) and before it
#    commits; a full GC runs meanwhile.  The GC must count it as alive (it
#    holds the lock of its registry file), so the chunks it depends on stay:
#    after SIGCONT the backup commits and the store verifies.  The test
#    asserts the overlap: the registry file exists before and after the GC.
# B. kill -9 of a writer: its lock goes with it, GC proceeds and removes
#    the stale registry file and the chunks the writer had written.
# C. pid reuse: a registry file naming a live, unrelated process (this
#    shell, with its real start time) and an ancient start time.  Nobody
#    holds its lock, so it is a dead writer's: GC neither waits for it nor
#    keeps garbage because of it, and removes it.
. "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null || { echo "unshare missing"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "needs root for PID namespaces"; exit 77; }
new_store
ok cairn config gc_atime_cutoff=0
SRC=$TESTDIR/src
mkdir -p "$SRC/a" "$SRC/b"
for i in 0 1 2 3; do head -c 300000 /dev/urandom >"$SRC/a/f$i.bin"; done
head -c 48000000 /dev/urandom >"$SRC/b/big.bin"
ok cairn create -o source="$SRC/a" -o chunksize=64K ta
ok cairn create -o source="$SRC/b" -o chunksize=64K tb
ok cairn snapshot ta@1
chunks=$(find "$CAIRN_STORE/.chunks" -type f | sort)
[ -n "$chunks" ] || fail "no chunks after the first backup"
ok cairn destroy ta@1
# The garbage looks an hour old; the backup's dedup touches it.
echo "$chunks" | xargs touch -a -d '1 hour ago'
probe=$(echo "$chunks" | head -n 1)
old=$(stat -c %X "$probe")

# A. a namespaced writer racing GC
unshare --pid --fork --mount-proc "$CAIRN" snapshot ta@2 tb@2 &
ushare=$!
cpid=
for _ in $(seq 3000); do
	[ -z "$cpid" ] && cpid=$(awk '{print $1}' /proc/$ushare/task/$ushare/children 2>/dev/null)
	[ -n "$cpid" ] && [ "$(stat -c %X "$probe")" != "$old" ] && break
	sleep 0.01
done
[ -n "$cpid" ] && kill -STOP "$cpid"
reg=$(ls "$CAIRN_STORE/writers" 2>/dev/null)
case "$reg" in
1.*) ;;
*) fail "race not reached: no registration of pid 1 while the backup runs (writers: '$reg', atime $old -> $(stat -c %X "$probe"))" ;;
esac
out=$(timeout 120 "$CAIRN" gc 2>&1) || fail "gc during the namespaced backup: $out"
[ "$(ls "$CAIRN_STORE/writers")" = "$reg" ] ||
	fail "the writer registration did not outlive the GC: '$(ls "$CAIRN_STORE/writers")'"
[ -n "$cpid" ] && kill -CONT "$cpid"
wait $ushare || fail "the namespaced backup failed"
out=$(cairn verify 2>&1) || fail "store does not verify after GC raced a namespaced backup: $(echo "$out" | head -3)"
rm -rf "$TESTDIR/r"
ok cairn restore ta@2 "$TESTDIR/r"
diff -r "$SRC/a" "$TESTDIR/r" >/dev/null || fail "ta@2 restores different content"
[ -z "$(ls "$CAIRN_STORE/writers")" ] || fail "registration left after the backup: $(ls "$CAIRN_STORE/writers")"

# B. kill -9 of a writer stopped right after it registered.  The garbage
#    is then touched as its deduplication would have: only a live writer
#    could protect it now.
ok cairn destroy ta@2
ok cairn destroy tb@2
"$CAIRN" snapshot tb@3 &
wpid=$!
for _ in $(seq 3000); do
	[ -n "$(ls "$CAIRN_STORE/writers" 2>/dev/null)" ] && break
	sleep 0.01
done
kill -STOP $wpid
reg=$(ls "$CAIRN_STORE/writers")
[ -n "$reg" ] || fail "race not reached: the backup finished before it was stopped"
kill -9 $wpid
wait $wpid 2>/dev/null
find "$CAIRN_STORE/.chunks" -type f -exec touch -a {} +
removed() { echo "$1" | grep -o '"removed_chunks": *[0-9]*' | grep -o '[0-9]*$'; }
out=$(timeout 120 "$CAIRN" gc -j 2>&1) || fail "gc after kill -9 of a writer: $out"
[ -z "$(ls "$CAIRN_STORE/writers")" ] || fail "dead writer's registration not removed: $(ls "$CAIRN_STORE/writers")"
n=$(removed "$out")
[ "${n:-0}" -gt 0 ] || fail "GC removed nothing after the writer died: $out"
out=$(cairn gc -n) || fail "gc -n"
[ "$out" = "would remove 0 chunks (0B) and 0 temporary files" ] || fail "garbage left: $out"
ok cairn verify

# C. A registry file naming a live unrelated process (pid reuse).
ok cairn snapshot ta@4
ok cairn destroy ta@4
find "$CAIRN_STORE/.chunks" -type f -exec touch -a -d '1 hour ago' {} +
start=$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' /proc/$$/stat)
echo "1000000000 $$" >"$CAIRN_STORE/writers/$$.$start"
out=$(timeout 120 "$CAIRN" gc -j 2>&1) || fail "gc with a reused pid's registration: $out"
[ ! -e "$CAIRN_STORE/writers/$$.$start" ] || fail "registration naming a live unrelated pid kept"
n=$(removed "$out")
[ "${n:-0}" -gt 0 ] || fail "garbage kept because of a dead registration naming a live pid: $out"
out=$(cairn gc -n) || fail "gc -n"
[ "$out" = "would remove 0 chunks (0B) and 0 temporary files" ] || fail "garbage left: $out"
ok cairn verify
done_test
