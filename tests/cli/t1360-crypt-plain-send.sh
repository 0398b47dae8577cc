#!/bin/bash
# Plain send (no -w) of an encrypted dataset, as zfs does it: with the key
# loaded the stream is decrypted and is exactly what an unencrypted dataset
# holding the same chunks would send (plain blobs named by SHA-256, plain
# tree and index streams), so the receiver stores it unencrypted, restores
# it with full fidelity, applies plain incrementals (-i, -I) and resumes it,
# and deduplicates it against unencrypted data.  Refusals: key not loaded
# (names the dataset, says load-key or send -w, store unchanged), -R of a
# tree holding encrypted datasets without -w (as zfs), and receiving the
# decrypted stream below an encryption root.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
SMALL=$XDIR/small
mkdir -p "$SMALL/sub"
for i in $(seq 1 60); do echo "small file $i $RANDOM" >"$SMALL/f$i"; done
for i in $(seq 1 20); do head -c $((i * 300)) /dev/urandom >"$SMALL/sub/r$i"; done
# settle access times (relatime changes them on the first read only), so
# two backups of the same files record the same tree
find "$SRC" "$SMALL" -type f ! -name fifo -exec cat {} + >/dev/null
ls -lRa "$SRC" "$SMALL" >/dev/null
B=$TESTDIR/b
cb() { "$CAIRN" -s "$B" "$@"; }
cb init >/dev/null || fail "init b"
chunks_of() { find "$1/.chunks" -type f -name '????????????????????????????????????????????????????????????????' | sed 's,.*/,,' | sort; }

ok mkroot tank "$PASS1" -o source="$SRC"
ok cairn create -o source="$SMALL" tank/small
ok cairn create -o source="$SMALL" plainsmall
ok cairn snapshot tank@one
ok cairn snapshot tank/small@s
ok cairn snapshot plainsmall@s
cp -a "$SRC" "$XDIR/copy1"

# full, decrypted: received unencrypted, restores byte-identical
cairn send tank@one >"$TESTDIR/s1" || fail "plain send of an encrypted dataset"
ok cb recv back <"$TESTDIR/s1"
[ "$(cb get -H -o value encryption,keystatus back | tr '\n' ' ')" = "off - " ] ||
	fail "decrypted stream received encrypted"
ok cb restore back@one "$XDIR/r1"
same_tree "$XDIR/copy1" "$XDIR/r1"
ok cb verify
# no keyed id and no encrypted blob travelled: the receiver shares no
# chunk name with the encrypted store, and every blob it got is plain
common=$(comm -12 <(chunks_of "$CAIRN_STORE") <(chunks_of "$B") | wc -l)
[ "$common" = 0 ] || fail "$common keyed chunk names reached the receiver"
nb=$(chunks_of "$B" | wc -l)
[ "$nb" -ge 5 ] || fail "receiver holds only $nb chunks"
enc=$(find "$B/.chunks" -type f -exec od -An -tu1 -j4 -N1 {} + | grep -cv '^ *1$')
[ "$enc" = 0 ] || fail "$enc blobs on the receiver are not plain version 1"

# incremental -i on top of the full one
echo "appended" >>"$SRC/d1/s3"
head -c 300000 /dev/urandom >"$SRC/new.bin"
rm "$SRC/d1/s7"
chmod 700 "$SRC/d1/d2"
ok cairn snapshot tank@two
cp -a "$SRC" "$XDIR/copy2"
cairn send -i @one tank@two >"$TESTDIR/s2" || fail "plain incremental"
s1=$(stat -c %s "$TESTDIR/s1")
s2=$(stat -c %s "$TESTDIR/s2")
[ "$s2" -lt $((s1 / 4)) ] || fail "incremental stream ($s2 bytes) is not incremental (full: $s1)"
ok cb recv back <"$TESTDIR/s2"
ok cb restore back@two "$XDIR/r2"
same_tree "$XDIR/copy2" "$XDIR/r2"

# -I: every snapshot in the range, onto another full copy
head -c 100000 /dev/urandom >"$SRC/d1/third.bin"
ok cairn snapshot tank@three
cp -a "$SRC" "$XDIR/copy3"
ok cb recv back2 <"$TESTDIR/s1"
cairn send -I @one tank@three | cb recv back2 || fail "plain -I"
ok cb restore back2@two "$XDIR/r2b"
same_tree "$XDIR/copy2" "$XDIR/r2b"
ok cb restore back2@three "$XDIR/r3"
same_tree "$XDIR/copy3" "$XDIR/r3"

# resume: a cut decrypted stream continues with send -t
head -c $((s1 / 2)) "$TESTDIR/s1" | cb recv -s resumed >/dev/null 2>&1 && fail "cut stream accepted"
tok=$(cb get -H -o value receive_resume_token resumed)
[ -n "$tok" ] && [ "$tok" != - ] || fail "no resume token after a cut decrypted stream"
cairn send -t "$tok" | cb recv -s resumed || fail "decrypted resume"
ok cb restore resumed@one "$XDIR/rr"
same_tree "$XDIR/copy1" "$XDIR/rr"

