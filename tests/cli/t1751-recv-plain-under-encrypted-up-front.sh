#!/bin/bash
# A plain (not raw) stream into a new dataset below an encryption root is
# refused (cairn's receive stores chunks as they come and would leave
# plain data under the root: docs/SECURITY.md).  That was found only at
# the commit, after every chunk had been read and stored (left for GC):
# the whole transfer was wasted, over ssh too.  Where the stream's top
# goes is known from its DATASET record (no -R rename moves the top), so
# it is refused there now, before any chunk: the refusal comes even from
# a stream cut right after its header, no chunk is stored, and nothing
# (no dataset, no partial state) is left.  -R, -e, -s and sync alike.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
second_store
tank_with_kid
printf '%s\n' "$PASS1" | ok cb create -o encryption=on -o keyformat=passphrase enc
ok cb create enc/sub
nchunks() { find "$B/.chunks" -type f | wc -l; }
base=$(nchunks)
before=$(cb list -H -o name -t all -r enc)
why() { echo "$1: cannot receive unencrypted data below encryption root enc"; }
unchanged() {
	[ "$(nchunks)" = "$base" ] || fail "$1: $(($(nchunks) - base)) chunks stored before the refusal"
	[ "$(cb list -H -o name -t all -r enc)" = "$before" ] || fail "$1: enc changed: $(names enc)"
	[ -z "$(cb get -r -H -o value receive_resume_token enc | grep -v '^-$')" ] ||
		fail "$1: partial state left"
}

ca send tank@s1 >"$TESTDIR/plain"
ca send -R tank@s1 >"$TESTDIR/rec"
# cut after the header and the DATASET records, long before the data ends
head -c 4096 "$TESTDIR/rec" >"$TESTDIR/rec-cut"
fails_with 1 "$(why enc/new)" cb recv enc/new <"$TESTDIR/plain"
unchanged "recv"
fails_with 1 "$(why enc/sub/new)" cb recv -s enc/sub/new <"$TESTDIR/rec"
unchanged "recv -s -R"
fails_with 1 "$(why enc/new)" cb recv -s enc/new <"$TESTDIR/rec-cut"
unchanged "recv -s of a cut stream"
fails_with 1 "$(why enc/tank)" cb recv -e enc <"$TESTDIR/rec"
unchanged "recv -e"
fails_with 1 "$(why enc/sub/tank)" cb recv -e enc/sub <"$TESTDIR/plain"
unchanged "recv -e of a plain stream"
fails_with 1 "$(why enc/new)" cb recv -n enc/new <"$TESTDIR/rec-cut"
unchanged "recv -n"
# send -w of a plain dataset (as sync sends it): a raw stream whose top
# gets no key, refused at its first snapshot record, still before a chunk
ca send -w -R tank@s1 2>/dev/null | head -c 4096 >"$TESTDIR/raw-cut"
fails_with 1 "$(why enc/new)" cb recv -s enc/new <"$TESTDIR/raw-cut"
unchanged "recv -s of a cut raw stream of a plain dataset"
# from a pipe: the receiver stops at the DATASET record
err=$(ca send -R tank@s1 2>&1 | cb recv enc/new 2>&1)
echo "$err" | grep -q "$(why enc/new)" || fail "recv from a pipe: $err"
unchanged "recv from a pipe"
# sync (sends raw, which for a plain dataset is a plain stream)
fails_with 1 "$(why enc/new)" ca sync tank "$B:enc/new"
unchanged "sync"
fails_with 1 "$(why enc/new)" ca sync -R tank "$B:enc/new"
unchanged "sync -R"

# what still works: the same stream beside the root, and a raw stream of
# an encrypted dataset below it
ok cb recv plain <"$TESTDIR/rec"
ok mkroot tank2 "$PASS2" -o source="$T"
ok ca snapshot tank2@s1
ca send -w tank2@s1 | ok cb recv enc/raw
[ "$(cb get -H -o value encryptionroot enc/raw)" = enc/raw ] || fail "enc/raw is not its own root"
done_test
