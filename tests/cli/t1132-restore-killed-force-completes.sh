#!/bin/bash
# A restore killed part way is completed by the same command with --force,
# with full fidelity (same_tree: content, modes, owners, times, xattrs,
# ACLs, hardlinks, holes, FIFOs and devices).  The command without --force
# refuses the non-empty target and says what to do.  strace kills the
# restore (SIGKILL injected at a system call, one writer): in the middle
# of a big file's writes, and in the middle of the last pass, which gives
# directories their modes, times and default ACLs, and the target its own.
# That each kill landed there is checked on what it left.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || fail "strace missing"
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
head -c 8000000 /dev/urandom >"$SRC/huge"
for d in $(seq 1 30); do
	mkdir -p "$SRC/ro/d$d"
	echo "$d" >"$SRC/ro/d$d/f"
	touch -d "@$((1000000000 + d))" "$SRC/ro/d$d"
	chmod 0555 "$SRC/ro/d$d"
done
setfacl -d -m u:1234:rwx "$SRC/ro"
touch -d @999999999 "$SRC/ro" "$SRC"
chmod 0750 "$SRC"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
asan=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
# killed_restore TARGET SYSCALL N [strace -P PATH]: the restore, killed
# at its Nth SYSCALL (on PATH).
killed_restore() {
	local t=$1 call=$2 n=$3
	shift 3
	CAIRN_RESTORE_THREADS=1 ASAN_OPTIONS=$asan strace -f -o /dev/null "$@" -e trace="$call" \
		-e inject="$call":signal=SIGKILL:when="$n" "$CAIRN" restore tank@1 "$t" 2>/dev/null &
	{ wait $!; } 2>/dev/null # (no "Killed" notice)
	[ $? = 137 ] || fail "the restore into $t was not killed at $call number $n"
}
# the last pass opens each directory but the target once (openat2), after
# everything else: count them in a whole run
CAIRN_RESTORE_THREADS=1 ASAN_OPTIONS=$asan strace -f -o "$TESTDIR/trace" -e trace=openat2 \
	"$CAIRN" restore tank@1 "$XDIR/whole" || fail "a whole restore failed"
same_tree "$SRC" "$XDIR/whole"
total=$(grep -c 'openat2(' "$TESTDIR/trace")
dirs=$(($(find "$SRC" -type d | wc -l) - 1))
[ "$total" -gt "$dirs" ] || fail "$total openat2 calls for $dirs directories"

# 1. killed while huge is written: it is partial, nothing after it is
R=$XDIR/mid-file
killed_restore "$R" pwrite64 2 -P "$R/huge"
size=$(stat -c %s "$R/huge" 2>/dev/null || echo 0)
[ "$size" -gt 0 ] && [ "$size" -lt 8000000 ] || fail "huge not partial after the kill: $size bytes"
[ "$(stat -c %a "$R/huge")" = 600 ] || fail "the partial huge: mode $(stat -c %a "$R/huge")"
[ -e "$R/sparse" ] && fail "sparse restored though the kill came before it"
fails_with 1 "$R: target directory is not empty (use --force)" cairn restore tank@1 "$R"
ok cairn restore -f tank@1 "$R"
same_tree "$SRC" "$R"

# 2. killed half way through the last pass: some directories are final,
# the target is not
R=$XDIR/mid-dirs
killed_restore "$R" openat2 $((total - dirs / 2))
final=$(find "$R/ro" -mindepth 1 -type d -perm 0555 | wc -l)
[ "$final" -gt 0 ] && [ "$final" -lt 30 ] || fail "$final of ro's 30 directories final after the kill"
[ "$(stat -c %a "$R")" = 700 ] || fail "the target got its mode before the kill: $(stat -c %a "$R")"
getfacl -p -c "$R/ro" | grep -q '^default:' && fail "ro got its default ACL before the kill"
ok cairn restore -f tank@1 "$R"
same_tree "$SRC" "$R"
done_test
