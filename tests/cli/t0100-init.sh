#!/bin/bash
# init creates a store; commands explain a missing one; config validates.
. "$(dirname "$0")/lib.sh"

fails_with 1 "create one with .cairn -s .* init" "$CAIRN" list
ok cairn init >/dev/null
[ -f "$CAIRN_STORE/catalog.db" ] || fail "no catalog"
# chunk directories are made on first use (t1400 tests the small store)
[ -d "$CAIRN_STORE/.chunks" ] || fail "no chunk dir"
[ "$(stat -c %a "$CAIRN_STORE")" = 700 ] || fail "store mode"
fails_with 1 "not empty" "$CAIRN" init

# -s beats $CAIRN_STORE
ok "$CAIRN" -s "$TESTDIR/other" init --chunk-size 256K >/dev/null
"$CAIRN" -s "$TESTDIR/other" config -p chunk_size | grep -q 262144 || fail "chunk size not kept"
fails_with 2 "power of two" "$CAIRN" -s "$TESTDIR/x" init --chunk-size 100K
# (2^54 + 64) K wraps round to 64K when scaled before the range check
fails_with 2 "power of two" "$CAIRN" -s "$TESTDIR/x" init --chunk-size 18014398509481984064K
fails_with 2 "power of two" "$CAIRN" -s "$TESTDIR/x" init --chunk-size ' 64K'
fails_with 2 "power of two" "$CAIRN" -s "$TESTDIR/x" init --chunk-size 16M
# The error names the option as typed: -c is not --chunk-size to the user.
fails_with 2 "^cairn: init: -c BAD: must be a power of two" "$CAIRN" -s "$TESTDIR/x" init -c BAD
fails_with 2 "^cairn: init: -c 100K: must be" "$CAIRN" -s "$TESTDIR/x" init -c100K
fails_with 2 "^cairn: init: --chunk-size BAD: must be" "$CAIRN" -s "$TESTDIR/x" init --chunk-size=BAD
fails_with 2 "^cairn: init: --addressing sideways: must be path or virtual" "$CAIRN" -s "$TESTDIR/x" init --chunks "file://$TESTDIR/bk" --addressing sideways
[ -e "$TESTDIR/x" ] && fail "refused init created the store"

# settings: range errors name the range; env overrides for one command
fails_with 1 "1..4096" cairn config list_batch_size=0
ok cairn config list_batch_size=7
cairn config list_batch_size | grep -q '^list_batch_size *7 ' || fail "set not kept"
CAIRN_LIST_BATCH_SIZE=9 cairn config list_batch_size | grep -q ' 9 .*env' || fail "env override"
fails_with 1 "CAIRN_LIST_BATCH_SIZE" env CAIRN_LIST_BATCH_SIZE=99999 "$CAIRN" config list_batch_size
fails_with 1 "unknown setting" cairn config nosuch=1
cairn config | grep -q gc_atime_cutoff || fail "config listing"
[ "$(cairn config | head -1 | tr -s ' ')" = "KEY VALUE SOURCE RANGE UNIT" ] || fail "config header"
[ "$(cairn config -p chunk_size | awk '$1 == "chunk_size" {print $2}')" = 1048576 ] || fail "config -p: exact size"
[ "$(cairn config chunk_size | awk '$1 == "chunk_size" {print $2}')" = 1.00M ] || fail "config: size as list shows sizes"
[ "$(cairn config -H -p list_batch_size)" = "$(printf 'list_batch_size\t7\tstore\t1..4096\tentries')" ] ||
	fail "config -H -p: $(cairn config -H -p list_batch_size)"
[ "$(cairn config -H | wc -l)" = "$(cairn config | sed 1d | wc -l)" ] || fail "config -H prints a header"
out=$(cairn config -j --json-int) || fail "config -j"
echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)["settings"]
assert d["list_batch_size"]["value"] == 7 and d["list_batch_size"]["source"] == "store", d
assert d["chunk_size"]["min"] == 65536 and d["chunk_size"]["unit"] == "bytes", d
assert "gc_atime_cutoff" in d and len(d) >= 10, d
' || fail "config -j document: $out"
[ "$(cairn config -j list_batch_size | python3 -c 'import json,sys; print(json.load(sys.stdin)["settings"]["list_batch_size"]["value"])')" = 7 ] ||
	fail "config -j KEY"
fails_with 2 "needs -j" cairn config --json-int
fails_with 2 "usage" cairn config -x

# a filesystem without working atimes is refused
fails_with 1 "access times" env CAIRN_TEST_NO_ATIME=1 "$CAIRN" -s "$TESTDIR/noatime" init
[ -e "$TESTDIR/noatime" ] && fail "a refused init left its directory"

