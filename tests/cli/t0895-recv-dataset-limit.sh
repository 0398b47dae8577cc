#!/bin/bash
# A stream declares at most 65536 datasets (STREAM_MAX_DATASETS,
# docs/REPLICATION.md): recv refuses the 65537th DATASET record with a
# message naming the limit, before anything is changed; 65536 are read
# (that stream, cut after its DATASET records, fails as truncated, not on
# the limit).  The dataset lookups that used to scan every declared
# dataset per record made such a stream take minutes; now they are hash
# lookups (not timed here).
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
python3 -c "import ctypes, ctypes.util; ctypes.CDLL(ctypes.util.find_library('xxhash') or 'libxxhash.so.0').XXH3_64bits" ||
	{ echo "libxxhash missing for python3"; exit 77; }
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
mkdir -p "$TESTDIR/src"
echo x >"$TESTDIR/src/f"
ok "$CAIRN" create -o source="$TESTDIR/src" tank
ok "$CAIRN" snapshot -r tank@1
"$CAIRN" send -R tank@1 >"$TESTDIR/s" || fail "send -R"
T=$TESTDIR/many.py
cat >"$T" <<'PY'
# many.py IN OUT N [cut]: the -R stream IN with N child DATASET records
# (tank/dK) after the top's SNAPLIST, re-signed; "cut" ends OUT right
# after them.
import ctypes, ctypes.util, hashlib, struct, sys
_x = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_x.XXH3_64bits.restype = ctypes.c_uint64
_x.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = open(src, "rb").read()
recs, off = [], 12
while off < len(d):
    t, ln = struct.unpack_from("<BI", d, off)
    recs.append((t, d[off + 5:off + 5 + ln])); off += 13 + ln
i = [k for k, r in enumerate(recs) if r[0] == 3][0] + 1  # after the top's SNAPLIST
extra = []
for k in range(n):
    name = b"tank/d%d" % k
    extra.append((2, struct.pack("<H", len(name)) + name + bytes([1]) + struct.pack("<QI", 1000 + k, 0)))
recs = recs[:i] + extra + ([] if len(sys.argv) > 4 else recs[i:])
out = bytearray(d[:12])
sha = hashlib.sha256(out)
for t, p in recs:
    if t == 7: p = sha.digest()
    if t == 8: p = p[:12] + sha.digest()
    h = struct.pack("<BI", t, len(p))
    rec = h + p + struct.pack("<Q", _x.XXH3_64bits(h + p, len(h + p)))
    out += rec; sha.update(rec)
open(dst, "wb").write(out)
PY
python3 "$T" "$TESTDIR/s" "$TESTDIR/over" 65536 || fail "making the stream"
L0=$("$CAIRN" -s "$B" list -H -p -t all -o name 2>/dev/null)
fails_with 1 "more than 65536 datasets (the limit of a stream)" "$CAIRN" -s "$B" recv bk <"$TESTDIR/over"
[ "$("$CAIRN" -s "$B" list -H -p -t all -o name 2>/dev/null)" = "$L0" ] || fail "a refused stream changed the target"
python3 "$T" "$TESTDIR/s" "$TESTDIR/at" 65535 cut || fail "making the stream"
fails_with 1 "stream truncated" "$CAIRN" -s "$B" recv bk <"$TESTDIR/at"
[ "$("$CAIRN" -s "$B" list -H -p -t all -o name 2>/dev/null)" = "$L0" ] || fail "a truncated stream changed the target"
done_test
