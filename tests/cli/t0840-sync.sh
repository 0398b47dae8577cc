#!/bin/bash
# sync: only chunks the destination lacks cross, whatever dataset they are
# in there; works between local stores and over (a stand-in for) ssh.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin # a rebuild must not hit this test
A="$TESTDIR/A" B="$TESTDIR/B"
mkdir -p "$TESTDIR/src" "$TESTDIR/src2"
cp -a /usr/include/linux "$TESTDIR/src/"
cp -a /usr/include/linux "$TESTDIR/src2/"
head -c 2000000 /dev/urandom >"$TESTDIR/src/big"
cp "$TESTDIR/src/big" "$TESTDIR/src2/big"
ok "$CAIRN" -s "$A" init >/dev/null
ok "$CAIRN" -s "$B" init >/dev/null
ok "$CAIRN" -s "$A" create -o source="$TESTDIR/src" t1
ok "$CAIRN" -s "$A" snapshot t1@1
ok "$CAIRN" -s "$B" create -o source="$TESTDIR/src2" other
ok "$CAIRN" -s "$B" snapshot other@x

# the destination already has every content chunk through "other"
out=$("$CAIRN" -s "$A" sync -v -p t1 "$B:copy" 2>&1) || fail "sync: $out"
moved=$(echo "$out" | sed -n 's/^synced .*: \([0-9]*\) bytes in .*/\1/p')
[ -n "$moved" ] || fail "sync -v -p printed no byte count: $out"
"$CAIRN" -s "$B" restore copy@1 "$TESTDIR/r1" || fail "restore copy@1"
same_tree "$TESTDIR/src" "$TESTDIR/r1"
[ "$("$CAIRN" -s "$A" list -H -o guid t1@1)" = "$("$CAIRN" -s "$B" list -H -o guid copy@1)" ] || fail "guid differs"

# send|recv of the same snapshot moves everything
"$CAIRN" -s "$A" send t1@1 >"$TESTDIR/full" || fail "send t1@1"
full=$(stat -c %s "$TESTDIR/full")
[ "$full" -gt 2000000 ] || fail "full stream only $full bytes?"
# the destination had every content chunk: sync moved under 2% of the stream
[ -n "$moved" ] && [ $((moved * 50)) -lt "$full" ] || fail "sync moved $moved of $full bytes although the destination had the data"

