#!/bin/bash
# An S3 store whose local markers and bucket disagree (findings of the
# 2026-12-03 review):
#  1. Markers of referenced chunks gone (verify set them aside, a crash,
#     a hand): gc makes them again from the bucket's objects and keeps
#     those objects, so the snapshot still restores; unreferenced objects
#     still go.
#  2. An object gone from the bucket: verify names it, removes its marker,
#     and the next backup of the same data uploads it again (instead of
#     deduplicating against a marker of nothing); then all verifies.
#  3. An import that stopped half-way is redone by the same command, and
#     a failed init or import leaves no directory behind.
#  4. The prefix's claim: init refuses a prefix another store claimed,
#     two inits racing for one prefix end with one store, a killed init's
#     claim is taken back by the same command run again, and gc deletes
#     nothing from a prefix whose claim is not its own.
#  5. Two commands' catalog uploads land in the order of their copies, so
#     the bucket never ends with an older catalog than the store's.
#  6. A chunk prefix with a "." or ".." component, or a character an HTTP
#     client would rewrite, is refused at init.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_corpus_snapshot
ok cairn config gc_atime_cutoff=0

# 1. two referenced markers lost; a garbage object beside them
n=$(objects)
lost=$(find "$CAIRN_STORE/.chunks" -type f -regextype egrep -regex '.*/[0-9a-f]{64}' | head -n 2)
[ "$(echo "$lost" | wc -l)" = 2 ] || fail "fewer than two markers"
rm -f $lost
mkdir -p "$TESTDIR/src2"
head -c 200000 /dev/urandom >"$TESTDIR/src2/garbage"
ok cairn create -o source="$TESTDIR/src2" other
ok cairn snapshot other@1 >/dev/null
ok cairn destroy -r other
out=$(cairn gc -v 2>&1) || fail "gc: $out"
[ "$(stat_of sweep_removed)" -ge 1 ] || fail "gc removed no garbage object ($(stat_of sweep_removed))"
[ "$(objects)" = "$n" ] || fail "gc left $(objects) objects, want the $n tank@1 needs"
for m in $lost; do [ -f "$m" ] || fail "gc did not make the marker $m again"; done
ok cairn restore tank@1 "$TESTDIR/r1" >/dev/null
same_tree "$SRC" "$TESTDIR/r1"

# 1b. a lost marker whose object is not the chunk's (another chunk's
# well-formed blob copied over it): gc cannot make the marker, reports the
# chunk, and still keeps the object (it is referenced; only a backup of
# the data replaces it)
swapped_marker_kept "$(echo "$lost" | head -n 1)"
ok cairn snapshot tank@1b >/dev/null
ok cairn destroy tank@1b

