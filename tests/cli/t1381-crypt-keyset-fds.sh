#!/bin/bash
# verify (and gc of a bucket store) take the key of every encryption root
# at once.  Each key marked "in use" (7d88d09) kept a file descriptor of
# its own open for the whole command, one per root, outside every fd
# budget: with many roots the command ran out of descriptors, and verify
# then reported sound snapshots as damaged ("neither its index nor its
# tree stream can be read ... Too many open files"), exit 1.  The marks
# of a key set now share one descriptor.  Under a low fd limit (verify of
# one root needs fewer than 20) 40 roots must verify as well as one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
one_file_src
for i in $(seq 1 40); do
	ok mkroot r$i "$PASS1" -o source="$SRC"
	ok cairn snapshot r$i@a
done
out=$(ulimit -n 32 && "$CAIRN" verify 2>&1) || fail "verify of 40 roots under ulimit -n 32: $out"
# the marks went with verify
ok cairn unload-key r40
[ "$(keystatus r40)" = unavailable ] || fail "unload-key r40 after verify"
done_test
