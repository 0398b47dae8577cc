#!/bin/bash
# A chunk the receiver rejected (or failed to store) is not counted in the
# resume token: resuming from an honest sender then sends it again and the
# receive converges.  Before, the token skipped it and every resume failed
# with "chunk ... was neither sent nor present on the receiver".
# The damaged stream is made with t0810's stream tool (re-framed records).
. "$(dirname "$0")/lib.sh"
CST=$TESTDIR/cst.py
awk 'NR > 23 && /^PY$/ { exit } NR > 23' "$(dirname "$0")/t0810-recv-hostile.sh" >"$CST"
grep -q '"chunkcontent"' "$CST" || fail "cannot extract the stream tool from t0810"
python3 -c 'import ctypes, ctypes.util
ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0").XXH3_64bits' ||
	fail "libxxhash is needed to re-frame records (scripts/deps.sh: libxxhash-dev)"
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca config chunk_size=65536 >/dev/null
mkdir -p "$TESTDIR/src"
head -c 600000 /dev/urandom >"$TESTDIR/src/f"
ok ca create -o source="$TESTDIR/src" tank
ok ca snapshot tank@1
ca send tank@1 >"$TESTDIR/s" || fail "send"
# the first chunk's content no longer matches its digest
python3 "$CST" chunkcontent "$TESTDIR/s" "$TESTDIR/x" || fail "crafting the stream"

fails_with 1 "does not match its digest" cb recv -s bk <"$TESTDIR/x"
tok=$(cb get -H -o value receive_resume_token bk) || fail "get receive_resume_token"
[ -n "$tok" ] && [ "$tok" != "-" ] || fail "no resume token after a damaged chunk"
ca send -t "$tok" >"$TESTDIR/r" || fail "send -t"
cb recv -s bk <"$TESTDIR/r" || fail "resume from an honest sender did not converge"
want=$(ca list -H -p -t snapshot -o name,guid tank@1 | sed 's|^tank|bk|')
got=$(cb list -H -p -t snapshot -o name,guid bk@1) || fail "bk@1 missing"
[ "$want" = "$got" ] || fail "after resume: want '$want', got '$got'"
ok cb restore bk@1 "$TESTDIR/out"
cmp "$TESTDIR/src/f" "$TESTDIR/out/f" || fail "restored content differs"
done_test
