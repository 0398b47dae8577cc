#!/bin/bash
# send -R of DS@S when a descendant lacks @S, as zfs (libzfs_sendrecv.c,
# send_iterate_fs and dump_filesystem) does it:
#  - a descendant made before DS@S was taken must have @S: the send is
#    refused, naming it, before a byte is written (zfs: "cannot send DS@S
#    recursively: snapshot CHILD@S does not exist");
#  - one made after DS@S is left out with its whole subtree (its DATASET
#    record too: the receiver used to create it empty, although the sender
#    had data for it);
#  - with -i, a descendant that lacks the source but has @S goes whole as
#    its @S alone; with -I, with every snapshot up to @S.
# sync -R keeps its own meaning (each dataset to its newest snapshot) and
# resumes a cut sync in such a tree (planned as sync plans, not as send -R).
. "$(dirname "$0")/lib.sh"
new_store
second_store
S=$TESTDIR/src
mkdir -p "$S/kid" "$S/late/deep" "$S/late2" "$S/late3"
echo top >"$S/f"; echo kid >"$S/kid/f"; echo deep >"$S/late/deep/f"; echo l2 >"$S/late2/f"
head -c 200000 /dev/urandom >"$S/late/f"

# ---- a descendant older than the snapshot, without it: refused ----
ok ca create -o source="$S" pool
ok ca create pool/kid
ok ca snapshot -r pool@a
ok ca snapshot pool@lone # pool only: pool/kid was there when it was taken
out=$(ca send -R pool@lone 2>"$TESTDIR/err") && fail "send -R with pool/kid@lone missing succeeded"
grep -q "pool/kid@lone: no such snapshot.*pool/kid is older than pool@lone" "$TESTDIR/err" ||
	fail "the refusal does not name pool/kid@lone and why: $(cat "$TESTDIR/err")"
[ -z "$out" ] || fail "a refused send -R wrote ${#out} bytes of stream"
fails_with 1 "pool/kid@lone: no such snapshot" ca send -n -v -R pool@lone
fails_with 1 "pool/kid@lone: no such snapshot" ca send -R -i @a pool@lone
fails_with 1 "pool/kid@lone: no such snapshot" ca send -R -I @a pool@lone
ok ca destroy pool@lone

# ---- descendants made after the snapshot: left out, subtree and all ----
ok ca create pool/late
ok ca create pool/late/deep
ok ca snapshot pool/late@x       # late has data, but no @a
ok ca snapshot pool/late/deep@a  # its parent is left out, so is it (zfs)
ca send -R pool@a >"$TESTDIR/full" || fail "send -R pool@a with later descendants: $(ca send -R pool@a 2>&1 >/dev/null)"
cb recv bk <"$TESTDIR/full" || fail "recv of send -R pool@a"
[ "$(names bk)" = "bk bk@a bk/kid bk/kid@a " ] ||
	fail "BUG: send -R pool@a carried datasets made after pool@a (empty or cut off): $(names bk)"

# ---- -R -i: a descendant without the source goes whole, @b alone ----
ok ca destroy pool/late/deep@a
ok ca snapshot -r pool@b
ca send -R -i @a pool@b >"$TESTDIR/inc" || fail "send -R -i @a pool@b"
cb recv bk <"$TESTDIR/inc" || fail "recv of send -R -i @a pool@b"
[ "$(names bk)" = "bk bk@a bk@b bk/kid bk/kid@a bk/kid@b bk/late bk/late@b bk/late/deep bk/late/deep@b " ] ||
	fail "send -R -i: new descendants should arrive as their @b alone (zfs -i): $(names bk)"
cb restore bk/late@b "$TESTDIR/r-late" || fail "restore bk/late@b"
cmp -s "$S/late/f" "$TESTDIR/r-late/f" || fail "bk/late@b does not hold pool/late's data"

# ---- -R -I: a descendant without the source goes with every snapshot ----
ok ca create pool/late2
ok ca snapshot pool/late2@y
ok ca snapshot -r pool@c
ca send -R -I @b pool@c >"$TESTDIR/incI" || fail "send -R -I @b pool@c"
cb recv bk <"$TESTDIR/incI" || fail "recv of send -R -I @b pool@c"
[ "$(cb list -H -o name -t snapshot bk/late2 | tr '\n' ' ')" = "bk/late2@y bk/late2@c " ] ||
	fail "send -R -I: a new descendant should arrive with all its snapshots: $(names bk/late2)"

# ---- a descendant made after the snapshot, in an incremental ----
ok ca snapshot pool@d          # pool only: pool/kid, late, late2 lack @d, all older
fails_with 1 "pool/kid@d: no such snapshot" ca send -R -i @c pool@d
ok ca destroy -r pool@d
ok ca snapshot -r pool@e
ok ca create pool/late3        # after @e, lacks it: left out of the -i stream
ok ca snapshot pool/late3@z
ca send -R -i @c pool@e | cb recv bk || fail "send -R -i @c pool@e with a later descendant"
[ -z "$(names bk/late3)" ] || fail "send -R -i carried pool/late3, made after pool@e: $(names bk/late3)"
cb list -H -o name bk/late2@e >/dev/null || fail "bk/late2@e missing after the -i stream"

