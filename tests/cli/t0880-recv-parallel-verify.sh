#!/bin/bash
# recv checks chunks (blob checksum, zstd, SHA-256) on worker threads
# (lib/repl/recvq.c) and stores them in stream order.  A stream of ~150 chunks
# received with one worker and with four gives the same snapshots, the same
# chunk files and the same restored tree.  A hostile chunk in the middle
# of that stream (its blob damaged, or another chunk's valid blob under its
# digest, records and stream digests re-signed) is named with the byte
# offset of its record, the receive exits 1, and the receiver lists what it
# listed before, whatever the worker count.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
new_store
S=$TESTDIR/src
mkdir -p "$S/small"
for i in $(seq 1 200); do head -c $((RANDOM % 4000 + 1)) /dev/urandom >"$S/small/f$i"; done
head -c 8000000 /dev/urandom >"$S/big.bin"
ok cairn create -o source="$S" -o chunksize=64K tank
ok cairn snapshot tank@1
echo more >"$S/small/f1"
ok cairn snapshot tank@2
cairn send tank@2 >"$TESTDIR/full" || fail "send tank@2"
cairn send tank@1 >"$TESTDIR/one" || fail "send tank@1"

SC=$TESTDIR/sc.py
cat >"$SC" <<'PY'
# sc.py IN OUT MODE: re-signs a stream with the middle CHUNK record made
# hostile; prints "HEX OFFSET NCHUNKS" (OFFSET = end of that record).
# MODE flip: a byte of the blob's payload flipped; swap: the blob of the
# chunk record after it put under the middle one's digest.
import ctypes, ctypes.util, hashlib, struct, sys
_x = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_x.XXH3_64bits.restype = ctypes.c_uint64
_x.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
CHUNK, END, GROUPEND = 5, 7, 8
data = open(sys.argv[1], "rb").read()
recs, off = [], 12
while off < len(data):
    t, n = struct.unpack_from("<BI", data, off)
    recs.append([t, bytearray(data[off + 5:off + 5 + n])])
    off += 13 + n
chunks = [i for i, r in enumerate(recs) if r[0] == CHUNK]
m = chunks[len(chunks) // 2]
if sys.argv[3] == "flip":
    recs[m][1][32 + 24 + 10] ^= 0x40
else:
    recs[m][1] = recs[m][1][:32] + recs[chunks[len(chunks) // 2 + 1]][1][32:]
out, end_of = bytearray(data[:12]), 0
for i, (t, p) in enumerate(recs):
    if t == END:
        p = bytearray(hashlib.sha256(out).digest())
    elif t == GROUPEND:
        p = p[:12] + hashlib.sha256(out).digest()
    h = struct.pack("<BI", t, len(p)) + bytes(p)
    out += h + struct.pack("<Q", _x.XXH3_64bits(h, len(h)))
    if i == m:
        end_of = len(out)
open(sys.argv[2], "wb").write(out)
print(recs[m][1][:32].hex(), end_of, len(chunks))
PY

listing() { "$CAIRN" -s "$1" list -r -t all -H -p -o name,guid,referenced,creation 2>&1; }
# what the stream carried: the snapshots, and the datasets' sizes (a
# received dataset's own guid and creation are the receiver's)
received() {
	"$CAIRN" -s "$1" list -r -t snapshot -H -p -o name,guid,referenced,creation 2>&1
	"$CAIRN" -s "$1" list -r -t filesystem -H -p -o name,referenced,used 2>&1
}
chunkfiles() { (cd "$1/.chunks" && find . -type f | sort); }

# The same stream with 1 and 4 workers: same catalog, chunks and tree.
for n in 1 4; do
	ok "$CAIRN" -s "$TESTDIR/b$n" init >/dev/null
	CAIRN_RECV_THREADS=$n "$CAIRN" -s "$TESTDIR/b$n" recv dst <"$TESTDIR/full" ||
		fail "recv with $n workers"
	ok "$CAIRN" -s "$TESTDIR/b$n" restore dst@2 "$TESTDIR/r$n"
	same_tree "$S" "$TESTDIR/r$n"
done
[ "$(received "$TESTDIR/b1")" = "$(received "$TESTDIR/b4")" ] ||
	fail "listings differ (1 vs 4 workers): $(received "$TESTDIR/b1") / $(received "$TESTDIR/b4")"
received "$TESTDIR/b1" | grep -q '^dst@2' || fail "dst@2 not received: $(received "$TESTDIR/b1")"
c1=$(chunkfiles "$TESTDIR/b1") && c4=$(chunkfiles "$TESTDIR/b4") && [ -n "$c1" ] ||
	fail "no chunk files"
[ "$c1" = "$c4" ] || fail "chunk files differ (1 vs 4 workers)"

# Hostile chunks in the middle: named, exit 1, the receiver unchanged.
for mode in flip swap; do
	read -r hex at nchunks < <(python3 "$SC" "$TESTDIR/one" "$TESTDIR/bad-$mode" "$mode") ||
		fail "sc.py $mode"
	[ "${nchunks:-0}" -ge 100 ] || fail "expected >= 100 chunks in the stream, got ${nchunks:-none}"
	for n in 1 2 4; do
		B=$TESTDIR/h-$mode-$n
		ok "$CAIRN" -s "$B" init >/dev/null
		ok "$CAIRN" -s "$B" create keep
		before=$(listing "$B")
		err=$(CAIRN_RECV_THREADS=$n timeout 120 "$CAIRN" -s "$B" recv dst <"$TESTDIR/bad-$mode" 2>&1)
		rc=$?
		[ $rc = 1 ] || fail "$mode, $n workers: exit $rc: $err"
		echo "$err" | grep -q "stream is invalid at byte $at: chunk $hex does not match its digest" ||
			fail "$mode, $n workers: chunk not named at byte $at: $err"
		[ "$(listing "$B")" = "$before" ] || fail "$mode, $n workers: listing changed: $(listing "$B")"
		# the intact stream is still received afterwards
		CAIRN_RECV_THREADS=$n "$CAIRN" -s "$B" recv dst <"$TESTDIR/one" ||
			fail "$mode, $n workers: retry"
		ok "$CAIRN" -s "$B" restore dst@1 "$TESTDIR/rr-$mode-$n"
		[ -f "$TESTDIR/rr-$mode-$n/big.bin" ] || fail "$mode, $n workers: nothing restored"
	done
done
done_test
