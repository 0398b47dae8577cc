#!/bin/bash
# A cut `send -R -s` stream resumes with send -t: the resume token records
# that the stream skipped datasets (send -R -s), and send -t plans it so
# again, leaving the same descendant out (with its warning) instead of
# refusing it.  The resumed receive then completes to what the uncut
# stream gives, and a token without the record (a send -R stream that
# skipped nothing) resumes as before.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
second_store
S=$TESTDIR/src
mkdir -p "$S/kid" "$S/ok"
head -c 3000000 /dev/urandom >"$S/big"
head -c 3000000 /dev/urandom >"$S/ok/big"
echo kid >"$S/kid/f"
token() { cb get -H -o value receive_resume_token "$1" 2>/dev/null | grep -v '^-$'; }
ok ca config chunk_size=65536 >/dev/null # ~100 chunks: resume points

ok ca create -o source="$S" pool
ok ca create -o source="$S/kid" pool/kid
ok ca create -o source="$S/ok" pool/ok
ok ca snapshot pool@b
ok ca snapshot pool/ok@b # pool/kid lacks @b, and is older than pool@b
ca send -R -s pool@b >"$TESTDIR/s" 2>/dev/null || fail "send -R -s pool@b"
size=$(stat -c %s "$TESTDIR/s")

# Two groups (pool@b, then pool/ok@b): a cut at 3/4 is inside the second.
head -c $((size * 3 / 4)) "$TESTDIR/s" | cb recv -s bk >/dev/null 2>&1 &&
	fail "a cut stream was received whole"
tok=$(token bk)
case $tok in
3-*) ;;
*) fail "no 3- resume token after the cut: [$tok] ($(names bk))" ;;
esac
# A token holds only the flags that plan a stream (STREAM_F_PLAN: -R, -I,
# -w, skipped); recv never writes another.  A well-formed token (right
# check) with any other bit - "resumed", or one no version knows - is
# refused as not valid, before anything is planned or written.
forge_flags() { # TOKEN BITS: TOKEN with BITS or'ed into its flags, check redone
	python3 -c 'import sys, struct, hashlib
t = sys.argv[1]; raw = bytearray(bytes.fromhex(t[2:])); n = 72 if t[:2] == "3-" else 36
struct.pack_into("<I", raw, 32, struct.unpack_from("<I", raw, 32)[0] | int(sys.argv[2], 0))
raw[n:n + 8] = hashlib.sha256(raw[:n]).digest()[:8]
print(t[:2] + raw.hex())' "$1" "$2"
}
for bits in 0x2 0x20 0x80000000; do
	ca send -t "$(forge_flags "$tok" $bits)" >"$TESTDIR/r" 2>"$TESTDIR/err"
	rc=$?
	[ $rc = 1 ] || fail "BUG: send -t of a token with flag bits $bits: exit $rc"
	grep -q "resume token is not valid" "$TESTDIR/err" ||
		fail "BUG: send -t of a token with flag bits $bits not refused as not valid: $(cat "$TESTDIR/err")"
	grep -q "WARNING" "$TESTDIR/err" &&
		fail "send -t of a token with flag bits $bits planned a stream before refusing it"
	[ -s "$TESTDIR/r" ] && fail "BUG: send -t of a token with flag bits $bits wrote a stream"
done
ca send -t "$tok" >"$TESTDIR/r" 2>"$TESTDIR/err" ||
	fail "BUG: send -t of a cut send -R -s stream refused: $(cat "$TESTDIR/err")"
grep -q "^WARNING: skipping dataset pool/kid and its children" "$TESTDIR/err" ||
	fail "send -t: no warning for the skipped pool/kid: $(cat "$TESTDIR/err")"
cb recv -s bk <"$TESTDIR/r" >/dev/null 2>"$TESTDIR/err" ||
	fail "recv of the resumed send -R -s stream: $(cat "$TESTDIR/err")"
[ -z "$(token bk)" ] || fail "a resume token is left after the resumed receive"
[ "$(names bk)" = "bk bk@b bk/ok bk/ok@b " ] ||
	fail "after the resume: [$(names bk)], want the uncut stream's"
want=$(ca list -H -p -t snapshot -o name,guid -r pool | grep -v "^pool/kid" | sed 's|^pool|bk|')
[ "$want" = "$(cb list -H -p -t snapshot -o name,guid -r bk)" ] ||
	fail "resumed send -R -s: received snapshots or guids differ"
rm -rf "$TESTDIR/r1" && cb restore bk/ok@b "$TESTDIR/r1" && same_tree "$S/ok" "$TESTDIR/r1"
out=$(cb verify -r bk 2>&1) || fail "verify after the resumed send -R -s: $out"

# A send -R stream that skipped nothing records nothing, and resumes.
ok ca snapshot pool/kid@c
ok ca snapshot pool/ok@c
ok ca snapshot pool@c
second_store
ca send -R -s pool@c >"$TESTDIR/s2" 2>"$TESTDIR/err" || fail "send -R -s pool@c"
[ -s "$TESTDIR/err" ] && fail "send -R -s pool@c warned: $(cat "$TESTDIR/err")"
size=$(stat -c %s "$TESTDIR/s2")
head -c $((size * 3 / 4)) "$TESTDIR/s2" | cb recv -s bk >/dev/null 2>&1 &&
	fail "a cut stream was received whole"
tok=$(token bk)
[ -n "$tok" ] || fail "no resume token after the second cut"
ca send -t "$tok" 2>"$TESTDIR/err" | cb recv -s bk >/dev/null 2>&1 ||
	fail "resume of a send -R -s stream that skipped nothing: $(cat "$TESTDIR/err")"
[ -z "$(token bk)" ] || fail "a resume token is left after the second resume"
want=$(ca list -H -p -t snapshot -o name,guid -r pool | sed 's|^pool|bk|')
[ "$want" = "$(cb list -H -p -t snapshot -o name,guid -r bk)" ] ||
	fail "resumed send -R -s (nothing skipped): snapshots differ: [$(names bk)]"
done_test
