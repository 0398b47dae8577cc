#!/bin/bash
# After a refused read of a chunk (EACCES from the bucket), verify asks
# whether it reads an object it read before, to tell that one object's
# refusal from the credential's.  On S3 it asks with a HEAD, which needs
# the same right as a GET.  On a local directory bucket (file://) the
# "HEAD" is a stat, which needs no right to read the file: a bucket whose
# files this user may not read answered "it reads", and verify reported
# the chunk "missing, or this credential may not read it" and went on,
# instead of the refusal it is.
#  A local bucket whose chunk files are root's (mode 600), a store that
#  is another user's and keeps every chunk but one content chunk whole in
#  its local file (so verify reads those locally and only that one from
#  the bucket): verify, run as that user, fails naming the chunk as
#  refused ("is the credential wrong"), reports no bad chunk and changes
#  nothing.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (to run as a second user)"; exit 77; }
command -v setpriv >/dev/null || { echo "setpriv missing"; exit 77; }
OTHER=60123
BK=$TESTDIR/bk
ok cairn init --chunks "file://$BK" >/dev/null
mkdir -p "$TESTDIR/src"
head -c 1000000 /dev/urandom >"$TESTDIR/src/a"
ok cairn create -o source="$TESTDIR/src" -o chunksize=64K tank
ok cairn snapshot tank@1 >/dev/null
ok cairn verify >/dev/null

# Every chunk's local file holds its blob (as when kept locally), but for
# the largest object's (a content chunk of the random file): an empty
# marker, so that chunk is read from the bucket.
objs=$(find "$BK" -type f -regextype egrep -regex '.*/[0-9a-f]{64}')
[ "$(echo "$objs" | wc -l)" -ge 4 ] || fail "too few chunk objects: $objs"
big=$(ls -S $objs | head -n 1)
hex=$(basename "$big")
for o in $objs; do
	h=$(basename "$o")
	[ "$h" = "$hex" ] && continue
	ok cp "$o" "$CAIRN_STORE/.chunks/${h:0:4}/$h"
done
[ -f "$CAIRN_STORE/.chunks/${hex:0:4}/$hex" ] || fail "no marker for $hex"
: >"$CAIRN_STORE/.chunks/${hex:0:4}/$hex"
ok cairn verify >/dev/null

chmod 755 "$TESTDIR"
chown -R "$OTHER:$OTHER" "$CAIRN_STORE" "$BK"
for o in $objs; do
	chown 0:0 "$o"
	chmod 600 "$o"
done
state() {
	(cd "$CAIRN_STORE/.chunks" && find . -printf '%p %s\n' | LC_ALL=C sort)
	find "$BK" -printf '%p %s %u\n' | LC_ALL=C sort
}
state >"$TESTDIR/before"
setpriv --reuid=$OTHER --regid=$OTHER --clear-groups "$CAIRN" verify --threads 1 --order digest \
	>/dev/null 2>"$TESTDIR/v.err" && fail "verify of a bucket it may not read succeeded"
grep -q "refused to read chunk $hex.*credential wrong" "$TESTDIR/v.err" ||
	fail "verify did not name the refusal: $(cat "$TESTDIR/v.err")"
grep -q "bad chunk\|may not read it" "$TESTDIR/v.err" && fail "verify reported bad chunks: $(cat "$TESTDIR/v.err")"
state >"$TESTDIR/after"
cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
	fail "verify changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"

# Readable again, verify succeeds.
chown -R 0:0 "$CAIRN_STORE" "$BK"
ok cairn verify >/dev/null
done_test