# an init on a bucket that fails after claiming the prefix takes its
# claim back, so the same command then works (catalog creation made to
# fail with strace's fault injection)
# (LeakSanitizer cannot run under ptrace: off in a sanitizer build)
if command -v strace >/dev/null; then
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o /dev/null -P "$TESTDIR/cl/catalog.db" -e inject=openat:error=EIO \
		"$CAIRN" -s "$TESTDIR/cl" init --chunks "file://$TESTDIR/bk" >/dev/null 2>&1 &&
		fail "init with a failing catalog succeeded"
	[ -e "$TESTDIR/cl" ] && fail "a failed init left its directory"
	[ -e "$TESTDIR/bk/meta/store-id" ] && fail "a failed init left its claim on the prefix"
	ok "$CAIRN" -s "$TESTDIR/cl" init --chunks "file://$TESTDIR/bk" >/dev/null
	fails_with 1 "already holds a store (claimed" "$CAIRN" -s "$TESTDIR/cl2" init --chunks "file://$TESTDIR/bk"
	# killed after claiming (SIGKILL as it creates the catalog): the
	# same command takes the old claim back and makes the store
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o /dev/null -P "$TESTDIR/kl/catalog.db" -e inject=openat:signal=KILL \
		"$CAIRN" -s "$TESTDIR/kl" init --chunks "file://$TESTDIR/bk-kill" >/dev/null 2>&1
	[ -e "$TESTDIR/kl/cairn-store.partial" ] && [ -e "$TESTDIR/bk-kill/meta/store-id" ] ||
		fail "init was not killed between its claim and its catalog"
	# (run again while the location cannot be reached: refused, and the
	# directory, the only record of the claim's id, is kept)
	mv "$TESTDIR/bk-kill" "$TESTDIR/bk-away"
	: >"$TESTDIR/bk-kill"
	fails_with 1 "could not be checked or taken back" "$CAIRN" -s "$TESTDIR/kl" init --chunks "file://$TESTDIR/bk-kill"
	[ -e "$TESTDIR/kl/backend.claim" ] || fail "an init that could not take its claim back dropped its record"
	rm "$TESTDIR/bk-kill"
	mv "$TESTDIR/bk-away" "$TESTDIR/bk-kill"
	ok "$CAIRN" -s "$TESTDIR/kl" init --chunks "file://$TESTDIR/bk-kill" >/dev/null
	[ "$(cat "$TESTDIR/bk-kill/meta/store-id")" = "$(sed -n 's/^store_id = //p' "$TESTDIR/kl/backend.conf")" ] ||
		fail "the claim is not the store's after init ran again"
	[ -e "$TESTDIR/kl/backend.claim" ] && fail "a finished init left its claim mark"
else
	fail "strace missing"
fi

# two inits that both find a location free: one claims it
claim_race "file://$TESTDIR/bk-race"
[ "$(cat "$TESTDIR/bk-race/meta/store-id")" = "$(cat "$TESTDIR/race-a.id")" ] ||
	fail "the location's claim is not the winner's"

# an init cut short (its set-up mark, no store marker) is redone by the
# same command; a directory without that mark is never touched: a user's
# file that only shares a name, or a store whose marker was lost
mkdir -p "$TESTDIR/half/.chunks/00ab"
: >"$TESTDIR/half/cairn-store.partial"
: >"$TESTDIR/half/catalog.db"
: >"$TESTDIR/half/.chunks/00ab/x"
ok "$CAIRN" -s "$TESTDIR/half" init >/dev/null
[ -e "$TESTDIR/half/cairn-store.partial" ] && fail "a finished init left its set-up mark"
ok "$CAIRN" -s "$TESTDIR/half" list >/dev/null
mkdir "$TESTDIR/user"
echo "my photo catalog" >"$TESTDIR/user/catalog.db"
fails_with 1 "not empty" "$CAIRN" -s "$TESTDIR/user" init
grep -q "my photo catalog" "$TESTDIR/user/catalog.db" || fail "init replaced a user's file"
mkdir -p "$TESTDIR/src"
echo data >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" lost
ok cairn snapshot lost@1
rm -rf "$CAIRN_STORE/cairn-store" "$CAIRN_STORE/writers"
fails_with 1 "not empty" cairn init
echo ok >"$CAIRN_STORE/cairn-store"
ok cairn restore lost@1 "$TESTDIR/r"
cmp -s "$TESTDIR/src/f" "$TESTDIR/r/f" || fail "a store without its marker lost data to init"
fails_with 2 "unknown verb" "$CAIRN" frobnicate
done_test
