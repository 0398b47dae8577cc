#!/bin/bash
# sync -R -n after a parent dataset was renamed on the source names that
# one rename, as the real run makes it: its children move with it and are
# not renamed on their own.  (Before: it also printed "would rename d/k/g
# to d/m/g" and "would rename d/k/g/h to d/m/g/h", renames the receive
# never makes.)  A child renamed on its own under the renamed parent is
# named as the receiver renames it, under the parent's new name: "d/m/x
# to d/m/y" (before: "d/k/x to d/m/y").  A child that keeps its name while
# its parent and another swap names is moved back by the receiver, and
# named: "d/b/x to d/a/x" after "d/a to d/b" (before: not named at all).
. "$(dirname "$0")/lib.sh"
top_and_kid
mkdir -p "$S/k/g/h" "$S/k/x"
echo g >"$S/k/g/f"
echo h >"$S/k/g/h/f"
echo x >"$S/k/x/f"
ok ca create -o source="$S" p
for d in p/k p/k/g p/k/g/h p/k/x; do ok ca create "$d"; done
ok ca snapshot -r p@1
ok ca sync -R p "$B:d"
ok ca rename p/k p/m
ok ca rename p/m/x p/m/y
mv "$S/k" "$S/m"
mv "$S/m/x" "$S/m/y"
ok ca snapshot -r p@2
out=$(ca sync -R -n p "$B:d") || fail "sync -R -n after renames: $out"
renames=$(echo "$out" | grep '^would rename' | sort | tr '\n' '|')
[ "$renames" = "would rename d/k to d/m|would rename d/m/x to d/m/y|" ] ||
	fail "sync -R -n named other renames than the receive makes: $renames"
[ "$(names d)" = "d d@1 d/k d/k@1 d/k/g d/k/g@1 d/k/g/h d/k/g/h@1 d/k/x d/k/x@1 " ] ||
	fail "sync -R -n changed the destination: $(names d)"
ok ca sync -R p "$B:d"
[ "$(snaps d)" = "d@1 d@2 d/m@1 d/m@2 d/m/g@1 d/m/g@2 d/m/g/h@1 d/m/g/h@2 d/m/y@1 d/m/y@2 " ] ||
	fail "sync -R after the renames: $(snaps d)"
out=$(ca sync -R -n p "$B:d") || fail "sync -R -n once in step: $out"
! echo "$out" | grep -q '^would rename' || fail "renames named once in step: $out"

# parents a and b swap names; x, a's child, goes to the new a by its old name
mkdir -p "$S/a/x" "$S/b"
echo x >"$S/a/x/f"
for d in q q/a q/a/x q/b; do ok ca create -o source="$S/${d#q}" "$d"; done
ok ca snapshot -r q@1
ok ca sync -R q "$B:e"
ok ca rename q/a q/t
ok ca rename q/b q/a
ok ca rename q/t q/b
ok ca rename q/b/x q/a/x
ok ca snapshot -r q@2
out=$(ca sync -R -n q "$B:e") || fail "sync -R -n after a swap of parents: $out"
renames=$(echo "$out" | grep '^would rename' | tr '\n' '|')
[ "$renames" = "would rename e/b to e/a|would rename e/a to e/b|would rename e/b/x to e/a/x|" ] ||
	fail "sync -R -n after a swap of parents: $renames"
out=$(ca sync -R -v q "$B:e" 2>&1) || fail "sync -R after a swap of parents: $out"
echo "$out" | grep -q "^renamed e/recv-rename-0/x to e/a/x$" || fail "x not moved back: $out"
[ "$(cb list -H -o guid e/a/x)" = "$(ca list -H -o guid q/a/x)" ] || fail "e/a/x is not q/a/x"
done_test
