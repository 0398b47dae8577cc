#!/bin/bash
# destroy of a dataset above many encryption roots claims every root's
# key (9a6a3fa: refused, "dataset is busy", while a command holds one).
# Each claim kept a descriptor of its own open until the destroy ended,
# one per root, outside every fd budget (as verify's marks did, t1381):
# with many roots the claims ran out of descriptors, and a root past the
# budget went unclaimed, so a destroy under a running restore of that
# root went ahead (or the destroy itself failed for want of descriptors).
# The claims now share one descriptor.  Under a low fd limit 40 roots
# must be refused for the one whose key a stopped restore holds, and
# destroyed once it has ended.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
one_file_src
ok cairn create top
for i in $(seq -w 1 39); do
	ok mkroot top/r$i "$PASS1" -o source="$SRC"
	ok cairn snapshot top/r$i@a
done
# the last root by name: a big snapshot, for a restore to stop in
big_root top/r40 a

RESTORE_HELD=1 start_stopped_restore top/r40@a "$TESTDIR/out"
# as a restore without its snapshot hold: the key alone is busy
unhold_restore top/r40@a
before=$(cairn list -H -o name -t all -r top)
fails_with 1 "top/r40: dataset is busy" sh -c 'ulimit -n 32 && exec "$0" destroy -r top' "$CAIRN"
[ "$(cairn list -H -o name -t all -r top)" = "$before" ] || fail "refused destroy changed the store"
[ "$(keystatus top/r40)" = available ] || fail "refused destroy unloaded top/r40's key"

resume_restore || fail "the restore failed"
out=$(ulimit -n 32 && "$CAIRN" destroy -r top 2>&1) || fail "destroy -r of 40 roots under ulimit -n 32: $out"
cairn list top >/dev/null 2>&1 && fail "top still there after destroy"
[ "$(keyctl show @s | grep -c ' user: cairn:')" = 0 ] || fail "destroy left roots' keys in the keyring"
done_test
