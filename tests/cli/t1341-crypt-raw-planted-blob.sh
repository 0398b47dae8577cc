#!/bin/bash
# A raw stream's encrypted blobs are filed under the ids the stream claims
# (they cannot be checked without the key).  A hostile raw stream can
# therefore put a sealed blob under the SHA-256 of someone's plain data.
# A later plain backup of that data must not deduplicate against it: a
# plain put replaces a sealed blob at its id, and the backup restores.
# A sync (which sends only what the far side lacks) refuses naming the
# blob, sets it aside, and converges when run again.
# The stream is doctored with t0810's stream tool (records re-framed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
CST=$TESTDIR/cst.py
awk 'NR > 23 && /^PY$/ { exit } NR > 23' "$(dirname "$0")/t0810-recv-hostile.sh" >"$CST"
grep -q '"chunkcontent"' "$CST" || fail "cannot extract the stream tool from t0810"
new_store
A=$TESTDIR/a X=$TESTDIR/x
for s in "$A" "$X"; do "$CAIRN" -s "$s" init >/dev/null || fail "init $s"; done
mkdir -p "$TESTDIR/secret" "$TESTDIR/victim"
echo secret >"$TESTDIR/secret/s"
head -c 3000000 /dev/urandom >"$TESTDIR/victim/data.bin"
# the plain chunk ids of the victim's file (an attacker who knows the file)
ok "$CAIRN" -s "$X" create -o source="$TESTDIR/victim" v
ok "$CAIRN" -s "$X" snapshot v@1
digs=$(find "$X/.chunks" -type f -size +100k -printf '%f\n')
[ -n "$digs" ] || fail "no content chunks of the victim file"
printf '%s\n' "$PASS1" | "$CAIRN" -s "$A" create -o encryption=on -o keyformat=passphrase \
	-o source="$TESTDIR/secret" enc || fail "create enc"
ok "$CAIRN" -s "$A" snapshot enc@1
"$CAIRN" -s "$A" send -w enc@1 >"$TESTDIR/raw" || fail "send -w"
# right after the first CHUNK record, one more per victim id, each with the
# first chunk's sealed blob; checksums and digests re-signed by build()
python3 - "$TESTDIR/raw" "$TESTDIR/evil" $digs <<PY || fail "doctoring the stream"
import sys
args = sys.argv[1:]
exec(open("$CST").read().replace("\nmain()\n", "\n"))
raw, out, digs = args[0], args[1], args[2:]
head, recs = parse(open(raw, "rb").read())
i = first(recs, CHUNK)
blobpart = recs[i][1][32:]
extra = [[CHUNK, bytes.fromhex(d) + blobpart, 0] for d in digs]
open(out, "wb").write(build(head, recs[:i + 1] + extra + recs[i + 1:]))
PY
cairn recv incoming <"$TESTDIR/evil" 2>/dev/null
planted=0
for d in $digs; do
	f=$CAIRN_STORE/.chunks/${d:0:4}/$d
	[ -f "$f" ] && planted=$((planted + 1)) # the store held no plain data before
done
[ $planted -gt 0 ] || fail "the doctored stream planted nothing: the test proves nothing"
# sync from another store: the far side says it has those chunks (a
# sealed blob is a file like any other), so they are not sent; the
# receiver finds the sealed blob where a plain chunk belongs, refuses
# naming it, sets it aside, and the next sync stores the chunk.
S=$TESTDIR/s
"$CAIRN" -s "$S" init >/dev/null || fail "init s"
ok "$CAIRN" -s "$S" create -o source="$TESTDIR/victim" synced
ok "$CAIRN" -s "$S" snapshot synced@1
err=$("$CAIRN" -s "$S" sync synced "$CAIRN_STORE:synced" 2>&1) &&
	fail "sync committed a plain snapshot over planted blobs"
echo "$err" | grep -q "are encrypted blobs where plain chunks belong" ||
	fail "the refusal does not say why: $err"
cairn list -H -o name synced@1 >/dev/null 2>&1 && fail "synced@1 was committed"
ok "$CAIRN" -s "$S" sync synced "$CAIRN_STORE:synced"
ok cairn restore synced@1 "$TESTDIR/out1"
cmp "$TESTDIR/victim/data.bin" "$TESTDIR/out1/data.bin" || fail "the synced copy differs"
# a backup of the same data on this store now finds plain chunks
ok cairn create -o source="$TESTDIR/victim" mydata
ok cairn snapshot mydata@1
ok cairn restore mydata@1 "$TESTDIR/out"
cmp "$TESTDIR/victim/data.bin" "$TESTDIR/out/data.bin" || fail "the plain backup deduplicated onto a planted blob"
ok cairn verify mydata@1
# and with the planted blobs back, a backup replaces them itself
for d in $digs; do
	f=$CAIRN_STORE/.chunks/${d:0:4}/$d
	[ -f "$f.bad" ] && cp "$f.bad" "$f" # a planted blob, set aside by the sync
done
ok cairn create -o source="$TESTDIR/victim" again
# The backup's threads look for the store's mark of received sealed blobs
# at once: one look is held up (strace) while the others put their
# chunks, which must not take it for "no mark".
[ -e "$CAIRN_STORE/.chunks/.sealed-received" ] || fail "no mark of received sealed blobs"
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o "$TESTDIR/trace" -P "$CAIRN_STORE/.chunks" \
	-e trace=faccessat2 -e inject=faccessat2:delay_exit=300000 "$CAIRN" snapshot again@1 ||
	fail "snapshot again@1"
# (strace splits a call into "<unfinished ...>" and "resumed" lines when
# threads overlap in it)
grep -q 'faccessat2(.*sealed-received' "$TESTDIR/trace" && grep -q 'DELAYED' "$TESTDIR/trace" ||
	fail "the look for the mark was not held: $(head -5 "$TESTDIR/trace")"
ok cairn restore again@1 "$TESTDIR/out2"
cmp "$TESTDIR/victim/data.bin" "$TESTDIR/out2/data.bin" || fail "a backup deduplicated onto a planted blob"
done_test
