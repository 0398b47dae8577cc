#!/bin/bash
# The restore's hold: (1) a restore refused for its target (not empty, an
# image without --force) takes none, so a user who cannot write to the
# store sees only the refusal, not also a warning that the snapshot could
# not be held; (2) it is kept only on the snapshot the restore reads.  A
# shim renames the snapshot away and makes a new one of that name just
# after the restore looked it up, before its hold (which goes by name):
# the restore sees that the name now holds another snapshot, lets go of
# that hold and restores the snapshot the name holds, with full fidelity;
# no hold is left behind.  (Before: it held the new snapshot and restored
# the old one, unheld.)
. "$(dirname "$0")/lib.sh"
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
random_volume 100000 1

# (2) the name moves to another snapshot between the lookup and the hold
cp -a "$SRC" "$XDIR/old"
echo changed >"$SRC/MARKERNAME_secret_file.txt"
rm "$SRC/h2"
build_shim run-before
R=$XDIR/r
rm -f "$TESTDIR/run.log"
out=$(env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" RUN_CALL=mkdir RUN_AT="$R" RUN_LOG="$TESTDIR/run.log" \
	RUN_CMD="'$CAIRN' rename tank@1 tank@old && '$CAIRN' snapshot tank@1" \
	"$CAIRN" restore tank@1 "$R" 2>&1) || fail "the restore failed: $out"
grep -q "^ran 0$" "$TESTDIR/run.log" 2>/dev/null || fail "the rename did not run: $(cat "$TESTDIR/run.log" 2>&1)"
[ "$(cairn list -H -o name -t snapshot tank | tr '\n' ' ')" = "tank@old tank@1 " ] ||
	fail "snapshots after the rename: $(cairn list -H -o name -t snapshot tank)"
same_tree "$SRC" "$R"
for s in tank@old tank@1; do
	[ -z "$(cairn holds -H $s)" ] || fail "$s still held: $(cairn holds -H $s)"
done
ok cairn restore tank@old "$XDIR/r-old"
same_tree "$XDIR/old" "$XDIR/r-old"

# (1) refused restores take no hold: a user who cannot write to the store
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	U=$(mktemp -d /tmp/cairn-user.XXXXXX)
	trap 'rm -rf "$U"; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR" ${XATTR_DIRS:-}' EXIT
	mkdir "$U/full" && echo x >"$U/full/f" && echo image >"$U/img"
	chown -R nobody "$U"
	chmod 755 "$TESTDIR"
	chmod -R go+rX "$CAIRN_STORE"
	user() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" "$@" 2>&1; }
	out=$(user restore tank@1 "$U/full") && fail "a restore into a full target succeeded"
	[ "$out" = "cairn: restore: $U/full: target directory is not empty (use --force)" ] ||
		fail "the refused restore said: $out"
	out=$(user restore vol@1 "$U/img") && fail "a restore onto an image succeeded"
	[ "$out" = "cairn: restore: $U/img: target exists and is not empty (use --force)" ] ||
		fail "the refused volume restore said: $out"
	out=$(user restore tank@1 "$U/new")
	echo "$out" | grep -q "not held while restored" || fail "the user's restore took a hold: $out"
	# (a user's restore: owners, devices and trusted.* are not its to set)
	[ "$(manifest "$SRC")" = "$(manifest "$U/new")" ] || fail "the user's restore differs"
else
	fail "needs root and setpriv for the user's refused restore"
fi
done_test
