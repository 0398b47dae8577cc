#!/bin/bash
# cairn mount with two copies of one snapshot (two raw receives of one
# stream: the same guid, both in one mount): one copy's key is loaded, the
# other's is not.  Opening the locked copy fails (permission denied), and
# that failure releases only the hold taken for it, never the hold of the
# open copy that shares its guid, so gc and destroy still keep the open
# copy while it is read.  Unmount then releases every hold of the mount.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
. "$(dirname "$0")/mount.sh"
need_fuse
M=$TESTDIR/mnt
mkdir -p "$M"
trap '"$CAIRN" unload-key -a >/dev/null 2>&1; mount_cleanup "$M"; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT

new_store
S=$TESTDIR/src
mkdir -p "$S"
echo content >"$S/f"
ok mkroot enc "$PASS1" -o source="$S"
ok cairn snapshot enc@a
ok cairn create p
cairn send -w enc@a >"$TESTDIR/raw" || fail "send -w"
ok cairn recv p/x <"$TESTDIR/raw"
ok cairn recv p/y <"$TESTDIR/raw"
gx=$(cairn get -H -p -o value guid p/x@a)
gy=$(cairn get -H -p -o value guid p/y@a)
[ -n "$gx" ] && [ "$gx" = "$gy" ] || fail "the two copies should share a guid: '$gx' '$gy'"
printf '%s\n' "$PASS1" | ok cairn load-key p/y
[ "$(keystatus p/x)" = unavailable ] || fail "p/x key: $(keystatus p/x)"

mount_fg "$M" p "$TESTDIR/mount.err"
P=$MPID
T=mount.$P
Z=$M
[ "$(cat "$Z/y/.zfs/snapshot/a/f")" = content ] || fail "y@a/f through the mount"
err=$(ls "$Z/x/.zfs/snapshot/a" 2>&1) && fail "the locked copy x@a could be listed"
echo "$err" | grep -q "Permission denied" || fail "locked copy: $err"
# The open copy keeps its hold (the failed copy's went with its failure, or
# waits for unmount); reading it still works.
h=$(holds_of "$T" | cut -d' ' -f1 | tr '\n' ' ')
case "$h" in
*p/y@a*) ;;
*) fail "the open copy p/y@a lost its hold when p/x@a (same guid) failed to load: holds '$h'" ;;
esac
[ "$(cat "$Z/y/.zfs/snapshot/a/f")" = content ] || fail "y@a/f after the failed load"
fails_with 1 "p/y@a.*held" cairn destroy p/y@a
fusermount3 -u "$M" || fail "unmount"
wait "$P" || fail "the mount process exited $?"
# Its only message: the copy it could not open, named.
[ "$(grep -c . "$TESTDIR/mount.err")" = 1 ] && grep -q "p/x@a: cannot load its tree" "$TESTDIR/mount.err" ||
	fail "mount's messages: $(cat "$TESTDIR/mount.err")"
left=$(holds_of "$T")
[ -z "$left" ] || fail "holds left after unmount: $left"
ok cairn destroy p/y@a
done_test
