#!/bin/bash
# Temporary holds (taken by send) live as long as their owner, judged by a
# lock the kernel releases at death, not by pid (issue 10, item 1).
#
# A. A send running in another PID namespace blocks on a full pipe while
#    holding ta@1.  Commands run meanwhile (each reaps dead owners' holds
#    when it opens the store) must keep the hold: destroy is refused.
# B. kill -9 of the send: the next command reaps the hold, and its owner's
#    lock file under holders/ goes with it.
# C. A hold row naming a live unrelated pid (this shell) whose owner lock
#    file does not exist belongs to nobody: it is reaped.
. "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null || { echo "unshare missing"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "needs root for PID namespaces"; exit 77; }
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 2000000 /dev/urandom >"$SRC/f.bin"
ok cairn create -o source="$SRC" -o chunksize=64K ta
ok cairn snapshot ta@1

# A. The reader never reads: send blocks once the pipe is full.
unshare --pid --fork --mount-proc sh -c '"$0" send ta@1 | sleep 1000' "$CAIRN" &
ushare=$!
for _ in $(seq 3000); do
	# sqlite3 looks without reaping, as any cairn command would.
	[ "$(sqlite3 "$CAIRN_STORE/catalog.db" 'SELECT count(*) FROM hold' 2>/dev/null)" = 1 ] && break
	sleep 0.01
done
out=$(cairn holds ta@1) || fail "holds"
echo "$out" | grep -q 'temporary' || fail "no temporary hold while send runs (reaped, or race not reached): $out"
[ -n "$(ls "$CAIRN_STORE/holders" 2>/dev/null)" ] || fail "no owner lock file while send runs"
out=$(cairn holds ta@1) || fail "holds (second look)"
echo "$out" | grep -q 'temporary' || fail "a live send's temporary hold was reaped: $out"
fails_with 1 "held" cairn destroy ta@1
cairn list -H -o name -t snapshot | grep -qx 'ta@1' || fail "held snapshot destroyed"

# B. kill -9 every process of the namespace (its init first).
spid=$(awk '{print $1}' /proc/$ushare/task/$ushare/children)
kill -9 "$spid"
wait $ushare 2>/dev/null
out=$(cairn holds ta@1) || fail "holds after the kill"
echo "$out" | grep -q 'temporary' && fail "a dead send's hold was kept: $out"
[ -z "$(ls "$CAIRN_STORE/holders")" ] || fail "dead owner's lock file kept: $(ls "$CAIRN_STORE/holders")"

# C. A row naming this live shell, with no lock file.
sqlite3 "$CAIRN_STORE/catalog.db" \
	"INSERT INTO hold SELECT id, '.send-fake', 0, $$, -12345 FROM snapshot WHERE name = '1';
	 UPDATE snapshot SET userrefs = userrefs + 1 WHERE name = '1';" || fail "sqlite3"
out=$(cairn holds ta@1) || fail "holds with a fake row"
echo "$out" | grep -q 'send-fake' && fail "hold of a live unrelated pid without a lock file kept: $out"
ok cairn destroy ta@1
done_test
