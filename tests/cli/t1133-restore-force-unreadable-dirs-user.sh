#!/bin/bash
# restore -f run by a user over that user's earlier restore converges also
# when the snapshot has directories their owner cannot read (mode 0311,
# 0000), the target's own among them.  The earlier run gave them those
# modes at its end; the second opened each for reading before making it
# writable, so it failed ("d: open directory: Permission denied", then
# every entry below).  Root reads anyway, so this runs as nobody.  And
# without /proc too, which the first fix (a chmod through the pin's /proc
# path) needed.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (to run as a second user)"; exit 77; }
command -v setpriv >/dev/null || fail "setpriv missing (util-linux)"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/wx/sub" "$SRC/none"
echo in-wx >"$SRC/wx/f"
echo in-sub >"$SRC/wx/sub/g"
echo in-none >"$SRC/none/h"
chmod 0311 "$SRC/wx" "$SRC"
chmod 0000 "$SRC/none"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
chmod 0755 "$SRC"
U=$(mktemp -d /tmp/cairn-user.XXXXXX)
trap 'chmod -R u+rwx "$U" 2>/dev/null; rm -rf "$U"; rm -rf "$TESTDIR"' EXIT
chmod 755 "$U" "$TESTDIR"
chown nobody "$U"
chown -R nobody "$CAIRN_STORE"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" "$@"; }
ok as_nobody restore tank@1 "$U/ref"
ok as_nobody restore tank@1 "$U/r"
[ "$(stat -c %a "$U/r/wx") $(stat -c %a "$U/r/none") $(stat -c %a "$U/r")" = "311 0 311" ] ||
	fail "the first restore's modes: $(stat -c %a "$U/r/wx" "$U/r/none" "$U/r")"
for run in 1 2; do
	out=$(as_nobody restore -f tank@1 "$U/r" 2>&1) || fail "restore -f number $run as a user: $out"
	same_tree "$U/ref" "$U/r"
done
# A restore -f that stops before the snapshot's root is reached (its tree
# stream's first chunk missing) gives the target its mode back: the pin
# made it 0711 for the run, and nothing set it again.
tree=""
for c in $(find "$CAIRN_STORE/.chunks" -type f -size -20k); do
	mv "$c" "$TESTDIR/aside"
	as_nobody restore tank@1 "$U/probe" 2>&1 | grep -q "nothing was restored" && tree=$c
	chmod -R u+rwx "$U/probe" 2>/dev/null; rm -rf "$U/probe"
	mv "$TESTDIR/aside" "$c"
	[ -n "$tree" ] && break
done
[ -n "$tree" ] || fail "the tree stream's chunk not found"
mv "$tree" "$TESTDIR/aside"
as_nobody restore -f tank@1 "$U/r" 2>/dev/null && fail "restore -f without the tree's chunk succeeded"
[ "$(stat -c %a "$U/r")" = 311 ] || fail "a restore -f that restored nothing left the target at mode $(stat -c %a "$U/r")"
mv "$TESTDIR/aside" "$tree"
# Without /proc (a chroot or container that has none) as well: the
# directory is changed through its O_PATH descriptor by fchmodat2.  Run
# in a mount namespace of its own whose /proc is unmounted.
# (Not under make asan: the sanitizers' runtime cannot run without /proc.)
if command -v unshare >/dev/null && unshare -m true 2>/dev/null && [ -z "${ASAN_OPTIONS:-}" ]; then
	ok as_nobody restore tank@1 "$U/noproc"
	out=$(unshare -m sh -c 'umount -l /proc && exec "$@"' sh \
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" restore -f tank@1 "$U/noproc" 2>&1) ||
		fail "restore -f as a user without /proc: $out"
	same_tree "$U/ref" "$U/noproc"
	unshare -m sh -c 'umount -l /proc && exec cat /proc/self/stat' >/dev/null 2>&1 &&
		fail "/proc was still there in the namespace"
fi
chown -R root "$CAIRN_STORE"
done_test
