#!/bin/bash
# A receive into a target whose parent does not exist can never succeed
# (recv makes no parent of its target, as in zfs).  It is refused when the
# stream names its top dataset, before any chunk is read: it used to read
# and store every chunk of the stream first, so a first sync to a typo'd
# or not yet created destination moved all its data (over ssh too) before
# saying 'parent does not exist', and left the chunks there for GC.
. "$(dirname "$0")/lib.sh"
new_store
second_store
tank_with_kid
nchunks() { find "$B/.chunks" -type f | wc -l; }
base=$(nchunks)
msg='nope/tank: parent does not exist (nope; create it first'

# recv of a plain stream, a -R stream, and a dry run
ca send tank@s1 >"$TESTDIR/plain"
ca send -R tank@s1 >"$TESTDIR/rec"
fails_with 1 "$msg" cb recv nope/tank <"$TESTDIR/plain"
[ "$(nchunks)" = "$base" ] || fail "recv stored $(($(nchunks) - base)) chunks before refusing"
fails_with 1 "$msg" cb recv -s nope/tank <"$TESTDIR/rec"
[ "$(nchunks)" = "$base" ] || fail "recv -R stored $(($(nchunks) - base)) chunks before refusing"
fails_with 1 "$msg" cb recv -n nope/tank <"$TESTDIR/plain"
# the refusal comes before the stream is read on: recv stops at its top
# DATASET record, so the sender sees a closed pipe long before the end
err=$(ca send tank@s1 2>&1 | cb recv nope/tank 2>&1)
echo "$err" | grep -q "$msg" || fail "recv from a pipe: $err"
[ "$(nchunks)" = "$base" ] || fail "recv from a pipe stored chunks before refusing"
cb list nope/tank >/dev/null 2>&1 && fail "the refused receive made nope/tank"
cb list nope >/dev/null 2>&1 && fail "the refused receive made nope"

# sync, plain and -R
fails_with 1 "$msg" ca sync tank "$B:nope/tank"
[ "$(nchunks)" = "$base" ] || fail "sync stored $(($(nchunks) - base)) chunks before refusing"
fails_with 1 "$msg" ca sync -R tank "$B:nope/tank"
[ "$(nchunks)" = "$base" ] || fail "sync -R stored $(($(nchunks) - base)) chunks before refusing"

# what still works: -e makes the parents below the target, and a
# target whose parent exists
ok cb recv -e nope <"$TESTDIR/plain"
ok cb list nope/tank >/dev/null
ok cb create b
ok ca sync -R tank "$B:b/tank"
[ "$(cb list -H -o name -t snapshot -r b/tank | wc -l)" = 2 ] || fail "sync -R into b/tank"
done_test
