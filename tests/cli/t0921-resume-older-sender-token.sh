#!/bin/bash
# A resume token left by a stream of an older sender, which sent a chunk
# again for each snapshot of the group that holds it, counts those
# repeats as positions (the receiver counts every chunk record).  The
# sender now sends a chunk once per group; resuming, it must still skip
# by every sighting, not by first sightings only: skipping that many
# first sightings passes over chunks the receiver never got, and every
# resume failed the same way ('snapshot index unreadable or incomplete',
# the partial state kept), so a sync -R cut before an upgrade never
# completed.  The older stream is made from today's by sending p/a's
# chunks again in p/b (same source, so the same tree and index, and the
# older sender sent p/b's chunks in the same order as p/a's).
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
python3 -c "import ctypes, ctypes.util; ctypes.CDLL(ctypes.util.find_library('xxhash') or 'libxxhash.so.0').XXH3_64bits" 2>/dev/null ||
	{ echo "no libxxhash for python3"; exit 77; }
new_store
ok ca config chunk_size=65536 >/dev/null
T=$TESTDIR/src
mkdir -p "$T/x" "$T/y"
rnd "$T/x/f"
head -c 1500000 /dev/urandom >"$T/y/g"
cat "$T/x/f" "$T/y/g" >/dev/null # settle access times
ok ca create -o source=none p
ok ca create -o source="$T/x" p/a
ok ca create -o source="$T/x" p/b
ok ca create -o source="$T/y" p/c
ok ca snapshot -r p@1
ca send -R p@1 >"$TESTDIR/new" || fail "send -R"
cat >"$TESTDIR/old.py" <<'PY'
# old.py NEW OLD: NEW with p/a's chunk records sent again in p/b, as a
# sender before 'a chunk goes out once per group' wrote it; prints the
# offset of p/c's first chunk record in OLD.  Records: u8 type, u32 len,
# payload, u64 XXH3-64 of the three; GROUPEND and END carry the SHA-256
# of every byte before them (lib/repl/stream.h).
import ctypes, ctypes.util, hashlib, struct, sys
x = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
x.XXH3_64bits.restype = ctypes.c_uint64
x.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
SNAP, CHUNK, SNAPEND, END, GROUPEND = 4, 5, 6, 7, 8
data = open(sys.argv[1], "rb").read()
recs, off = [], 12
while off < len(data):
    t, n = struct.unpack_from("<BI", data, off)
    recs.append([t, data[off + 5:off + 5 + n]])
    off += 13 + n
def ds(p): return p[2:2 + struct.unpack_from("<H", p)[0]]
out, cur, chunks, first_c = bytearray(data[:12]), None, {}, None
for t, p in recs:
    if t == SNAP:
        cur = ds(p)
    if t == SNAPEND and cur == b"p/b":
        assert not chunks.get(b"p/b"), "p/b has chunks of its own"
        for c in chunks[b"p/a"]:
            h = struct.pack("<BI", CHUNK, len(c))
            out += h + c + struct.pack("<Q", x.XXH3_64bits(h + c, len(h + c)))
    if t == CHUNK:
        chunks.setdefault(cur, []).append(p)
        if cur == b"p/c" and first_c is None:
            first_c = len(out)
    if t in (END, GROUPEND):
        p = p[:-32] + hashlib.sha256(out).digest()
    h = struct.pack("<BI", t, len(p))
    out += h + p + struct.pack("<Q", x.XXH3_64bits(h + p, len(h + p)))
open(sys.argv[2], "wb").write(out)
print(first_c)
PY
first=$(python3 "$TESTDIR/old.py" "$TESTDIR/new" "$TESTDIR/old") || fail "making the older stream"
# the older stream is a valid one
second_store
ok cb recv whole <"$TESTDIR/old"
# cut before p/b's repeats end, and after some of p/c's chunks
for cut in $((first - 100000)) $((first + 300000)) $((first + 900000)); do
	second_store
	head -c $cut "$TESTDIR/old" | cb recv -s q 2>/dev/null && fail "cut at $cut: received"
	tok=$(cb get -H -o value receive_resume_token q)
	case $tok in [23]-*) ;; *) fail "cut at $cut: no partial state: $tok" ;; esac
	out=$(ca send -t "$tok" 2>&1 | cb recv -s q 2>&1) || fail "cut at $cut: resume: $out"
	ok cb verify -r q >/dev/null
	for d in a c; do
		rm -rf "$TESTDIR/r"
		src=$T/x && [ $d = c ] && src=$T/y
		cb restore "q/$d@1" "$TESTDIR/r" >/dev/null 2>&1 && diff -r "$src" "$TESTDIR/r" >/dev/null ||
			fail "cut at $cut: q/$d@1 does not restore its source"
	done
done
done_test
