#!/bin/bash
# sync ignores SIGPIPE itself (a far side that dies shows up as EPIPE, which
# it reports with the far side's reason), but the programs it starts - ssh
# and the cairn it runs on the destination - get SIGPIPE's default back, as
# if run from a shell: a child whose reader has gone ends there instead of
# running on with every write failing.  (Before: they inherited the ignored
# SIGPIPE.)  The ssh stand-in records the SigIgn mask it was started with.
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca snapshot p@1
cat >"$TESTDIR/ssh" <<SH
#!/bin/bash
shift
grep '^SigIgn:' /proc/self/status >>"$TESTDIR/sigign"
exec sh -c "\$*"
SH
chmod +x "$TESTDIR/ssh"
# ignored SIGPIPE is bit 13 of SigIgn: 0x1000
pipe_ignored() { (( 16#$1 & 16#1000 )); }
pipe_ignored 1000 || fail "the mask check itself is wrong"
CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$CAIRN ok ca sync p "far:$B:d"
[ -s "$TESTDIR/sigign" ] || fail "the ssh stand-in was not run"
n=0
while read -r _ mask; do
	n=$((n + 1))
	! pipe_ignored "$mask" || fail "BUG: a child of sync started with SIGPIPE ignored (SigIgn $mask)"
done <"$TESTDIR/sigign"
[ $n -ge 2 ] || fail "expected the listing, have and recv children, saw $n"
[ "$(cb list -H -p -o guid d@1)" = "$(ca list -H -p -o guid p@1)" ] || fail "the sync did not land"
done_test
