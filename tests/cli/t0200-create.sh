#!/bin/bash
# Datasets: names, hierarchy, properties and their inheritance.
. "$(dirname "$0")/lib.sh"
new_store

ok cairn create tank
fails_with 1 "already exists" "$CAIRN" create tank
fails_with 1 "use -p" "$CAIRN" create tank/a/b
ok cairn create -p tank/a/b
cairn list -H -o name | grep -qx tank/a || fail "parent not created"
fails_with 1 "invalid character '!'" "$CAIRN" create 'tank/bad!name'
fails_with 1 "invalid character '@'" "$CAIRN" create 'tank/x@y'
fails_with 1 "'.' and '..'" "$CAIRN" create 'tank/..'
fails_with 1 "empty" "$CAIRN" create 'tank//x'
long=$(printf 'a%.0s' $(seq 1 300))
fails_with 1 "at most 255" "$CAIRN" create "$long"

# source inherits like a mountpoint; compression and user props inherit
ok cairn set source=/srv compression=zstd-5 site:owner=alice tank
cairn get -H source tank/a/b | grep -q $'\t/srv/a/b\tinherited from tank' || fail "source inherit"
cairn get -H compression tank/a | grep -q $'zstd-5\tinherited from tank' || fail "compression inherit"
cairn get -H site:owner tank/a/b | grep -q alice || fail "user prop inherit"
ok cairn set compression=off tank/a
cairn get -H compression tank/a/b | grep -q $'off\tinherited from tank/a' || fail "nearest ancestor wins"
fails_with 1 "expected off, on" "$CAIRN" set compression=fast tank
fails_with 1 "absolute path" "$CAIRN" set source=relative tank
fails_with 1 "power of two" "$CAIRN" set chunksize=3000 tank
fails_with 1 "unknown or read-only" "$CAIRN" set bogus=1 tank
fails_with 1 "does not exist" "$CAIRN" set compression=off nosuch
ok cairn create -V -o source=/dev/null vol1
fails_with 1 "expected filesystem or volume" "$CAIRN" create -o type=disk vol2
done_test