# incremental over a fake ssh that runs the command locally
echo change >>"$TESTDIR/src/linux/kernel.h"
ok "$CAIRN" -s "$A" snapshot t1@2
ok "$CAIRN" -s "$A" snapshot t1@3
printf '#!/bin/sh\nshift\nexec sh -c "$*"\n' >"$TESTDIR/fakessh"
chmod +x "$TESTDIR/fakessh"
CAIRN_SSH="$TESTDIR/fakessh" CAIRN_REMOTE="$CAIRN" ok "$CAIRN" -s "$A" sync t1 "localhost:$B:copy"
[ "$("$CAIRN" -s "$B" list -H -o name -t snapshot copy | tr '\n' ' ')" = "copy@1 copy@2 copy@3 " ] || fail "intermediates not synced"
"$CAIRN" -s "$B" restore copy@3 "$TESTDIR/r3" || fail "restore copy@3"
same_tree "$TESTDIR/src" "$TESTDIR/r3"
out=$("$CAIRN" -s "$A" sync -v t1 "$B:copy" 2>&1) || fail "second sync: $out"
echo "$out" | grep -q "up to date" || fail "second sync not a no-op: $out"
"$CAIRN" -s "$A" sync --dry-run t1 "$B:other" >/dev/null 2>&1 && fail "sync into unrelated dataset accepted"
fails_with 1 "other: has snapshots (eg. other@x) but none in common with t1" "$CAIRN" -s "$A" sync t1 "$B:other"
fails_with 1 "must be a local store" "$CAIRN" -s "$A" sync "host:$A:t1" "$B:x"
# sync -R brings every dataset to its own newest snapshot, as syncoid -r
# does: a child without the top's newest snapshot name (w@first only), or
# with snapshots newer than the top's (w@late), arrives whole in one run,
# and the next run is a no-op.  (By the top's name alone, the child came
# empty, and every later sync "synced" 0 snapshots without catching up.)
mkdir -p "$TESTDIR/rs/w"
echo top >"$TESTDIR/rs/f"
echo child >"$TESTDIR/rs/w/g"
ok "$CAIRN" -s "$A" create -o source="$TESTDIR/rs" rs
ok "$CAIRN" -s "$A" create rs/w
ok "$CAIRN" -s "$A" snapshot -r rs@first
ok "$CAIRN" -s "$A" snapshot rs@x
echo later >>"$TESTDIR/rs/w/g"
ok "$CAIRN" -s "$A" snapshot rs/w@late
ok "$CAIRN" -s "$A" sync -R rs "$B:rcopy"
got=$("$CAIRN" -s "$B" list -H -o name -t snapshot -r rcopy | tr '\n' ' ')
[ "$got" = "rcopy@first rcopy@x rcopy/w@first rcopy/w@late " ] || fail "sync -R left a child behind: $got"
out=$("$CAIRN" -s "$A" sync -R -v rs "$B:rcopy" 2>&1) || fail "second sync -R: $out"
echo "$out" | grep -q "up to date" || fail "second sync -R not a no-op: $out"
ok "$CAIRN" -s "$B" restore rcopy/w@late "$TESTDIR/rw"
cmp -s "$TESTDIR/rs/w/g" "$TESTDIR/rw/g" || fail "rcopy/w@late content"
# sync -R decides per dataset: a destination dataset is current only when
# it (the source dataset's name mapped under the destination) has the
# source dataset's newest snapshot.  The same guid under another dataset
# there does not count, neither for "up to date" nor as an incremental
# source.  (Counted anywhere under the destination, dd/w's snapshot in
# dcopy/other made sync say "up to date" and never create dcopy/w.)
mkdir -p "$TESTDIR/dd/w"
echo top >"$TESTDIR/dd/f"
echo child >"$TESTDIR/dd/w/g"
ok "$CAIRN" -s "$A" create -o source="$TESTDIR/dd" dd
ok "$CAIRN" -s "$A" create dd/w
ok "$CAIRN" -s "$A" snapshot -r dd@first
"$CAIRN" -s "$A" send dd@first | "$CAIRN" -s "$B" recv dcopy || fail "recv dd@first into dcopy"
"$CAIRN" -s "$A" send dd/w@first | "$CAIRN" -s "$B" recv dcopy/other || fail "recv dd/w@first into dcopy/other"
out=$("$CAIRN" -s "$A" sync -R -v dd "$B:dcopy" 2>&1) || fail "sync -R with dd/w's snapshot in dcopy/other: $out"
got=$("$CAIRN" -s "$B" list -H -o name -t snapshot -r dcopy | tr '\n' ' ')
[ "$got" = "dcopy@first dcopy/other@first dcopy/w@first " ] ||
	fail "BUG: sync -R counted dcopy/other's snapshot as dcopy/w's: $got ($out)"
