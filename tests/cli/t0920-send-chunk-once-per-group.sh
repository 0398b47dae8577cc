#!/bin/bash
# A -R stream sends a chunk once per group, however many of the group's
# snapshots hold it: datasets with the same files, or a child whose source
# lies inside its parent's (the tour's tank=/srv, tank/www), cost one copy
# on the wire, not one per dataset.  Before, p, p/a and p/b below (p's
# source holding a and b, each with the same 3 MB file) made a 9 MB
# stream, and sync -R sent 9 MB for 3 MB stored.  The receiver has the
# chunk from its first sighting on; a resumed stream skips by every
# sighting (t0921).
. "$(dirname "$0")/lib.sh"
new_store
second_store
S=$TESTDIR/src
mkdir -p "$S/a" "$S/b"
head -c 3000000 /dev/urandom >"$S/a/f"
cp "$S/a/f" "$S/b/f"
echo b >"$S/b/g"
ok ca create -o source="$S" p
ok ca create -o source="$S/a" p/a
ok ca create -o source="$S/b" p/b
ok ca snapshot -r p@1
size=$(ca send -R p@1 | wc -c)
[ "$size" -lt 3500000 ] || fail "send -R p@1 is $size bytes for 3 MB of data"
est=$(ca send -R -n -P p@1 | awk '$1 == "size" { print $2 }')
[ -n "$est" ] && [ "$est" -lt 3500000 ] || fail "send -R -n estimates $est bytes"
ca send -R p@1 | cb recv q || fail "send -R | recv"
ok cb verify -r q
for d in "" /a /b; do
	rm -rf "$TESTDIR/r"
	ok cb restore "q$d@1" "$TESTDIR/r"
	diff -r "$S$d" "$TESTDIR/r" >/dev/null || fail "q$d@1 differs from its source"
done

# sync -R into a store without any of the chunks: the same, counted by
# sync itself
ok "$CAIRN" -s "$TESTDIR/c" init >/dev/null
out=$(ca sync -R -v -p p "$TESTDIR/c:s" 2>&1) || fail "sync -R: $out"
sent=$(echo "$out" | sed -n 's/^synced .*: \([0-9]*\) bytes in .*/\1/p')
[ -n "$sent" ] && [ "$sent" -lt 3500000 ] || fail "sync -R sent $sent bytes: $out"

# a stream cut in the group's first copy of the chunks resumes whole
ca send -R p@1 >"$TESTDIR/st" || fail "send -R to a file"
head -c 1500000 "$TESTDIR/st" | cb recv -s cut 2>/dev/null && fail "a cut stream was received"
tok=$(cb get -H -o value receive_resume_token cut)
case $tok in [23]-*) ;; *) fail "the cut left no partial state: $tok" ;; esac
ca send -t "$tok" | cb recv -s cut || fail "resumed send -t | recv -s"
ok cb verify -r cut
rm -rf "$TESTDIR/r"
ok cb restore cut/b@1 "$TESTDIR/r"
diff -r "$S/b" "$TESTDIR/r" >/dev/null || fail "cut/b@1 differs after the resume"
done_test