# exactly the unencrypted form: an unencrypted dataset of the same files
# sent first, the decrypted one adds no chunk at all
C=$TESTDIR/c
cc() { "$CAIRN" -s "$C" "$@"; }
cc init >/dev/null || fail "init c"
cairn send plainsmall@s | cc recv ps || fail "send plainsmall"
n0=$(chunks_of "$C" | wc -l)
cairn send tank/small@s | cc recv fromcrypt || fail "plain send of an encrypted child"
n1=$(chunks_of "$C" | wc -l)
[ "$n1" = "$n0" ] || fail "decrypted stream is not the unencrypted form: chunks $n0 -> $n1"
ok cc restore fromcrypt@s "$XDIR/rs"
same_tree "$SMALL" "$XDIR/rs"

# an encrypted volume, decrypted: received as a plain volume, holes kept
IMG=$TESTDIR/img
head -c 3000000 /dev/urandom >"$IMG" && truncate -s 8M "$IMG"
ok cairn create -V -o source="$IMG" tank/vol
ok cairn snapshot tank/vol@1
cp "$IMG" "$TESTDIR/img1"
echo x | dd of="$IMG" bs=1 seek=6000000 conv=notrunc status=none
ok cairn snapshot tank/vol@2
cairn send tank/vol@1 | cb recv v || fail "decrypted volume"
cairn send -i @1 tank/vol@2 | cb recv v || fail "decrypted volume -i"
[ "$(cb get -H -o value type,encryption v | tr '\n' ' ')" = "volume off " ] || fail "received volume"
ok cb restore v@1 "$TESTDIR/v1"
cmp "$TESTDIR/img1" "$TESTDIR/v1" || fail "volume @1 differs"
ok cb restore v@2 "$TESTDIR/v2"
cmp "$IMG" "$TESTDIR/v2" || fail "volume @2 differs"
[ "$(du -k "$TESTDIR/v2" | cut -f1)" -lt 6000 ] || fail "volume holes not kept"

# key not loaded: refused, naming the dataset and both ways out; nothing
# written, no hold left, the store as it was
ok cairn unload-key tank
before=$(cairn list -H -t all -o name,userrefs)
err=$(cairn send tank@one 2>&1 >"$TESTDIR/nokey")
rc=$?
[ $rc = 1 ] || fail "send without the key: exit $rc ($err)"
echo "$err" | grep -q "^cairn: send: tank: encryption key not loaded (encryption root tank)" ||
	fail "no-key message: $err"
echo "$err" | grep -q "cairn load-key tank" || fail "no-key message lacks load-key: $err"
echo "$err" | grep -q "send -w" || fail "no-key message lacks send -w: $err"
[ ! -s "$TESTDIR/nokey" ] || fail "a refused send wrote a stream"
fails_with 1 "tank/small: encryption key not loaded (encryption root tank)" cairn send tank/small@s
fails_with 1 "tank: encryption key not loaded" cairn send -i @one tank@two
[ "$(cairn list -H -t all -o name,userrefs)" = "$before" ] || fail "refused sends changed the store"
ok cairn send -w tank@one >/dev/null # raw needs no key
printf '%s\n' "$PASS1" | ok cairn load-key tank

# -R of a tree holding encrypted datasets: raw only, as in zfs
fails_with 1 "tank: encrypted dataset (encryption root tank) may not be sent with -R" cairn send -R tank@one
ok cairn create -o source="$SMALL" mixed
printf '%s\n' "$PASS2" | ok cairn create -o encryption=on -o keyformat=passphrase -o source="$SMALL" mixed/enc
ok cairn snapshot -r mixed@m
err=$(cairn send -R mixed@m 2>&1 >"$TESTDIR/rrs")
[ $? = 1 ] || fail "plain -R of a tree with an encrypted child accepted"
echo "$err" | grep -q "mixed/enc: encrypted dataset (encryption root mixed/enc) may not be sent with -R.*send -R -w" ||
	fail "-R message: $err"
[ ! -s "$TESTDIR/rrs" ] || fail "a refused -R wrote a stream"
[ "$(cairn holds -H mixed@m mixed/enc@m | wc -l)" = 0 ] || fail "refused -R left holds"
cairn send -R -w mixed@m | cb recv -F rawmixed || fail "raw -R of the same tree"
ok cairn send mixed/enc@m >/dev/null # alone, decrypted, it goes

# a decrypted stream is plain data: not into an encryption root
CAIRN_STORE=$B mkroot broot "$PASS2" -o source=/nonexistent || fail "mkroot on b"
fails_with 1 "cannot receive unencrypted data below encryption root broot" cb recv broot/x <"$TESTDIR/s1"
cb get name broot/x >/dev/null 2>&1 && fail "refused receive created broot/x"
"$CAIRN" -s "$B" unload-key -a >/dev/null
done_test