# ... nor as dcopy/w's incremental source: without dcopy/w, dd/w goes whole
echo more >>"$TESTDIR/dd/w/g"
ok "$CAIRN" -s "$A" snapshot dd/w@second
ok "$CAIRN" -s "$B" destroy -r dcopy/w
out=$("$CAIRN" -s "$A" sync -R -v dd "$B:dcopy" 2>&1) || fail "sync -R without dcopy/w: $out"
got=$("$CAIRN" -s "$B" list -H -o name -t snapshot -r dcopy/w 2>&1 | tr '\n' ' ')
[ "$got" = "dcopy/w@first dcopy/w@second " ] || fail "BUG: dcopy/w not synced whole: $got ($out)"
ok "$CAIRN" -s "$B" restore dcopy/w@second "$TESTDIR/dw"
cmp -s "$TESTDIR/dd/w/g" "$TESTDIR/dw/g" || fail "dcopy/w@second content"
out=$("$CAIRN" -s "$A" sync -R -v dd "$B:dcopy" 2>&1) || fail "third sync -R of dd: $out"
echo "$out" | grep -q "up to date" || fail "third sync -R of dd not a no-op: $out"
# A child renamed on the source is the destination dataset with its guid:
# the stream renames it there (recv -R matches datasets by guid), so its
# snapshots count for its new name.  (Matched by name alone, the renamed
# child was planned whole, and the receiver refused the full stream onto
# the dataset it had just renamed - "destination has snapshots" - on every
# run, even with the oldest snapshot pruned there.)
mkdir -p "$TESTDIR/rn/w"
echo top >"$TESTDIR/rn/f"; echo child >"$TESTDIR/rn/w/g"
ok "$CAIRN" -s "$A" create -o source="$TESTDIR/rn" rn
ok "$CAIRN" -s "$A" create rn/w
ok "$CAIRN" -s "$A" snapshot -r rn@s1
echo more >>"$TESTDIR/rn/w/g"
ok "$CAIRN" -s "$A" snapshot -r rn@s2
ok "$CAIRN" -s "$A" sync -R rn "$B:rncopy"
ok "$CAIRN" -s "$B" destroy rncopy/w@s1
ok "$CAIRN" -s "$A" rename rn/w rn/w2
mv "$TESTDIR/rn/w" "$TESTDIR/rn/w2"
echo again >>"$TESTDIR/rn/w2/g"
ok "$CAIRN" -s "$A" snapshot -r rn@s3
out=$("$CAIRN" -s "$A" sync -R -v rn "$B:rncopy" 2>&1) || fail "BUG: sync -R after a child rename: $out"
got=$("$CAIRN" -s "$B" list -H -o name -t snapshot -r rncopy | tr '\n' ' ')
[ "$got" = "rncopy@s1 rncopy@s2 rncopy@s3 rncopy/w2@s2 rncopy/w2@s3 " ] ||
	fail "sync -R after a child rename: $got ($out)"
ok "$CAIRN" -s "$B" restore rncopy/w2@s3 "$TESTDIR/rnw"
cmp -s "$TESTDIR/rn/w2/g" "$TESTDIR/rnw/g" || fail "rncopy/w2@s3 content"
out=$("$CAIRN" -s "$A" sync -R -v rn "$B:rncopy" 2>&1) || fail "sync -R after the rename, again: $out"
echo "$out" | grep -q "up to date" || fail "sync -R after the rename, again, not a no-op: $out"
# A rename alone is synced too: a stream with no snapshot to send renames
# it there (before, sync said "up to date" and left rncopy/w2 as it was).
ok "$CAIRN" -s "$A" rename rn/w2 rn/w3
mv "$TESTDIR/rn/w2" "$TESTDIR/rn/w3"
# sync -n names the rename the real run makes (it said nothing of it)
out=$("$CAIRN" -s "$A" sync -R -n rn "$B:rncopy" 2>&1) || fail "sync -R -n after a rename alone: $out"
echo "$out" | grep -qx "would rename rncopy/w2 to rncopy/w3" || fail "sync -R -n did not name the rename: $out"
[ -n "$("$CAIRN" -s "$B" list -H -o name rncopy/w2 2>/dev/null)" ] || fail "sync -R -n renamed rncopy/w2"
out=$("$CAIRN" -s "$A" sync -R -v rn "$B:rncopy" 2>&1) || fail "sync -R after a rename alone: $out"
got=$("$CAIRN" -s "$B" list -H -o name -t snapshot -r rncopy | tr '\n' ' ')
[ "$got" = "rncopy@s1 rncopy@s2 rncopy@s3 rncopy/w3@s2 rncopy/w3@s3 " ] ||
	fail "BUG: sync -R after a rename alone: $got ($out)"
