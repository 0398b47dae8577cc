#!/bin/bash
# A DeleteObjects answer that names a key twice with a transient code
# (tests/s3/faultproxy.py delete-key-slowdown-dup-first: SlowDown for the
# first key asked, given twice) had that key put twice on the list to ask
# again: the retry asked for it twice, the round counted one key too many
# as failed (a round that deleted the others could count as no progress),
# and a key named more often than keys were asked failed the gc.
#  1. gc asks again for that key once, and removes every object.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
gc_tank
ok cairn destroy tank@1
echo delete-key-slowdown-dup-first >"$MODE"
out=$(cairn gc 2>&1) || fail "gc over one key's SlowDown named twice failed: $out"
echo pass >"$MODE"
key=$(sed -n 's/^delete-key-error //p' "$MODE.hits")
[ -n "$key" ] || fail "the proxy failed no key: $(cat "$MODE.hits")"
asked=$(grep "^delete-asked " "$MODE.hits" | tr ' ' '\n' | grep -cxF "$key")
[ "$asked" = 1 ] || fail "gc asked for $key $asked times again: $(cat "$MODE.hits")"
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
done_test
