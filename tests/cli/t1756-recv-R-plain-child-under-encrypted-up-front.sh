#!/bin/bash
# A plain -R stream whose child goes into an encryption root there (or
# below one) is refused: cairn stores chunks as they come and would
# leave plain data under the root (docs/SECURITY.md).  t1751 made the
# refusal come before any chunk for the stream's top only; a child was
# still refused at the commit, after its chunks had been read and stored
# (left for GC), and a stream cut right after its header said "stream
# truncated".  Now each child is judged on the dataset it writes into
# (the one with its guid, or the nearest existing ancestor of a new one)
# at its DATASET record, or, for a raw stream of plain datasets (as sync
# sends them), at the first snapshot record: no chunk is stored and
# nothing changes there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
second_store
T=$TESTDIR/src
mkdir -p "$T/c" "$T/c/n"
head -c 3000000 /dev/urandom >"$T/f"
head -c 3000000 /dev/urandom >"$T/c/g"
ok ca create -o source="$T" tank
ok ca create -o source="$T/c" tank/c
ok ca snapshot -r tank@1
ok ca sync -R tank "$B:bk"
head -c 3000000 /dev/urandom >"$T/c/g2"
head -c 3000000 /dev/urandom >"$T/c/n/h"
ok ca create -o source="$T/c/n" tank/c/n
ok ca snapshot -r tank@2
ca send -R -i @1 tank@2 >"$TESTDIR/inc"
ca send -R tank@2 >"$TESTDIR/full"
# a raw stream needs an encrypted dataset in it: tank2, plain, with a
# plain child c and an encryption root e
ok ca create -o source="$T" tank2
ok ca create -o source="$T/c" tank2/c
ok mkroot tank2/e "$PASS2" -o source="$T/c/n"
ok ca snapshot -r tank2@2
ca send -w -R tank2@2 >"$TESTDIR/raw"

nchunks() { find "$B/.chunks" -type f | wc -l; }
why() { echo "$1: cannot receive unencrypted data below encryption root $2"; }
unchanged() {
	[ "$(nchunks)" = "$base" ] || fail "$1: $(($(nchunks) - base)) chunks stored before the refusal"
	[ "$(recv_state bk)" = "$before" ] || fail "$1: bk changed: $(recv_state bk)"
}

# bk/c, the copy of tank/c, is destroyed there and made an encryption root
ok cb destroy -r bk/c
printf '%s\n' "$PASS1" | ok cb create -o encryption=on -o keyformat=passphrase bk/c
base=$(nchunks)
before=$(recv_state bk)
for opt in "" -s -F -n; do
	# shellcheck disable=SC2086
	fails_with 1 "$(why bk/c bk/c)" cb recv $opt bk <"$TESTDIR/inc"
	unchanged "recv $opt"
done
head -c 4096 "$TESTDIR/inc" | fails_with 1 "$(why bk/c bk/c)" cb recv bk
unchanged "a cut stream"
fails_with 1 "$(why bk/c bk/c)" ca sync -R tank "$B:bk"
unchanged "sync -R"

# a new child of the stream below a root there: judged on that root
ok cb create -o source="$T" bk2
printf '%s\n' "$PASS1" | ok cb create -o encryption=on -o keyformat=passphrase bk2/c
before=$(recv_state bk)
fails_with 1 "$(why bk2/c bk2/c)" cb recv -F bk2 <"$TESTDIR/full"
unchanged "recv -F of a full stream"
# a raw stream whose child c is plain: at its first snapshot record
fails_with 1 "$(why bk2/c bk2/c)" cb recv -F bk2 <"$TESTDIR/raw"
unchanged "recv -F of a raw stream with a plain child"
head -c 8192 "$TESTDIR/raw" | fails_with 1 "$(why bk2/c bk2/c)" cb recv -F bk2
unchanged "a cut raw stream"

# what still works: the same streams where no root is in the way
ok cb recv bk-full <"$TESTDIR/full"
[ "$(cb list -H -o name -t snapshot -r bk-full | tr '\n' ' ')" = "bk-full@1 bk-full@2 bk-full/c@1 bk-full/c@2 bk-full/c/n@2 " ] ||
	fail "bk-full: $(cb list -H -o name -t snapshot -r bk-full | tr '\n' ' ')"
ok cb recv bk-raw <"$TESTDIR/raw"
[ "$(cb list -H -o name -t snapshot -r bk-raw | tr '\n' ' ')" = "bk-raw@2 bk-raw/c@2 bk-raw/e@2 " ] ||
	fail "bk-raw: $(cb list -H -o name -t snapshot -r bk-raw | tr '\n' ' ')"
[ "$(cb get -H -o value encryptionroot bk-raw/e)" = bk-raw/e ] || fail "bk-raw/e is not a root"
done_test
