#!/bin/bash
# sync -R when a child there holds the partial state of a cut sync (or
# recv -s) of that child alone, and the source has since renamed the
# child (tank/a to tank/b).  sync -R finishes such a child from its own
# token first (t0862), but judged it by its name there (bk/a), which is
# no source dataset's any more: it left the state, and the -R stream,
# which renames bk/a to bk/b, was refused by the receiver ("bk/a:
# destination contains partially-complete state", cdb60d5) on every run:
# sync -R never converged without a recv -A by hand.  Now the child is
# judged with the source's renames applied, as the stream will: bk/a is
# the copy of tank/b, its state is resumed (not discarded), and the same
# run renames it and sends the rest.  A dry run changes nothing.
. "$(dirname "$0")/lib.sh"
new_store
second_store
T=$TESTDIR/src
mkdir -p "$T/a"
head -c 300000 /dev/urandom >"$T/f"
head -c 300000 /dev/urandom >"$T/a/g"
ok ca create -o source="$T" tank
ok ca create -o source="$T/a" tank/a
ok ca snapshot -r tank@1
ok ca sync -R tank "$B:bk"

# a cut incremental of tank/a alone into bk/a
head -c 3000000 /dev/urandom >"$T/a/big"
ok ca snapshot tank/a@x
ca send -i @1 tank/a@x >"$TESTDIR/ax"
cut_recv bk/a "$TESTDIR/ax"

ok ca rename tank/a tank/b
head -c 300000 /dev/urandom >"$T/f2"
ok ca snapshot -r tank@2
before=$(recv_state bk)
ok ca sync -n -R tank "$B:bk" >/dev/null
[ "$(recv_state bk)" = "$before" ] || fail "sync -n changed bk: $(recv_state bk)"
ca sync -R tank "$B:bk" 2>"$TESTDIR/err" || fail "sync -R did not converge: $(cat "$TESTDIR/err")"
grep -q discarding "$TESTDIR/err" && fail "the child's partial state was discarded: $(cat "$TESTDIR/err")"
[ -z "$(cb get -r -H -o value receive_resume_token bk | grep -v '^-$')" ] || fail "partial state left: $(recv_state bk)"
a=$(ca list -H -p -o name,guid -t snapshot -r tank | sed 's/^tank//')
b=$(cb list -H -p -o name,guid -t snapshot -r bk | sed 's/^bk//')
[ "$a" = "$b" ] || fail "snapshots differ: $(echo "$b" | tr '\n' ' ')"
rm -rf "$TESTDIR/out"
ok cb restore bk/b@x "$TESTDIR/out"
same_tree "$T/a" "$TESTDIR/out"
done_test
