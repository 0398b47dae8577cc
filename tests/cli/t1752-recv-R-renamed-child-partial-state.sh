#!/bin/bash
# A -R stream must not receive into a dataset that holds another stream's
# partial state (recv -s), as zfs refuses a dataset with %recv state.  The
# check looked the dataset up by the name the stream gives it, before the
# stream's renames: a child the sender renamed (tank/a to tank/b) is
# received into the dataset there with its guid, bk/a, but the check
# looked at bk/b (not there) and let it through.  The stream then renamed
# bk/a, with its state, to bk/b and received into it, beside a token of
# another stream that could no longer complete.  Now the dataset with the
# stream dataset's guid is the one checked (and the commit checks again,
# after the renames): refused, naming it, and nothing changes.  Also for
# the swap of two children's names, with and without -F, and with -s.
. "$(dirname "$0")/lib.sh"
new_store
second_store
T=$TESTDIR/src
mkdir -p "$T/a" "$T/c"
head -c 300000 /dev/urandom >"$T/f"
head -c 300000 /dev/urandom >"$T/a/g"
head -c 300000 /dev/urandom >"$T/c/h"
ok ca create -o source="$T" tank
ok ca create -o source="$T/a" tank/a
ok ca create -o source="$T/c" tank/c
ok ca snapshot -r tank@1
ca send -R tank@1 | ok cb recv bk

# another stream's cut receive into bk/a: an incremental of tank/a
head -c 3000000 /dev/urandom >"$T/a/big"
ok ca snapshot tank/a@x
ca send -i @1 tank/a@x >"$TESTDIR/ax"
cut_recv bk/a "$TESTDIR/ax"
ok ca destroy tank/a@x

# the sender renames tank/a to tank/b; its -R stream renames bk/a there
ok ca rename tank/a tank/b
echo more >"$T/f2"
ok ca snapshot -r tank@2
ca send -R -i @1 tank@2 >"$TESTDIR/r12"
before=$(recv_state bk)
msg='bk/a: destination contains partially-complete state from "zfs receive -s"'
fails_with 1 "$msg" cb recv bk <"$TESTDIR/r12"
[ "$(recv_state bk)" = "$before" ] || fail "the refused receive changed bk: $(recv_state bk)"
fails_with 1 "$msg" cb recv -F bk <"$TESTDIR/r12"
[ "$(recv_state bk)" = "$before" ] || fail "the refused receive -F changed bk: $(recv_state bk)"
fails_with 1 "$msg" cb recv -s bk <"$TESTDIR/r12"
[ "$(recv_state bk)" = "$before" ] || fail "the refused receive -s changed bk: $(recv_state bk)"
fails_with 1 "$msg" cb recv -n bk <"$TESTDIR/r12"

# a swap: tank/b and tank/c trade names; bk/a (tank/b's copy) is to be
# bk/c, where the other child is now
ok ca rename tank/c tank/t
ok ca rename tank/b tank/c
ok ca rename tank/t tank/b
ok ca snapshot -r tank@3
ca send -R -I @1 tank@3 >"$TESTDIR/r13"
fails_with 1 "$msg" cb recv -F bk <"$TESTDIR/r13"
[ "$(recv_state bk)" = "$before" ] || fail "the refused swap changed bk: $(recv_state bk)"

# once the other stream's state is discarded, the stream goes in
ok cb recv -A bk/a
ok cb recv -F bk <"$TESTDIR/r13"
a=$(ca list -H -p -o name,guid -t snapshot -r tank | sed 's/^tank//')
b=$(cb list -H -p -o name,guid -t snapshot -r bk | sed 's/^bk//')
[ "$a" = "$b" ] || fail "snapshots differ: $(echo "$b" | tr '\n' ' ')"
done_test
