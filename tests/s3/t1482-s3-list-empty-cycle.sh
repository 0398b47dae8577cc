#!/bin/bash
# A hostile or broken server whose ListObjectsV2 pages are all empty and
# truncated, their continuation tokens in a cycle (first page -> A -> B ->
# A ...: tests/s3/faultproxy.py list-empty-cycle).  t1496's check (each
# key after the last key listed) has no key to compare here, and only a
# token repeated on the very next page was caught, so gc and init
# --import listed forever.
#  1. init --import fails in bounded time, after a few pages, naming
#     ListObjectsV2 and the cycle, and leaves no store.
#  2. gc fails the same way and deletes nothing.
#  3. Empty truncated pages whose tokens are each new (a sane server may
#     send some: list-empty-first) are no cycle: the import and gc work.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
gc_tank
pages() { grep -c "^$1 GET" "$MODE.hits"; }

# 1. import over empty pages in a cycle
I=$TESTDIR/imported
echo list-empty-cycle >"$MODE"
timeout 60 "$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" >/dev/null 2>"$TESTDIR/imp.err"
rc=$?
echo pass >"$MODE"
[ $rc = 124 ] && fail "import listed a cycle of empty pages for 60 s ($(pages list-empty-cycle) pages)"
[ $rc = 0 ] && fail "import over a cycle of empty pages succeeded"
grep -q "ListObjectsV2.*cycle" "$TESTDIR/imp.err" || fail "import did not name the listing and the cycle: $(cat "$TESTDIR/imp.err")"
[ "$(pages list-empty-cycle)" -le 8 ] || fail "import read $(pages list-empty-cycle) pages of a 2-page cycle"
[ -e "$I/cairn-store" ] && fail "a failed import left a store"

# 2. gc over empty pages in a cycle
ok cairn destroy tank@1
rm -f "$MODE.hits"
gc_refuses_listing list-empty-cycle "ListObjectsV2.*cycle"

# 3. empty pages with new tokens, then the listing
rm -f "$MODE.hits"
echo list-empty-first >"$MODE"
out=$("$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" 2>&1) || fail "import over 5 empty pages: $out"
[ "$(markers "$I")" = "$n" ] || fail "the import has $(markers "$I") markers for $n objects"
out=$(cairn gc 2>&1) || fail "gc over 5 empty pages: $out"
echo pass >"$MODE"
[ "$(pages list-empty-first)" -ge 12 ] || fail "only $(pages list-empty-first) pages went through the proxy"
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
done_test
