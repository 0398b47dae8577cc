#!/bin/bash
# recv -R cannot move its own target aside: when the dataset at the target
# name is, by guid, a child of the stream (the sender renamed the old top
# into a new top: t -> t2, a new t, t2 -> t/c), the receive refuses with
# the names involved, and nothing on the destination changes.  (Children
# in that position are parked under a temporary name and follow; the top
# has no parent to park it in.)  The dry run refuses alike.
. "$(dirname "$0")/lib.sh"
T=$TESTDIR/src
new_store
second_store
mkdir -p "$T"
rnd "$T/f"
ok ca create -o source="$T" t
ok ca snapshot -r t@1
ok ca sync -R t "$B:bk" >/dev/null
ok ca rename t t2
ok ca create -o source="$T" t
ok ca rename t2 t/c
ok ca snapshot -r t@2
ca send -R t@2 >"$TESTDIR/s" || fail "send -R t@2"
before=$(cb list -H -p -t all -r -o name,guid,createtxg bk)
[ -n "$before" ] || fail "nothing on the destination to compare"
for n in "" -n; do
	fails_with 1 "bk: dataset already exists, and the stream moves it to bk/c" \
		cb recv $n -F bk <"$TESTDIR/s"
	[ "$(cb list -H -p -t all -r -o name,guid,createtxg bk)" = "$before" ] ||
		fail "recv $n -F changed the destination"
done
# Into a new name the same stream is received whole.
ok cb recv new <"$TESTDIR/s"
[ "$(cb list -H -o name -r new)" = "$(printf 'new\nnew/c')" ] || fail "stream not received into new"
done_test
