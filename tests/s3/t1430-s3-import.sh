#!/bin/bash
# Disaster recovery: the bucket alone rebuilds the store.  After several
# commands (snapshots, a hold, a property, a destroy) the local store is
# deleted; `init --import` on an empty directory brings back every
# snapshot, restoring byte-identical, with holds and properties; the
# imported store keeps working (snapshot, gc, verify).  Import refuses a
# non-empty directory and a bucket without a store; init refuses a bucket
# that already holds one.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_corpus_snapshot
rm -rf "$TESTDIR/ref1"
cp -a "$SRC" "$TESTDIR/ref1"
echo more >>"$SRC/sub/f5"
head -c 200000 /dev/urandom >"$SRC/new.bin"
ok cairn snapshot tank@2 >/dev/null
cp -a "$SRC" "$TESTDIR/ref2"
ok cairn hold keep tank@1
ok cairn set user:note=hello tank
ok cairn snapshot tank@3 >/dev/null
ok cairn destroy tank@3
cairn list -H -o name,guid -t snapshot -r >"$TESTDIR/list.before"

# a second init on the same bucket prefix is refused
fails_with 1 "already holds a store" "$CAIRN" -s "$TESTDIR/other" init --chunks "s3://$BUCKET/$PFX"
# the last command before the loss is a write: it must be in the bucket
ok cairn set user:last=1 tank

# the machine is lost
rm -rf "$CAIRN_STORE"
out=$("$CAIRN" -s "$CAIRN_STORE" init --import "s3://$BUCKET/$PFX" 2>&1) || fail "import: $out"
cairn list -H -o name,guid -t snapshot -r >"$TESTDIR/list.after"
diff "$TESTDIR/list.before" "$TESTDIR/list.after" >/dev/null || fail "snapshots differ after import"
for s in 1 2; do
	rm -rf "$TESTDIR/r$s"
	ok cairn restore "tank@$s" "$TESTDIR/r$s" >/dev/null
	same_tree "$TESTDIR/ref$s" "$TESTDIR/r$s"
done
cairn holds tank@1 | grep -q keep || fail "hold lost by import"
[ "$(cairn get -H -o value user:note tank)" = hello ] || fail "property lost by import"
[ "$(cairn get -H -o value user:last tank)" = 1 ] || fail "the last command before the loss was lost"
[ "$(markers)" = "$(objects)" ] || fail "import made $(markers) markers for $(objects) objects"

# the imported store works: an unchanged snapshot uploads (almost) nothing,
# gc keeps every referenced chunk, verify passes
ok cairn snapshot tank@4 >/dev/null
[ "$(stat_of put)" -le 2 ] || fail "snapshot after import uploaded $(stat_of put) objects"
ok cairn config gc_atime_cutoff=0
ok cairn gc >/dev/null
ok cairn verify >/dev/null
rm -rf "$TESTDIR/r4"
ok cairn restore tank@4 "$TESTDIR/r4" >/dev/null
same_tree "$SRC" "$TESTDIR/r4"

# refusals
mkdir -p "$TESTDIR/full" && echo x >"$TESTDIR/full/f"
fails_with 1 "" "$CAIRN" -s "$CAIRN_STORE" init --import "s3://$BUCKET/$PFX"
fails_with 1 "holds no store" "$CAIRN" -s "$TESTDIR/empty" init --import "s3://$BUCKET/$PFX-none"
fails_with 2 "exclude each other" "$CAIRN" -s "$TESTDIR/x" init --chunks "s3://$BUCKET/a" --import "s3://$BUCKET/a"
fails_with 1 "bucket name" "$CAIRN" -s "$TESTDIR/y" init --chunks "s3://B/a"
done_test
