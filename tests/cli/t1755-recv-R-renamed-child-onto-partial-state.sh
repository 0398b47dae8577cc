#!/bin/bash
# A -R stream renames a child (tank/a to tank/b): it receives into the
# dataset there with the child's guid (bk/a) and renames it to bk/b.
# When bk/b already exists there, not the stream's, holding another
# stream's partial state (recv -s), the receive is refused before any
# chunk, naming bk/b and its partial state, as zfs refuses a dataset with
# %recv state.  t1752's fix checked only bk/a, so this stream went through
# to the commit, which failed late with a bare "bk/b: dataset already
# exists".  Nothing changes, with or without -F, -s or -n.
. "$(dirname "$0")/lib.sh"
new_store
second_store
T=$TESTDIR/src
mkdir -p "$T/a" "$T/o"
head -c 300000 /dev/urandom >"$T/f"
head -c 300000 /dev/urandom >"$T/a/g"
head -c 3000000 /dev/urandom >"$T/o/big"
ok ca create -o source="$T" tank
ok ca create -o source="$T/a" tank/a
ok ca snapshot -r tank@1
ca send -R tank@1 | ok cb recv bk

# bk/b: another stream's cut full receive
ok ca create -o source="$T/o" other
ok ca snapshot other@1
ca send other@1 >"$TESTDIR/o1"
cut_recv bk/b "$TESTDIR/o1"

ok ca rename tank/a tank/b
head -c 300000 /dev/urandom >"$T/f2"
ok ca snapshot -r tank@2
ca send -R -i @1 tank@2 >"$TESTDIR/r12"
before=$(recv_state bk)
msg='bk/b: destination contains partially-complete state from "zfs receive -s"'
for opt in "" -F -s -n; do
	# shellcheck disable=SC2086
	fails_with 1 "$msg" cb recv $opt bk <"$TESTDIR/r12"
	[ "$(recv_state bk)" = "$before" ] || fail "the refused receive $opt changed bk: $(recv_state bk)"
done
# refused at the DATASET record: the same words with the stream cut
# before its first snapshot's data
head -c 4096 "$TESTDIR/r12" | fails_with 1 "$msg" cb recv bk
[ "$(recv_state bk)" = "$before" ] || fail "the refused cut receive changed bk: $(recv_state bk)"

# the other stream still completes; then bk/b is in the way as a dataset
ca send other@1 | ok cb recv -s bk/b
[ "$(cb get -H -o value receive_resume_token bk/b)" = - ] || fail "bk/b kept a partial state"
ok cb destroy -r bk/b
ok cb recv bk <"$TESTDIR/r12"
[ "$(cb list -H -o name -t snapshot -r bk/b | tr '\n' ' ')" = "bk/b@1 bk/b@2 " ] ||
	fail "the renamed child did not arrive: $(cb list -H -o name -t all -r bk)"
done_test
