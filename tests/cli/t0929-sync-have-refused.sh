#!/bin/bash
# When the destination's cairn refuses the chunk query itself (one without
# the have verb), sync names that reason and does not say that running it
# again would help: it would fail the same way.  A far side killed while
# it answers is a failure a retry gets past: sync says so, and the next
# sync converges.  (Before: both said to run sync again, to resume.)
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca snapshot p@1
ssh_stand_in() {
	cat >"$TESTDIR/ssh" <<SH
#!/bin/bash
shift
exec sh -c "\$*"
SH
	chmod +x "$TESTDIR/ssh"
}
ssh_stand_in
# a cairn there without have (it answers as cairn does for an unknown verb)
cat >"$TESTDIR/nohave" <<SH
#!/bin/sh
[ "\$3" = have ] && { echo "cairn: unknown verb 'have'" >&2; exit 2; }
exec "$CAIRN" "\$@"
SH
# a cairn there whose have is killed before it answers
cat >"$TESTDIR/killedhave" <<SH
#!/bin/sh
[ "\$3" = have ] && kill -9 \$\$
exec "$CAIRN" "\$@"
SH
chmod +x "$TESTDIR/nohave" "$TESTDIR/killedhave"
out=$(CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$TESTDIR/nohave ca sync p "far:$B:d" 2>&1) &&
	fail "sync succeeded against a cairn without have: $out"
echo "$out" | grep -q "^cairn: sync: d: sending p@1: the destination stopped answering which chunks it has: .*unknown verb 'have'" ||
	fail "the refusal is not the reason given: $out"
! echo "$out" | grep -q "sync again" || fail "BUG: a refusal that will repeat says to run sync again: $out"
out=$(CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$TESTDIR/killedhave ca sync p "far:$B:d" 2>&1) &&
	fail "sync succeeded with its have killed: $out"
echo "$out" | grep -q "the destination stopped answering which chunks it has: .*; .*run sync again" ||
	fail "a killed have does not say that sync again may help: $out"
CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$CAIRN ok ca sync p "far:$B:d"
[ "$(cb list -H -p -o guid d@1)" = "$(ca list -H -p -o guid p@1)" ] || fail "the sync after did not converge"
done_test
