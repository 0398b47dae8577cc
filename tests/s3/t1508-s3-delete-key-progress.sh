#!/bin/bash
# s3_delete_many retries the keys a DeleteObjects answer fails with a
# transient code, in rounds, with backoff; a round that deletes some keys
# is progress and makes the retry budget whole again.  But the backoff
# kept growing over the rounds whatever they did: with a short budget
# (s3_retry_seconds=2) the wait after the 6th or 7th round reached the
# budget, and gc gave up ("gave up after 7 tries, 2 s without a
# success") though every round had deleted a key.
# (tests/s3/faultproxy.py delete-key-slowdown-but-last: each answer fails
# every key but the last it asked, so each round deletes one key.)
#  1. gc goes on while each round deletes a key, and removes every
#     object, in about one round per key.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
gc_tank
[ "$n" -ge 10 ] || fail "only $n objects: too few rounds to tell"
ok cairn destroy tank@1
echo delete-key-slowdown-but-last >"$MODE"
out=$(cairn gc 2>&1) || fail "gc whose every round deleted a key failed: $out"
echo pass >"$MODE"
rounds=$(grep -c "^delete-round" "$MODE.hits")
[ "$rounds" -ge 10 ] || fail "only $rounds rounds: $(cat "$MODE.hits")"
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
done_test
