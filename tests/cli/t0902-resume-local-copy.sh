#!/bin/bash
# send -t finds the token's stream among every dataset that holds the
# token's snapshot guid: a store that also keeps a local copy (made by
# sync or recv, same guids, other transactions) resumes the stream of the
# dataset it was sending, and sync resumes instead of throwing the
# partial receive away.
. "$(dirname "$0")/lib.sh"
new_store
second_store
mkdir -p "$TESTDIR/src"
head -c 3000000 /dev/urandom >"$TESTDIR/src/f"
ok ca create -o source="$TESTDIR/src" orig
ok ca snapshot orig@1
ok ca sync orig mirror # a copy in the same store: same guid, later createtxg
g1=$(ca get -H -p -o value guid orig@1) g2=$(ca get -H -p -o value guid mirror@1)
[ "$g1" = "$g2" ] || fail "the local copy has another guid ($g1, $g2)"
ca send mirror@1 >"$TESTDIR/s" || fail "send mirror@1"
head -c 2000000 "$TESTDIR/s" | cb recv -s bk 2>/dev/null && fail "a cut receive succeeded"
tok=$(cb get -H -o value receive_resume_token bk)
[ -n "$tok" ] && [ "$tok" != - ] || fail "no resume token"
ca send -t "$tok" >"$TESTDIR/r" || fail "send -t with a local copy holding the same guid"
ok cb recv -s bk <"$TESTDIR/r"
ok cb restore bk@1 "$TESTDIR/out"
cmp "$TESTDIR/src/f" "$TESTDIR/out/f" || fail "resumed content differs"
# sync resumes too, and says nothing about discarding
ok cb destroy -r bk
head -c 2000000 "$TESTDIR/s" | cb recv -s bk 2>/dev/null
err=$(ca sync mirror "$B:bk" 2>&1) || fail "sync after a cut: $err"
echo "$err" | grep -q discarding && fail "sync discarded the partial receive: $err"
cb list -H -o name bk@1 >/dev/null || fail "bk@1 missing after sync"
done_test
