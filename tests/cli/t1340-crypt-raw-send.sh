#!/bin/bash
# Raw send (send -w) of encrypted datasets: the stream holds no plaintext;
# the receiver, without the key, holds the dataset encrypted
# (keystatus=unavailable) and runs holds, prune, gc, verify and send -w
# further; after load-key it restores with full fidelity.  Raw incremental,
# raw -R, raw resume (recv -s / send -t), sync (raw by default), a tampered
# raw stream (refused, nothing changed), and the refusals:
# plain data below an encryption root, mismatched keys (plain, decrypted
# send of an encrypted dataset: t1360).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
mkdir -p "$SRC/kid" && echo "kid MARKERCONTENT_cairn_7f3a" >"$SRC/kid/kf"
B=$TESTDIR/b
cb() { "$CAIRN" -s "$B" "$@"; }
cb init >/dev/null || fail "init b"

ok mkroot tank "$PASS1" -o source="$SRC" -o compression=off
ok cairn create tank/kid
ok cairn snapshot -r tank@one
cp -a "$SRC" "$XDIR/copy1"

cairn send -w tank@one >"$TESTDIR/raw1" || fail "send -w"
hits=$(grep -ca -e MARKERCONTENT_cairn_7f3a -e MARKERNAME_secret -e MARKERXATTR "$TESTDIR/raw1")
[ "$hits" = 0 ] || fail "plaintext in a raw stream ($hits lines)"

# a tampered raw stream is refused before commit and changes nothing
cp "$TESTDIR/raw1" "$TESTDIR/raw1.bad"
flip_byte "$TESTDIR/raw1.bad"
out=$(cb recv backup <"$TESTDIR/raw1.bad" 2>&1) && fail "tampered raw stream accepted"
echo "$out" | grep -q "stream" || fail "tampered stream message: $out"
cb get name backup >/dev/null 2>&1 && fail "tampered stream created the dataset"

# received without the key
ok cb recv backup <"$TESTDIR/raw1"
[ "$(cb get -H -o value keystatus,encryptionroot,keyformat backup | tr '\n' ' ')" = \
	"unavailable backup passphrase " ] || fail "received root properties"
fails_with 1 "encryption key not loaded (encryption root backup" cb restore backup@one "$TESTDIR/x"
ok cb verify
ok cb hold keep backup@one
ok cb holds backup@one >/dev/null
ok cb release keep backup@one
ok cb config gc_atime_cutoff=0
ok cb gc >/dev/null

# incremental, raw, still no key on the receiver; prune there
echo "MARKERCONTENT_cairn_7f3a two" >>"$SRC/d1/s5"
ok cairn snapshot -r tank@two
cp -a "$SRC" "$XDIR/copy2"
cairn send -w -i @one tank@two | cb recv backup || fail "raw incremental"
fails_with 1 "encryption key not loaded (encryption root backup" cb snapshot backup@local
ok cb prune --keep-last 2 backup >/dev/null
ok cb verify
# onward, raw, from the keyless receiver to a third store
C3=$TESTDIR/c
"$CAIRN" -s "$C3" init >/dev/null || fail "init c"
cb send -w backup@two | "$CAIRN" -s "$C3" recv third || fail "send -w from a keyless receiver"

# load-key on the receiver: full fidelity
printf '%s\n' "wrong passphrase" | fails_with 1 "backup: incorrect key" cb load-key backup
printf '%s\n' "$PASS1" | ok cb load-key backup
ok cb restore backup@one "$XDIR/r1"
same_tree "$XDIR/copy1" "$XDIR/r1"
ok cb restore backup@two "$XDIR/r2"
same_tree "$XDIR/copy2" "$XDIR/r2"
printf '%s\n' "$PASS1" | ok "$CAIRN" -s "$C3" load-key third
ok "$CAIRN" -s "$C3" restore third@two "$XDIR/r3"
same_tree "$XDIR/copy2" "$XDIR/r3"
ok cb verify   # with the key: GCM tags and keyed names

# raw -R: the child inherits the carried key
cairn send -w -R tank@two | cb recv -F rtree || fail "raw -R"
[ "$(cb get -H -o value encryptionroot rtree/kid)" = rtree ] || fail "raw -R child root"
printf '%s\n' "$PASS1" | ok cb load-key rtree
ok cb restore rtree/kid@two "$XDIR/rk"
cmp "$SRC/kid/kf" "$XDIR/rk/kf" || fail "raw -R child content"

# refusals on receive
ok cb create -o source=/nonexistent plainparent
ok cairn create -o source="$SRC/d1" plainsrc
ok cairn snapshot plainsrc@p
cairn send plainsrc@p >"$TESTDIR/plain"
fails_with 1 "cannot receive unencrypted data below encryption root backup" cb recv backup/p <"$TESTDIR/plain"
ok mkroot other "$PASS2" -o source="$SRC"
ok cairn snapshot other@one
cairn send -w other@one >"$TESTDIR/other"
ok cb create backup/empty
fails_with 1 "encrypted with other key material" cb recv -F backup/empty <"$TESTDIR/other"
cb list -H -o name -t snapshot backup/empty | grep -q . && fail "mismatched key: snapshot received"

# raw resume: a cut stream leaves a token; send -t continues it raw
ok cairn snapshot tank@three
head -c 200000 /dev/urandom >"$SRC/more.bin"
ok cairn snapshot tank@four
cairn send -w tank@four >"$TESTDIR/raw4"
full=$(stat -c %s "$TESTDIR/raw4")
head -c $((full / 2)) "$TESTDIR/raw4" | cb recv -s resumed >/dev/null 2>&1 && fail "cut stream accepted"
tok=$(cb get -H -o value receive_resume_token resumed)
[ -n "$tok" ] && [ "$tok" != - ] || fail "no resume token after a cut raw stream"
cairn send -t "$tok" | cb recv -s resumed || fail "raw resume"
[ "$(cb get -H -o value keystatus resumed)" = unavailable ] || fail "resumed raw dataset"
cb list -H -o name -t snapshot resumed | grep -q "^resumed@four$" || fail "resumed snapshot missing"

# sync replicates encrypted datasets raw, with no key at the far side
D=$TESTDIR/d
"$CAIRN" -s "$D" init >/dev/null || fail "init d"
ok cairn sync tank "$D:synced" >/dev/null
[ "$("$CAIRN" -s "$D" get -H -o value keystatus synced)" = unavailable ] || fail "sync raw"
printf '%s\n' "$PASS1" | ok "$CAIRN" -s "$D" load-key synced
ok "$CAIRN" -s "$D" restore synced@four "$XDIR/r4"
cmp "$SRC/more.bin" "$XDIR/r4/more.bin" || fail "synced content"
"$CAIRN" -s "$B" unload-key -a >/dev/null
"$CAIRN" -s "$C3" unload-key -a >/dev/null
"$CAIRN" -s "$D" unload-key -a >/dev/null
done_test
