#!/bin/bash
# Restore never changes anything outside its target, even when someone who
# can write to the target swaps a just-made name for a symlink out of it:
# a FIFO (or device, socket) gets its owner, mode and times through a
# descriptor pinned before anything is set, and an existing directory is
# made writable through the descriptor opened beneath the target.  The
# races are made certain with strace, which holds the restore right after
# the step the swap must follow.  Also: "/" and "." as paths mean the
# whole tree.
. "$(dirname "$0")/lib.sh"
new_store
command -v strace >/dev/null || fail "strace missing"
mkdir -p "$TESTDIR/src/d"
mkfifo -m 0666 "$TESTDIR/src/p"
echo in-d >"$TESTDIR/src/d/f"
echo top >"$TESTDIR/src/top"
chmod 0755 "$TESTDIR/src/d"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn snapshot tank@1
echo secret >"$TESTDIR/victim"
chmod 0600 "$TESTDIR/victim"
mkdir -m 0750 "$TESTDIR/victimdir"

held_restore() { # SYSCALL TARGET: restore with SYSCALL on TARGET's entries held 2 s
	rm -f "$TESTDIR/trace"
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o "$TESTDIR/trace" -P "$2" \
		-e trace="$1" -e inject="$1":delay_exit=2000000 "$CAIRN" restore -f tank@1 "$2" \
		>"$TESTDIR/out" 2>&1
	echo $? >"$TESTDIR/rc"
}
held_at() { # SYSCALL NAME: until the restore is held in SYSCALL on NAME (10 s at most)
	for _ in $(seq 1000); do
		grep -q "$1([0-9]*, \"$2\".*DELAYED" "$TESTDIR/trace" 2>/dev/null && return 0
		sleep 0.01
	done
	return 1
}

# swap_race TARGET SYSCALL NAME VICTIM MODE: restores into TARGET held in
# SYSCALL on NAME, swaps NAME for a symlink to VICTIM meanwhile, and
# requires the swap to have happened, VICTIM to keep MODE and the restore
# to report it.
swap_race() {
	local t=$1 call=$2 name=$3 victim=$4 mode=$5
	held_restore "$call" "$t" &
	local pid=$!
	if held_at "$call" "$name"; then
		mv -T "$t/$name" "$t/$name.old" && ln -s "$victim" "$t/$name"
	else
		fail "the restore was not held in $call on $name"
	fi
	wait $pid
	[ -L "$t/$name" ] || fail "the swap of $name did not happen"
	[ "$(stat -c %a "$victim")" = "$mode" ] ||
		fail "restore changed the mode of $victim, outside its target: $(stat -c %a "$victim")"
	[ "$(cat "$TESTDIR/rc")" = 1 ] || fail "the swapped $name was not reported (exit $(cat "$TESTDIR/rc"))"
}

# 1. the FIFO is swapped for a symlink to a file outside, after mknod
mkdir -m 0777 "$TESTDIR/t1"
swap_race "$TESTDIR/t1" mknodat p "$TESTDIR/victim" 600
grep -q "p: replaced by another file while being restored" "$TESTDIR/out" ||
	fail "no message names the swapped FIFO: $(cat "$TESTDIR/out")"
[ "$(cat "$TESTDIR/t1/top")" = top ] || fail "the rest of the tree was not restored"

# 2. an existing directory is swapped for a symlink to a directory
# outside, right after restore found it was a directory
mkdir -m 0777 "$TESTDIR/t2"
mkdir -m 0500 "$TESTDIR/t2/d"
swap_race "$TESTDIR/t2" newfstatat d "$TESTDIR/victimdir" 750
[ -e "$TESTDIR/victimdir/f" ] && fail "restore wrote into a directory outside its target"

# 3. "/" and "." name the whole tree
for p in / . //./; do
	rm -rf "$TESTDIR/r"
	ok cairn restore tank@1 "$TESTDIR/r" "$p"
	[ "$(cat "$TESTDIR/r/d/f" 2>/dev/null)" = in-d ] || fail "restore of path '$p' left out d/f"
	[ "$(cat "$TESTDIR/r/top" 2>/dev/null)" = top ] || fail "restore of path '$p' left out top"
done
rm -rf "$TESTDIR/r"
ok cairn restore tank@1 "$TESTDIR/r" ./d//
[ -e "$TESTDIR/r/d/f" ] || fail "restore of './d//' left out d/f"
[ -e "$TESTDIR/r/top" ] && fail "restore of './d//' restored top"
done_test