# ---- sync -R is not send -R: each dataset goes to its own newest
# snapshot, and a cut sync is resumed, not thrown away: its resume is
# planned as sync plans (each dataset to its own newest snapshot).  As
# send -R -I, the plan refused tank/w (older than tank@x, without it), and
# sync discarded the partial receive and started the group again. ----
T=$TESTDIR/t
mkdir -p "$T/w"
head -c 600000 /dev/urandom >"$T/f"; head -c 900000 /dev/urandom >"$T/w/g"
ok ca create -o source="$T" tank
ok ca create tank/w
ok ca snapshot -r tank@first
head -c 600000 /dev/urandom >"$T/w/h"
ok ca snapshot tank/w@late
ok ca snapshot tank@x
cat >"$TESTDIR/cutssh" <<SH
#!/bin/bash
shift
case "\$*" in
*"'recv' '-s'"*) head -c "\$(cat "$TESTDIR/cut")" | sh -c "\$*" ;;
*) exec sh -c "\$*" ;;
esac
SH
chmod +x "$TESTDIR/cutssh"
echo 1000000 >"$TESTDIR/cut"
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R tank "localhost:$B:tk" 2>/dev/null &&
	fail "the cut sync -R succeeded"
[ "$(cb get -H -o value receive_resume_token tk 2>/dev/null)" != - ] ||
	fail "the cut sync -R left no partial state to resume"
echo 100000000 >"$TESTDIR/cut"
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R -v tank "localhost:$B:tk" >"$TESTDIR/out" 2>"$TESTDIR/err" ||
	fail "sync -R after a cut: $(cat "$TESTDIR/err")"
! grep -q "discarding the partial receive" "$TESTDIR/err" ||
	fail "BUG: sync -R threw the cut receive away instead of resuming it: $(cat "$TESTDIR/err")"
grep -q "resumed the partial receive into tk" "$TESTDIR/out" ||
	fail "sync -R after a cut did not resume: $(cat "$TESTDIR/out" "$TESTDIR/err")"
want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')
[ "$want" = "$(cb list -H -p -t snapshot -r -o name,guid tk)" ] ||
	fail "sync -R after a cut did not converge: $(names tk)"
cb restore tk/w@late "$TESTDIR/r-w" && cmp -s "$T/w/h" "$TESTDIR/r-w/h" ||
	fail "tk/w@late does not hold tank/w's data"

# ---- zfs mode words it as zfs does (libzfs_sendrecv.c), not in its
# usual "cannot open 'X': why" form; the native wording (above) keeps
# the object and the reason.  The stream's top missing stays "cannot
# open", as zfs says. ----
BIN=$TESTDIR/bin
mkdir -p "$BIN" && ln -s "$CAIRN" "$BIN/zfs"
printf 'pool %s\n' "$CAIRN_STORE" >"$TESTDIR/pools"
ok ca snapshot pool@f
fails_with 1 "^cannot send pool@f recursively: snapshot pool/kid@f does not exist$" \
	env CAIRN_POOLS_FILE="$TESTDIR/pools" "$BIN/zfs" send -R pool@f
out=$(env CAIRN_POOLS_FILE="$TESTDIR/pools" "$BIN/zfs" send -R pool@f 2>&1 >/dev/null)
[ "$(echo "$out" | wc -l)" = 1 ] || fail "zfs send -R: one line of refusal expected: $out"
fails_with 1 "^cannot open 'pool@nosuch': dataset does not exist$" \
	env CAIRN_POOLS_FILE="$TESTDIR/pools" "$BIN/zfs" send -R pool@nosuch
fails_with 1 "^cannot send pool@f recursively: snapshot pool/kid@f does not exist$" \
	env CAIRN_POOLS_FILE="$TESTDIR/pools" "$BIN/zfs" send -R -i @e pool@f
# A descendant's snapshot that is there but cannot be read (a chunk of it
# missing from the store) is not "does not exist": zfs mode names the
# real cause.  (Recognised by the detail's shape alone, "CHILD@S: ...",
# it was reported as a missing snapshot.)
mkdir -p "$S/dmg" && head -c 300000 /dev/urandom >"$S/dmg/f"
ok ca create -o source="$S/dmg" pool/dmg
for ds in $(ca list -H -o name -r pool | grep -v "^pool/dmg$"); do ok ca snapshot "$ds@h"; done
touch "$TESTDIR/mark" && sleep 1
ok ca snapshot pool/dmg@h
mkdir -p "$TESTDIR/saved"
find "$CAIRN_STORE/.chunks" -type f -newer "$TESTDIR/mark" -exec mv {} "$TESTDIR/saved/" \;
[ -n "$(ls "$TESTDIR/saved")" ] || fail "no chunk written by pool/dmg@h?"
err=$(env CAIRN_POOLS_FILE="$TESTDIR/pools" "$BIN/zfs" send -R pool@h 2>&1 >/dev/null) &&
	fail "zfs send -R with a chunk missing succeeded"
echo "$err" | grep -q "does not exist" && fail "BUG: zfs send -R calls a damaged snapshot missing: $err"
echo "$err" | grep -q "pool/dmg@h.*missing from the chunk store" ||
	fail "zfs send -R with a chunk missing does not say so: $err"
done_test
