#!/bin/bash
# sync -R follows datasets renamed on the source also when the renames
# cannot be made one at a time on the destination: two children's names
# swapped, a chain (b to c, then a to b), and a renamed dataset's old name
# taken by a new dataset.  The receiver moves a dataset that leaves a name
# to a temporary name first, as zfs receive does.  With and without -F,
# sync -n names the renames, one sync converges (names, guids, content),
# the next is up to date, and no temporary name is left.  A stream cut in
# the middle and resumed converges too.  (Before: each was refused with
# "destination has snapshots" or "not the same snapshot" on every run.)
# A destination dataset of its own that holds the new name is still in the
# way: refused, and nothing there changes.
. "$(dirname "$0")/lib.sh"
T=$TESTDIR/src
new_store
second_store

# setup CASE: CASE over $T/CASE with children a and b, synced -R to
# CASE-cp and CASE-cpF, then renamed on the source as CASE says, and a
# second snapshot taken.
setup() {
	local s=$T/$1
	mkdir -p "$s/a" "$s/b"
	echo top >"$s/f"; rnd "$s/a/f"; rnd "$s/b/f"
	ok ca create -o source="$s" "$1"
	ok ca create "$1/a"
	ok ca create "$1/b"
	ok ca snapshot -r "$1@s1"
	ok ca sync -R "$1" "$B:$1-cp"
	ok ca sync -R "$1" "$B:$1-cpF"
	case $1 in
	swap*) ok ca rename "$1/a" "$1/t"; ok ca rename "$1/b" "$1/a"; ok ca rename "$1/t" "$1/b"
	       mv "$s/a" "$s/t"; mv "$s/b" "$s/a"; mv "$s/t" "$s/b" ;;
	chain*) ok ca rename "$1/b" "$1/c"; ok ca rename "$1/a" "$1/b"
	        mv "$s/b" "$s/c"; mv "$s/a" "$s/b" ;;
	reuse*) ok ca rename "$1/a" "$1/a2"; mv "$s/a" "$s/a2"; mkdir "$s/a"; rnd "$s/a/f"
	        ok ca create "$1/a" ;;
	own) ok ca rename own/b own/c; mv "$s/b" "$s/c" ;;
	esac
	rnd "$s/f2"
	ok ca snapshot -r "$1@s2"
}

# converged CASE DEST: DEST has the source's datasets and snapshots (names
# and guids), each child's newest snapshot restores to the source's tree,
# and no temporary name is left.
converged() {
	local want got kid
	want=$(ca list -H -p -t all -r -o name,guid "$1" | sed "s|^$1|$2|")
	got=$(cb list -H -p -t all -r -o name,guid "$2")
	[ "$want" = "$got" ] || fail "$2: not the source's datasets: $got"
	for kid in $(ca list -H -o name -r "$1" | sed -n "s|^$1/||p"); do
		rm -rf "$TESTDIR/r"
		ok cb restore "$2/$kid@s2" "$TESTDIR/r"
		same_tree "$T/$1/$kid" "$TESTDIR/r"
	done
	! cb list -H -o name -r "$2" | grep -q recv-rename || fail "$2: a temporary name is left"
}

for case in swap chain reuse; do
	setup $case
	for F in "" -F; do
		dst=$case-cp${F#-}
		out=$(ca sync -R -n $F $case "$B:$dst") || fail "$case: sync -R -n $F: $out"
		echo "$out" | grep -q "^would rename $dst/" || fail "$case: sync -R -n $F named no rename: $out"
		out=$(ca sync -R $F $case "$B:$dst" 2>&1) || fail "BUG: $case: sync -R $F: $out"
		converged $case "$dst"
		out=$(ca sync -R -v $F $case "$B:$dst" 2>&1) || fail "$case: sync -R $F again: $out"
		echo "$out" | grep -q "is up to date" || fail "$case: sync -R $F again, not up to date: $out"
	done
done

# Cut in the middle of the stream and resumed by the next sync.
for case in swapcut reusecut; do
	setup $case
	ca send -R -I @s1 $case@s2 >"$TESTDIR/i" || fail "$case: send -R -I"
	size=$(stat -c %s "$TESTDIR/i")
	head -c $((size / 2)) "$TESTDIR/i" | cb recv -s $case-cp 2>/dev/null && fail "$case: a cut stream was received"
	[ "$(cb get -H -o value receive_resume_token $case-cp)" != - ] || fail "$case: the cut left no partial state"
	out=$(ca sync -R $case "$B:$case-cp" 2>&1) || fail "BUG: $case: sync after the cut: $out"
	converged $case $case-cp
	[ "$(cb get -H -o value receive_resume_token $case-cp)" = - ] || fail "$case: partial state left"
done

# A dataset of the destination's own at the new name is in the way.
setup own
ok cb create own-cp/c
before=$(cb list -H -p -t all -r -o name,guid own-cp)
for F in "" -F; do
	ca sync -R $F own "$B:own-cp" 2>"$TESTDIR/err" && fail "own: sync -R $F renamed onto the destination's own dataset"
	[ -s "$TESTDIR/err" ] || fail "own: sync -R $F failed without a reason"
	[ "$before" = "$(cb list -H -p -t all -r -o name,guid own-cp)" ] ||
		fail "BUG: own: sync -R $F changed the destination: $(cb list -H -p -t all -r -o name,guid own-cp)"
done
done_test
