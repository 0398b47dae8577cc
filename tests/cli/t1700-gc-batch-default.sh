#!/bin/bash
# GC's default batch is the size of its touch cache (1M entries, issue 16):
# a new store says so, `cairn gc` runs with it and keeps every referenced
# chunk, and an explicit gc_batch still wins.
. "$(dirname "$0")/lib.sh"
new_store
out=$(cairn config -H gc_batch) || fail "config gc_batch failed"
set -- $out
[ "${2:-}" = 1048576 ] || fail "default gc_batch is '${2:-}', want 1048576"
cap=$(cairn config -H gc_cache_capacity) || fail "config gc_cache_capacity failed"
set -- $cap
[ "${2:-}" = 1048576 ] || fail "default gc_cache_capacity is '${2:-}', want 1048576"

mkdir -p "$TESTDIR/src"
head -c 3000000 /dev/urandom >"$TESTDIR/src/big"
echo small >"$TESTDIR/src/small"
ok cairn create -o source="$TESTDIR/src" ds
ok cairn snapshot ds@1 >/dev/null
ok cairn config gc_atime_cutoff=0 >/dev/null
ok cairn gc >/dev/null
ok cairn verify >/dev/null
ok cairn restore ds@1 "$TESTDIR/r" >/dev/null
cmp -s "$TESTDIR/src/big" "$TESTDIR/r/big" || fail "restore after gc differs"

ok cairn config gc_batch=1000 >/dev/null
out=$(cairn config -H gc_batch) || fail "config gc_batch failed"
set -- $out
[ "${2:-}" = 1000 ] || fail "gc_batch set to 1000 reads back '${2:-}'"
ok cairn gc >/dev/null
done_test
