#!/bin/bash
# Errors keep their cause (issue 10, item 3).
#
# A. Full disk: the store lives on a small tmpfs, filled up (0 bytes free,
#    then 64 KiB free), with the catalog's WAL truncated so that every
#    commit must grow it.  create, set, config, hold, bookmark, rename,
#    recv, verify (lastverified) and gc (status save) must fail naming
#    ENOSPC ("No space left on device"), never "cannot rollback - no
#    transaction is active".  With space back, the same commands succeed
#    (retry converges) and the store verifies.
# B. Read-only filesystem (remount,ro): verify succeeds (it cannot record
#    lastverified, and says nothing about it), send works (no temporary
#    holds are needed: nothing can change the store), and refused changes
#    name the real cause, "Read-only file system", not "not an error".
. "$(dirname "$0")/lib.sh"
small_disk 24m
export CAIRN_STORE=$MNT/store
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 300000 /dev/urandom >"$SRC/f.bin"
ok cairn create -o source="$SRC" ta
ok cairn snapshot ta@1
# A stream to receive while the disk is full.
OTHER=$TESTDIR/other
ok cairn -s "$OTHER" init >/dev/null
ok cairn -s "$OTHER" create -o source="$SRC" tb
ok cairn -s "$OTHER" snapshot tb@1
cairn -s "$OTHER" send tb@1 >"$TESTDIR/stream" || fail "send to a file"

# Each command of the list, by name; $1 = suffix making names fresh.
run_all() {
	local s=$1
	R_create=$(cairn create "tc$s" 2>&1); E_create=$?
	R_set=$(cairn set "u:k=v$s" ta 2>&1); E_set=$?
	R_config=$(cairn config "gc_batch=100$s" 2>&1); E_config=$?
	R_hold=$(cairn hold "tag$s" ta@1 2>&1); E_hold=$?
	R_bookmark=$(cairn bookmark ta@1 "ta#b$s" 2>&1); E_bookmark=$?
	R_rename=$(cairn rename ta "td$s" 2>&1); E_rename=$?
	[ $E_rename = 0 ] && cairn rename "td$s" ta >/dev/null 2>&1
	R_recv=$(cairn recv "tr$s" <"$TESTDIR/stream" 2>&1); E_recv=$?
	R_verify=$(cairn verify 2>&1); E_verify=$?
	R_gc=$(cairn gc 2>&1); E_gc=$?
}
CMDS="create set config hold bookmark rename recv verify gc"

# full_disk FREE: a checkpointed, empty WAL (cairn recreates -wal and -shm
# and keeps them), then a disk with FREE bytes left.
full_disk() {
	rm -f "$MNT/fill"
	sqlite3 "$CAIRN_STORE/catalog.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null ||
		fail "checkpoint"
	cairn list >/dev/null || fail "list before filling the disk"
	dd if=/dev/zero of="$MNT/fill" bs=4k 2>/dev/null
	[ "$1" = 0 ] || truncate -s "-$1" "$MNT/fill"
}

# 0 bytes free: every command must fail, naming ENOSPC.
full_disk 0
run_all 0
for c in $CMDS; do
	eval "e=\$E_$c r=\$R_$c"
	[ "$e" != 0 ] || fail "$c succeeded on a full disk"
	case "$r" in
	*"No space left on device"*) ;;
	*) fail "$c on a full disk does not name ENOSPC: $r" ;;
	esac
	case "$r" in *"cannot rollback"* | *"not an error"*) fail "$c lost its cause: $r" ;; esac
done
# Opening needs a new -shm file (the last close removed it): that fails
# too, and says why.
rm -f "$MNT/fill"
sqlite3 "$CAIRN_STORE/catalog.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null || fail "checkpoint"
dd if=/dev/zero of="$MNT/fill" bs=4k 2>/dev/null
out=$(cairn list 2>&1) && fail "list opened a store with no room for its -shm?"
case "$out" in *"No space left on device"*) ;; *) fail "open on a full disk: $out" ;; esac
# 64 KiB free: whatever fails names ENOSPC.
full_disk 65536
run_all 64
for c in $CMDS; do
	eval "e=\$E_$c r=\$R_$c"
	[ "$e" = 0 ] && continue
	case "$r" in
	*"No space left on device"* | *"does not exist"* | *"already"*) ;;
	*) fail "$c with 64 KiB free: $r" ;;
	esac
	case "$r" in *"cannot rollback"* | *"not an error"*) fail "$c lost its cause: $r" ;; esac
done
# Space back: the same commands converge.
rm -f "$MNT/fill"
run_all 0
for c in $CMDS; do
	eval "e=\$E_$c r=\$R_$c"
	[ "$e" = 0 ] || fail "$c after space came back: $r"
done
ok cairn verify

# B. read-only filesystem, first with the -wal and -shm files a previous
# cairn command left, then with none (checkpointed away by a last close).
ro_checks() {
	local how=$1
	mount -o remount,ro "$MNT" || fail "remount,ro"
	out=$(cairn verify 2>&1) || fail "$how: verify on a read-only store: $out"
	rm -rf "$TESTDIR/other2" "$TESTDIR/r1" "$TESTDIR/r2"
	ok cairn -s "$TESTDIR/other2" init >/dev/null
	cairn send ta@1 >"$TESTDIR/stream2" || fail "$how: send from a read-only store"
	ok cairn -s "$TESTDIR/other2" recv tz <"$TESTDIR/stream2"
	ok cairn restore ta@1 "$TESTDIR/r1"
	ok cairn -s "$TESTDIR/other2" restore tz@1 "$TESTDIR/r2"
	same_tree "$TESTDIR/r1" "$TESTDIR/r2"
	for args in "set u:k=ro ta" "hold ro ta@1" "destroy ta@1" "gc" "snapshot ta@ro" "config gc_batch=7"; do
		# shellcheck disable=SC2086
		out=$(cairn $args 2>&1) && fail "$how: $args succeeded on a read-only store"
		case "$out" in
		*"Read-only file system"*) ;;
		*) fail "$how: $args on a read-only store does not say so: $out" ;;
		esac
	done
	mount -o remount,rw "$MNT" || fail "remount,rw"
}
before=$(sqlite3 "$CAIRN_STORE/catalog.db" 'SELECT lastverified FROM snapshot ORDER BY id LIMIT 1')
cairn list >/dev/null || fail "list"
[ -e "$CAIRN_STORE/catalog.db-shm" ] || fail "no -shm file before the first read-only round"
ro_checks "with -shm"
sqlite3 "$CAIRN_STORE/catalog.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null || fail "checkpoint"
[ ! -e "$CAIRN_STORE/catalog.db-shm" ] || fail "-shm file left before the second read-only round"
ro_checks "without -shm"
after=$(sqlite3 "$CAIRN_STORE/catalog.db" 'SELECT lastverified FROM snapshot ORDER BY id LIMIT 1')
[ "$before" = "$after" ] || fail "lastverified changed on a read-only store?"
ok cairn verify
done_test