# 2. an object removed from the bucket behind the store's back
victim=$("$S3TOOL" ls "$BUCKET" "$PFX/chunks/" | head -n 1)
hex=${victim##*/}
ok "$S3TOOL" rm "$BUCKET" "$victim"
out=$(cairn verify 2>&1)
[ $? -ne 0 ] || fail "verify passed over a missing object"
echo "$out" | grep -q "$hex.*not in the bucket: marker removed" || fail "verify did not name the missing object: $out"
[ -e "$CAIRN_STORE/.chunks/${hex:0:4}/$hex" ] && fail "verify kept the marker of a missing object"
ok cairn snapshot tank@3 >/dev/null
"$S3TOOL" ls "$BUCKET" "$PFX/chunks/" | grep -q "$hex" || fail "the next backup did not upload the object again"
ok cairn verify >/dev/null
ok cairn restore tank@3 "$TESTDIR/r3" >/dev/null
same_tree "$SRC" "$TESTDIR/r3"

# 3. an import that stopped half-way (its files, no store marker) is
# redone by the same command; a failed init or import leaves nothing
mkdir -p "$TESTDIR/imp/.chunks/0000"
: >"$TESTDIR/imp/catalog.db"
: >"$TESTDIR/imp/backend.conf"
: >"$TESTDIR/imp/cairn-store.partial"
ok "$CAIRN" -s "$TESTDIR/imp" init --import "s3://$BUCKET/$PFX"
ok "$CAIRN" -s "$TESTDIR/imp" restore tank@3 "$TESTDIR/r4" >/dev/null
same_tree "$SRC" "$TESTDIR/r4"
fails_with 1 "holds no store" "$CAIRN" -s "$TESTDIR/none" init --import "s3://$BUCKET/$PFX-none"
[ -e "$TESTDIR/none" ] && fail "a failed import left $TESTDIR/none"

# 4. the prefix's claim (meta/store-id): a second store cannot be made
# on it, and a store whose claim another took deletes nothing from the
# bucket; a store from before claims claims the prefix at its first gc
s3_new_store "$TESTDIR/first" "$PFX-claimed" # no command yet: no catalog in the bucket
fails_with 1 "already holds a store" "$CAIRN" -s "$TESTDIR/twin" init --chunks "s3://$BUCKET/$PFX-claimed"
[ -e "$TESTDIR/twin" ] && fail "a refused init left $TESTDIR/twin"
[ -n "$(sed -n 's/^store_id = //p' "$CAIRN_STORE/backend.conf")" ] || fail "init recorded no store_id"
# two inits that both find the prefix free: one claims it (conditional
# write); the claim in the bucket is the winner's
claim_race "s3://$BUCKET/$PFX-race"
claim=$("$S3TOOL" get "$BUCKET" "$PFX-race/meta/store-id") || fail "reading the raced claim"
[ "$claim" = "$(cat "$TESTDIR/race-a.id")" ] || fail "the prefix's claim is not the winner's: $claim"
# an init killed after its claim (SIGKILL as it creates the catalog): the
# same command takes that claim back and makes the store
strace -f -o /dev/null -P "$TESTDIR/kl/catalog.db" -e inject=openat:signal=KILL \
	"$CAIRN" -s "$TESTDIR/kl" init --chunks "s3://$BUCKET/$PFX-kill" >/dev/null 2>&1
[ -e "$TESTDIR/kl/cairn-store.partial" ] && "$S3TOOL" get "$BUCKET" "$PFX-kill/meta/store-id" >/dev/null ||
	fail "init was not killed between its claim and its catalog"
ok "$CAIRN" -s "$TESTDIR/kl" init --chunks "s3://$BUCKET/$PFX-kill"
claim=$("$S3TOOL" get "$BUCKET" "$PFX-kill/meta/store-id") || fail "reading the claim after a killed init"
[ "$claim" = "$(sed -n 's/^store_id = //p' "$TESTDIR/kl/backend.conf")" ] ||
	fail "the claim is not the store's after init ran again: $claim"
printf 'ffffffffffffffff' >"$TESTDIR/claim"
ok "$S3TOOL" put "$BUCKET" "$PFX/meta/store-id" "$TESTDIR/claim"
ok cairn create -o source="$TESTDIR/src2" other2
ok cairn snapshot other2@1 >/dev/null
ok cairn destroy -r other2
n=$(objects)
fails_with 1 "claimed by another store.*nothing deleted" cairn gc
[ "$(objects)" = "$n" ] || fail "gc deleted from a prefix another store claimed"
ok "$S3TOOL" rm "$BUCKET" "$PFX/meta/store-id"
# (the store keeps the id of a claim removed by hand, and a comment)
sed -i 's/^store_id = .*/store_id = 0123456789abcdef/' "$CAIRN_STORE/backend.conf"
printf 'tls_verify = yes\n# a note by hand\n' >>"$CAIRN_STORE/backend.conf"
grep -v '^store_id' "$CAIRN_STORE/backend.conf" >"$TESTDIR/conf.before"
ok cairn gc >/dev/null
ids=$(sed -n 's/^store_id = //p' "$CAIRN_STORE/backend.conf")
claim=$("$S3TOOL" get "$BUCKET" "$PFX/meta/store-id") || fail "no claim after gc"
[ "$ids" = "$claim" ] || fail "gc did not record its claim (and only it): '$ids' against '$claim'"
grep -v '^store_id' "$CAIRN_STORE/backend.conf" | diff - "$TESTDIR/conf.before" >/dev/null ||
	fail "claiming the prefix changed other settings or comments: $(cat "$CAIRN_STORE/backend.conf")"
[ "$(objects)" -lt "$n" ] || fail "gc removed no garbage once the prefix was claimed"

# 5. two commands' catalog copies: the one that lands last in the bucket
# is the newest (A's copy is held back; B commits meanwhile)
CAIRN_TEST_PUBLISH_DELAY_MS=3000 "$CAIRN" set user:a=1 tank &
apid=$!
sleep 1
ok cairn set user:b=2 tank
wait $apid || fail "the held-back command failed"
rm -rf "$TESTDIR/imp2"
ok "$CAIRN" -s "$TESTDIR/imp2" init --import "s3://$BUCKET/$PFX" >/dev/null
got=$("$CAIRN" -s "$TESTDIR/imp2" get -H -o property,value all tank | grep '^user:' | tr '\t\n' '= ')
[ "$got" = "user:a=1 user:b=2 " ] || fail "the bucket's catalog lacks a finished command's commit: $got"

# 6. prefixes an HTTP client would resolve or rewrite
for p in "x/../other" "./x" "x/." "a b" "x%2fy"; do
	fails_with 1 "bad prefix" "$CAIRN" -s "$TESTDIR/bad" init --chunks "s3://$BUCKET/$p"
	[ -e "$TESTDIR/bad" ] && fail "a refused init left $TESTDIR/bad"
done
done_test
