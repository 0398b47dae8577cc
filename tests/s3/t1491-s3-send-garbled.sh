#!/bin/bash
# send reads chunks raw (no decoding: they go into the stream as the
# bucket holds them).  A body damaged on its way from the bucket
# (tests/s3/faultproxy.py garbling GETs) must not go into a stream while
# send succeeds: the raw blob's checksum is checked and the object read
# once more, as decoded reads do (t1480 1b).
#  1. The first GET of each object garbled, no cache: send succeeds, and
#     its stream receives and restores exactly.
#  2. The same with the chunk cache on: a garbled body kept in the cache
#     does not reach the stream either.
#  3. Every GET garbled: send fails, naming what it read, and its stream
#     never passes for a whole one.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
ok cairn config s3_cache_mb=0
SRC=$TESTDIR/src
corpus "$SRC"
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn snapshot tank@1 >/dev/null

# send_garbled_first DATASET SOURCE: send DATASET@1 with the first GET of
# each object garbled (the proxy garbles an object's first GET only once
# in its life: each part sends a dataset of its own); the stream must
# receive into a new local store and restore exactly.
send_garbled_first() {
	rm -f "$MODE.hits"
	echo garble-first >"$MODE"
	cairn send "$1@1" >"$TESTDIR/$1.s" 2>"$TESTDIR/$1.err" || fail "send $1 over transient garbling failed: $(cat "$TESTDIR/$1.err")"
	echo pass >"$MODE"
	[ "$(grep -c "^garble-first GET" "$MODE.hits" 2>/dev/null)" -gt 5 ] || fail "send $1: too few reads were garbled"
	ok "$CAIRN" -s "$TESTDIR/$1.l" init >/dev/null
	if ! "$CAIRN" -s "$TESTDIR/$1.l" recv copy <"$TESTDIR/$1.s" 2>"$TESTDIR/$1.rerr"; then
		fail "send $1 succeeded but wrote a stream that does not receive: $(cat "$TESTDIR/$1.rerr")"
		return
	fi
	rm -rf "$TESTDIR/$1.r"
	ok "$CAIRN" -s "$TESTDIR/$1.l" restore copy@1 "$TESTDIR/$1.r" >/dev/null
	same_tree "$2" "$TESTDIR/$1.r"
}

# 1. no cache
send_garbled_first tank "$SRC"

# 2. the cache on (empty, so every object is fetched and kept)
ok cairn config s3_cache_mb=256
rm -rf "$CAIRN_STORE/cache"
SRC2=$TESTDIR/src2
corpus "$SRC2"
ok cairn create -o source="$SRC2" -o chunksize=64K cached
ok cairn snapshot cached@1 >/dev/null
send_garbled_first cached "$SRC2"
[ -n "$(ls "$CAIRN_STORE/cache")" ] || fail "the send kept nothing in the cache"

# 3. every GET garbled: a failure, never a stream passed for whole
ok cairn config s3_cache_mb=0
echo garble-get >"$MODE"
cairn send tank@1 >"$TESTDIR/s3" 2>"$TESTDIR/send3.err" && fail "send over garbled bodies succeeded"
echo pass >"$MODE"
grep -q "corrupt\|damaged" "$TESTDIR/send3.err" || fail "send did not say what failed: $(cat "$TESTDIR/send3.err")"
ok cairn verify >/dev/null
done_test
