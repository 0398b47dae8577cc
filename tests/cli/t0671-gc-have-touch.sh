#!/bin/bash
# A chunk that `cairn have` (sync's question to the destination: which of
# these chunks do you hold?) found and touched is kept by a GC that starts
# after the touch, while the transfer is still under way.
#
# GC removes an unreferenced chunk whose atime is older than the start of
# the oldest running writer (or of the GC itself when none runs).  The
# receive that relies on have's answer registers as a writer only when it
# starts, which can be after such a GC began: sync asks before its
# receiver is up.  Before, have did not register, so that GC removed the
# chunk and the receive failed with "chunk ... was neither sent nor
# present on the receiver" (seen in t0670, round 49 of one CI run).  Now
# the handle that touches registers before touching and stays registered
# until it is closed.  This test makes that order happen on purpose: the
# chunks are garbage, have touches them and keeps running, and a GC with
# no atime cutoff runs beside it.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
new_store
ok cairn config gc_atime_cutoff=0 >/dev/null
mkdir -p "$TESTDIR/src"
head -c 300000 /dev/urandom >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" ds
ok cairn snapshot ds@1
ok cairn destroy ds@1 # its chunks are garbage now, still on disk
chunks() { find "$CAIRN_STORE/.chunks" -type f -printf '%f\n' | grep -E '^[0-9a-f]{64}$' | LC_ALL=C sort; }
chunks >"$TESTDIR/garbage"
n=$(wc -l <"$TESTDIR/garbage")
[ "$n" -ge 2 ] || fail "expected some garbage chunks, found $n"

# have, asked for every one of them, kept running on a fifo
mkfifo "$TESTDIR/in"
"$CAIRN" have <"$TESTDIR/in" >"$TESTDIR/ans" 2>"$TESTDIR/have.err" &
hp=$!
exec 3>"$TESTDIR/in"
python3 - "$TESTDIR/garbage" >&3 <<'PY'
import sys
ds = [bytes.fromhex(l.strip()) for l in open(sys.argv[1]) if l.strip()]
sys.stdout.buffer.write(len(ds).to_bytes(4, "little") + b"".join(ds))
PY
for _ in $(seq 200); do
	[ "$(stat -c %s "$TESTDIR/ans")" -ge "$n" ] && break
	sleep 0.05
done
[ "$(od -An -tu1 -v "$TESTDIR/ans" | tr -s ' \n' ' ' | sed 's/^ //;s/ $//')" = "$(printf '1 %.0s' $(seq "$n") | sed 's/ $//')" ] ||
	fail "have did not find every chunk: $(od -An -tu1 "$TESTDIR/ans")"
sleep 0.02 # the GC starts strictly after the touches

# GC beside the running have: the touched chunks stay
ok cairn gc >/dev/null
[ "$(chunks)" = "$(cat "$TESTDIR/garbage")" ] ||
	fail "BUG: GC removed chunks have had touched while it ran: $(comm -23 "$TESTDIR/garbage" <(chunks) | wc -l) of $n gone"

exec 3>&-
wait $hp || fail "have failed: $(cat "$TESTDIR/have.err")"
[ -z "$(ls -A "$CAIRN_STORE/writers" 2>/dev/null)" ] || fail "have left its writer registration: $(ls -A "$CAIRN_STORE/writers")"
# once have has ended, nothing protects them: the next GC removes them
ok cairn gc >/dev/null
[ -z "$(chunks)" ] || fail "GC kept garbage after have ended: $(chunks | wc -l) chunks"
done_test