out=$("$CAIRN" -s "$A" sync -R -v rn "$B:rncopy" 2>&1) || fail "sync -R after the rename alone, again: $out"
echo "$out" | grep -q "up to date" || fail "sync -R after the rename alone, again, not a no-op: $out"
# "Has snapshots but none in common" is about the destination dataset's
# own snapshots.  A top with none, whose child there is a copy of the
# source's child (synced alone before), is synced -R (it was refused,
# "has snapshots", which it had not).  Without -R a child's snapshots do
# not matter: the stream does not touch it.  With -R, a top with none over
# children whose snapshots are unrelated to the source is refused, naming
# one of them, and nothing changes.
bc() { "$CAIRN" -s "$B" "$@"; }
ok bc create ct
ok "$CAIRN" -s "$A" sync rs/w "$B:ct/w"
out=$("$CAIRN" -s "$A" sync -R rs "$B:ct" 2>&1) || fail "BUG: sync -R into a top without snapshots over a copy of the child: $out"
got=$(bc list -H -o name -t snapshot -r ct | tr '\n' ' ')
[ "$got" = "ct@first ct@x ct/w@first ct/w@late " ] || fail "sync -R into ct: $got ($out)"
# The same with -F, when a dataset there is not the source's (cw/mine, with
# a snapshot of its own): the stream into a top without snapshots is a
# full one, which destroys nothing (as in zfs), but the next sync -R -F,
# its top then in common, would destroy cw/mine.  Refused, naming it,
# nothing changed (sync -R -F destroyed cw/mine and its snapshot at once);
# without -F it syncs and cw/mine stays.
ok bc create cw
ok "$CAIRN" -s "$A" sync rs/w "$B:cw/w"
ok bc create -o source="$TESTDIR/src2/linux" cw/mine
ok bc snapshot cw/mine@m
L0=$(bc list -H -p -t all -o name,guid)
fails_with 1 "cw: has no snapshots of its own; once it has, sync -R -F would destroy cw/mine" \
	"$CAIRN" -s "$A" sync -R -F rs "$B:cw"
[ "$(bc list -H -p -t all -o name,guid)" = "$L0" ] || fail "BUG: a refused sync -R -F changed the destination: $(bc list -H -o name -t all -r cw | tr '\n' ' ')"
out=$("$CAIRN" -s "$A" sync -R rs "$B:cw" 2>&1) || fail "sync -R (no -F) into cw: $out"
got=$(bc list -H -o name -t snapshot -r cw | tr '\n' ' ')
[ "$got" = "cw@first cw@x cw/mine@m cw/w@first cw/w@late " ] || fail "sync -R into cw: $got ($out)"
ok bc create -o source="$TESTDIR/src2" cu
ok bc create -o source="$TESTDIR/src2/linux" cu/other
ok bc snapshot cu/other@z
out=$("$CAIRN" -s "$A" sync t1 "$B:cu" 2>&1) || fail "BUG: sync (not -R) refused for a child's snapshots: $out"
[ "$(bc list -H -o guid cu@3 2>&1)" = "$("$CAIRN" -s "$A" list -H -o guid t1@3)" ] || fail "cu@3 not synced"
ok bc create -o source="$TESTDIR/src2" cv
ok bc create -o source="$TESTDIR/src2/linux" cv/other
ok bc snapshot cv/other@z
L0=$(bc list -H -p -t all -o name,guid)
fails_with 1 "cv: has no snapshots of its own, but datasets under it do (eg. cv/other@z), none in common with t1" \
	"$CAIRN" -s "$A" sync -R -F t1 "$B:cv"
[ "$(bc list -H -p -t all -o name,guid)" = "$L0" ] || fail "a refused sync -R changed the destination"
# sync -R -F destroys the datasets the source no longer has (as recv -F of
# a -R stream does) also when that is the source's only change: a stream
# with no snapshot carries it.  (It said "up to date" and left them until
# something new was sent.)  A held snapshot there still stops it; without
# -F nothing is destroyed.
mkdir -p "$TESTDIR/rf/a" "$TESTDIR/rf/b" "$TESTDIR/rf/c"
echo f >"$TESTDIR/rf/f"
ok "$CAIRN" -s "$A" create -o source="$TESTDIR/rf" rf
for k in a b c; do ok "$CAIRN" -s "$A" create rf/$k; done
ok "$CAIRN" -s "$A" snapshot -r rf@1
ok "$CAIRN" -s "$A" sync -R rf "$B:rfc"
ok "$CAIRN" -s "$A" destroy -r rf/b
ok "$CAIRN" -s "$A" destroy -r rf/c
ok bc hold keep rfc/c@1
out=$("$CAIRN" -s "$A" sync -R -v rf "$B:rfc" 2>&1) || fail "sync -R (no -F) after a destroy: $out"
echo "$out" | grep -q "up to date" || fail "sync -R without -F not a no-op: $out"
fails_with 1 "rfc/c@1: snapshot is held" "$CAIRN" -s "$A" sync -R -F rf "$B:rfc"
got=$(bc list -H -o name -r rfc | tr '\n' ' ')
[ "$got" = "rfc rfc/a rfc/b rfc/c " ] || fail "a refused sync -R -F changed the destination: $got"
ok bc release keep rfc/c@1
# sync -n -R -F says which datasets the stream would destroy (it said
# "would sync rf@1 @1 -> rfc: 0B in 0 snapshots" and nothing of them), and
# destroys nothing
out=$("$CAIRN" -s "$A" sync -R -F -n rf "$B:rfc" 2>&1) || fail "sync -n -R -F after a destroy: $out"
[ "$(echo "$out" | grep "destroy" | tr '\n' ' ')" = "would destroy rfc/b would destroy rfc/c " ] ||
	fail "BUG: sync -n -R -F does not say what it would destroy: $out"
got=$(bc list -H -o name -r rfc | tr '\n' ' ')
[ "$got" = "rfc rfc/a rfc/b rfc/c " ] || fail "sync -n -R -F changed the destination: $got"
out=$("$CAIRN" -s "$A" sync -R -F -v rf "$B:rfc" 2>&1) || fail "sync -R -F after a destroy: $out"
got=$(bc list -H -o name -r rfc | tr '\n' ' ')
[ "$got" = "rfc rfc/a " ] || fail "BUG: sync -R -F left datasets the source destroyed: $got ($out)"
out=$("$CAIRN" -s "$A" sync -R -F -v rf "$B:rfc" 2>&1) || fail "sync -R -F again: $out"
echo "$out" | grep -q "up to date" || fail "sync -R -F again not a no-op: $out"
# sync -R -F keeps a destination dataset that is a copy of a source
# dataset although its dataset guid is not the source's (a plain sync or
# send|recv made it: only -R streams carry dataset guids): it holds a
# snapshot the source has, which is how zfs recv -F tells a copy from a
# dataset the sender destroyed.  So is a dataset above such a copy (a
# parent the user made so the copy could go there).  Nothing changed on
# the source: "up to date", nothing destroyed.  (sync -R -F destroyed both,
# and said "synced"; the next run sent them again whole.)
mkdir -p "$TESTDIR/rf/solo" "$TESTDIR/rf/p/q"
ok "$CAIRN" -s "$A" create rf/solo
ok "$CAIRN" -s "$A" create rf/p
ok "$CAIRN" -s "$A" create rf/p/q
ok "$CAIRN" -s "$A" snapshot rf/solo@s1
ok "$CAIRN" -s "$A" snapshot rf/p/q@q1
ok "$CAIRN" -s "$A" sync rf/solo "$B:rfc/solo"
ok bc create rfc/p
ok "$CAIRN" -s "$A" sync rf/p/q "$B:rfc/p/q"
out=$("$CAIRN" -s "$A" sync -R -F -v rf "$B:rfc" 2>&1) || fail "sync -R -F over copies made by plain syncs: $out"
echo "$out" | grep -q "up to date" || fail "BUG: sync -R -F over copies made by plain syncs not a no-op: $out"
got=$(bc list -H -o name -t all -r rfc | tr '\n' ' ')
[ "$got" = "rfc rfc@1 rfc/a rfc/a@1 rfc/p rfc/p/q rfc/p/q@q1 rfc/solo rfc/solo@s1 " ] ||
	fail "BUG: sync -R -F destroyed copies of source datasets: $got ($out)"
# ... and when something is sent, they are kept and brought up to date
ok "$CAIRN" -s "$A" snapshot -r rf@2
out=$("$CAIRN" -s "$A" sync -R -F -v rf "$B:rfc" 2>&1) || fail "sync -R -F rf@2 over copies: $out"
echo "$out" | grep -q "destroyed" && fail "BUG: sync -R -F rf@2 destroyed something: $out"
got=$(bc list -H -o name -t snapshot -r rfc | tr '\n' ' ')
[ "$got" = "rfc@1 rfc@2 rfc/a@1 rfc/a@2 rfc/p@2 rfc/p/q@q1 rfc/p/q@2 rfc/solo@s1 rfc/solo@2 " ] ||
	fail "BUG: sync -R -F rf@2 over copies: $got ($out)"
out=$("$CAIRN" -s "$A" sync -R -F -v rf "$B:rfc" 2>&1) || fail "sync -R -F rf@2 again: $out"
echo "$out" | grep -q "up to date" || fail "sync -R -F rf@2 again not a no-op: $out"
done_test
