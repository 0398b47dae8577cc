#!/bin/bash
# Regression tests for the findings of "Replication you can trust": each
# case failed on the receiver before stream version 2.
#  - a -R -F stream cut between its first SNAPLIST and its first group end
#    changes nothing (renames and destroys wait for verified data);
#  - the same complete -R stream received twice: skipped, says so (-v);
#  - same name, other guid: an error naming both guids;
#  - a full stream onto a dataset with snapshots is refused even with -F
#    (zfs's message), and nothing changes;
#  - sync -R converges per dataset when a child lags behind its parent;
#  - a new recv -s refuses while another stream's partial state exists;
#  - source is never received; recv -o under -R sets the top only;
#  - memory per DATASET record is bounded (N empty properties);
#  - trees that cannot restore are refused before commit: duplicate paths,
#    a child before its parent, a volume image as a filesystem root, a
#    bundle shorter than its file, holes of 2^62 and 2^63 bytes;
#  - creation times INT64_MAX and INT64_MIN are refused;
#  - bytes after END are an error (cat full incr | recv);
#  - sync refuses a host part beginning with '-' before ssh runs.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
asan_build() {
	[ "${CAIRN_ASAN:-}" = 1 ] || nm "$CAIRN" 2>/dev/null | grep -q __asan_init ||
		nm -D "$CAIRN" 2>/dev/null | grep -q __asan_init
}
T=$TESTDIR/tool.py
cat >"$T" <<'PY'
# Stream surgery (stream version 2, lib/repl/stream.h): re-signs every record
# checksum, GROUPEND and END digests after a change.
import ctypes, ctypes.util, hashlib, struct, sys
_x = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_x.XXH3_64bits.restype = ctypes.c_uint64
_x.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
def xxh3(b): return _x.XXH3_64bits(bytes(b), len(b))
BEGIN, DATASET, SNAPLIST, SNAP, CHUNK, SNAPEND, END, GROUPEND = range(1, 9)
def parse(d):
    recs, off = [], 12
    while off < len(d):
        t, n = struct.unpack_from("<BI", d, off)
        recs.append([t, d[off + 5:off + 5 + n], off]); off += 13 + n
    return d[:12], recs
def build(head, recs):
    out = bytearray(head)
    for t, p, *_ in recs:
        if t == END: p = hashlib.sha256(out).digest()
        if t == GROUPEND: p = p[:12] + hashlib.sha256(out).digest()
        h = struct.pack("<BI", t, len(p)); out += h + p + struct.pack("<Q", xxh3(h + p))
    return bytes(out)
def S(b): return struct.pack("<H", len(b)) + b
class P:
    def __init__(s, b): s.b, s.o = b, 0
    def take(s, n): v = s.b[s.o:s.o + n]; s.o += n; return v
    def u32(s): return struct.unpack("<I", s.take(4))[0]
    def u64(s): return struct.unpack("<Q", s.take(8))[0]
    def str(s): return s.take(struct.unpack("<H", s.take(2))[0])
def dec_snap(p):
    r = P(p); d = {"ds": r.str(), "snap": r.str()}
    d["f"] = [r.u64() for _ in range(6)]  # guid from txg creation ref logical
    d["props"] = [(r.str(), r.str()) for _ in range(r.u32())]
    d["tree"] = [r.take(40) for _ in range(r.u32())]
    d["idx"] = [r.take(40) for _ in range(r.u32())]
    return d
def enc_snap(d):
    return S(d["ds"]) + S(d["snap"]) + struct.pack("<6Q", *d["f"]) + \
        struct.pack("<I", len(d["props"])) + b"".join(S(k) + S(v) for k, v in d["props"]) + \
        struct.pack("<I", len(d["tree"])) + b"".join(d["tree"]) + \
        struct.pack("<I", len(d["idx"])) + b"".join(d["idx"])
def blob(plain):
    return b"CRNB" + bytes([1, 0, 0, 0]) + struct.pack("<IIQ", len(plain), len(plain), xxh3(plain)) + plain
def ref(plain):
    return hashlib.sha256(plain).digest() + struct.pack("<II", len(plain), len(blob(plain)))
# tree entries (lib/data/tree.h): (type, path, size, content)
REG, DIR = 1, 2
def entry(t, path, size=0, content=b"\0", mode=None):
    mode = mode if mode is not None else (0o40755 if t == DIR else 0o100644)
    b = bytes([t]) + S(path) + struct.pack("<III", mode, 0, 0) + struct.pack("<qqq", 0, 0, 0)
    b += struct.pack("<QQQQI", size, 1, 1, 0, 1) + S(b"") + struct.pack("<H", 0) + content
    return struct.pack("<I", len(b)) + b
def hole(n): return b"\x01" + struct.pack("<I", 1) + b"\x02" + struct.pack("<Q", n)
TREES = {
    "dup": lambda: [entry(DIR, b""), entry(REG, b"a"), entry(REG, b"a")],
    "childfirst": lambda: [entry(DIR, b""), entry(REG, b"d/f"), entry(DIR, b"d")],
    "volroot": lambda: [entry(REG, b"", 10, hole(10))],
    "hole62": lambda: [entry(DIR, b""), entry(REG, b"f", 1 << 62, hole(1 << 62))],
    "hole63": lambda: [entry(DIR, b""), entry(REG, b"f", 1 << 63, hole(1 << 63))],
    "bundle": lambda: [entry(DIR, b""), entry(REG, b"f", 100,
                       b"\x02" + ref(b"0123456789") + struct.pack("<I", 0))],
}
def main():
    op, src, dst = sys.argv[1:4]
    head, recs = parse(open(src, "rb").read())
    if op == "tree":  # the first snapshot gets a crafted tree (and an index listing it)
        i = [j for j, r in enumerate(recs) if r[0] == SNAP][0]
        d = dec_snap(recs[i][1])
        tree = b"CAIRNTRE" + struct.pack("<I", 1) + b"".join(TREES[sys.argv[4]]())
        extra = [b"0123456789"] if sys.argv[4] == "bundle" else []
        idx = b"CAIRNIDX" + struct.pack("<I", 1) + b"".join(sorted(ref(x) for x in [tree] + extra))
        d["tree"], d["idx"] = [ref(tree)], [ref(idx)]
        recs[i][1] = enc_snap(d)
        for n, x in enumerate([tree, idx] + extra):
            recs.insert(i + 1 + n, [CHUNK, hashlib.sha256(x).digest() + blob(x)])
    elif op == "creation":  # every snapshot gets creation time v
        for r in recs:
            if r[0] == SNAP:
                d = dec_snap(r[1]); d["f"][3] = int(sys.argv[4]) & (2**64 - 1); r[1] = enc_snap(d)
    elif op == "emptyprops":  # the first DATASET record gets n empty properties
        i = [j for j, r in enumerate(recs) if r[0] == DATASET][0]
        p = P(recs[i][1]); name = p.str(); rest = p.take(9)
        n = int(sys.argv[4])
        recs[i][1] = S(name) + rest + struct.pack("<I", n) + b"\0\0\0\0" * n
    elif op == "cuts":  # offsets from the first SNAPLIST to the first GROUPEND
        a = [r[2] for r in recs if r[0] == SNAPLIST][0]
        b = [r[2] for r in recs if r[0] == GROUPEND][0]
        for o in range(a, b + 13 + 44, 97):
            print(o)
        return
    open(dst, "wb").write(build(head, recs))
main()
PY
python3 -c "import ctypes, ctypes.util; ctypes.CDLL(ctypes.util.find_library('xxhash') or 'libxxhash.so.0').XXH3_64bits" ||
	{ echo "libxxhash missing for python3"; exit 77; }

S=$TESTDIR/src
for d in tank tank/a tank/b; do mkdir -p "$S/$d"; echo "$d" >"$S/$d/f"; done
ok ca create -o source="$S/tank" tank
ok ca create -o source="$S/tank/a" tank/a
ok ca create -o source="$S/tank/b" tank/b
for k in 1 2 3; do
	echo $k >>"$S/tank/f"; echo $k >>"$S/tank/a/f"; echo $k >>"$S/tank/b/f"
	ok ca snapshot -r tank@$k
done
list() { "$CAIRN" -s "$1" list -H -p -t snapshot -r -o name,guid "$2" | sed "s|^$2\([@/]\)|X\1|"; }

# ---- -R -F: renames and destroys wait for verified data ----
ca send -R tank@2 | cb recv bk || fail "recv -R"
ok ca rename -r tank@1 tank@one
ok ca destroy -r tank@2
ok ca snapshot -r tank@4
ca send -R -I @one tank@4 >"$TESTDIR/rf" || fail "send -R -I for -F"
L0=$(cb list -H -p -t all -o name,guid)
n=0
for off in $(python3 "$T" cuts "$TESTDIR/rf" /dev/null); do
	head -c "$off" "$TESTDIR/rf" | cb recv -F bk >/dev/null 2>&1 && fail "cut at $off accepted"
	[ "$(cb list -H -p -t all -o name,guid)" = "$L0" ] ||
		{ fail "a -R -F stream cut at $off (before its first group end) changed the target"; break; }
	n=$((n + 1))
done
[ "$n" -ge 3 ] || fail "only $n cuts between SNAPLIST and the first group end"
cb recv -F bk <"$TESTDIR/rf" || fail "the whole -R -F stream"
[ "$(list "$CAIRN_STORE" tank)" = "$(list "$B" bk)" ] || fail "-R -F: listings differ"

# ---- the same -R stream twice: skipped, and said so ----
out=$(cb recv -v -F bk <"$TESTDIR/rf" 2>&1) || fail "the same -R stream again: $out"
echo "$out" | grep -q "^skipped (already present) bk/a@4$" || fail "-v does not report skipped bk/a@4: $out"
[ "$(list "$CAIRN_STORE" tank)" = "$(list "$B" bk)" ] || fail "the same stream again changed the target"

# ---- same name, other guid ----
ok ca create -o source="$S/tank" lone
ok ca snapshot lone@4
ca send lone@4 | cb recv same || fail "recv lone@4 into same"
ok ca destroy lone@4
ok ca snapshot lone@4 # same name, a new guid
ca send lone@4 >"$TESTDIR/lone4"
g1=$(cb list -H -p -o guid same@4) g2=$(ca list -H -p -o guid lone@4)
fails_with 1 "same@4: exists with guid $g1, the stream's same@4 has guid $g2" cb recv same <"$TESTDIR/lone4"
ok cb create other
ok cb snapshot other@x

# ---- a full stream onto a dataset with snapshots, even with -F ----
L0=$(cb list -H -p -t all -o name,guid)
fails_with 1 "destination has snapshots (eg. other@x)" cb recv -F other <"$TESTDIR/lone4"
err=$(cb recv -F other <"$TESTDIR/lone4" 2>&1)
echo "$err" | grep -q "must destroy them to overwrite it" || fail "zfs's message: $err"
[ "$(cb list -H -p -t all -o name,guid)" = "$L0" ] || fail "a refused full stream changed the target"

# ---- sync -R converges per dataset when a child lags behind ----
ok ca snapshot -r tank@5
ca send -R -I @4 tank@5 | cb recv bk || fail "recv @5"
ok ca snapshot -r tank@6
ok cb destroy bk/a@5 # the child now lags: its newest common snapshot is @4
ca sync -R tank "$B:bk" 2>"$TESTDIR/err" || fail "sync -R with a lagging child: $(cat "$TESTDIR/err")"
[ "$(list "$CAIRN_STORE" tank)" = "$(list "$B" bk)" ] || {
	fail "sync -R did not converge per dataset"
	diff <(list "$CAIRN_STORE" tank) <(list "$B" bk) >&2
}
# a new dataset on the source is created by sync
mkdir -p "$S/tank/n" && echo n >"$S/tank/n/f"
ok ca create -o source="$S/tank/n" tank/n
ok ca snapshot -r tank@7
ca sync -R tank "$B:bk" 2>"$TESTDIR/err" || fail "sync -R with a new dataset: $(cat "$TESTDIR/err")"
[ "$(list "$CAIRN_STORE" tank)" = "$(list "$B" bk)" ] || fail "sync -R: new dataset not created"
# a plain error naming the dataset and the cause, never a bare errno string
ok cb create bk2
ok cb snapshot bk2@mine
out=$(ca sync -R tank "$B:bk2" 2>&1) && fail "sync into unrelated history succeeded"
echo "$out" | grep -q "Input/output error" && fail "sync reports a bare errno string: $out"
echo "$out" | grep -q "bk2" || fail "sync error does not name the dataset: $out"

# ---- a new recv -s refuses while another stream's partial state exists ----
head -c 2000 <(ca send -R tank@7) | cb recv -s part >/dev/null 2>&1

tok=$(cb get -H -o value receive_resume_token part)
[ "$tok" != - ] || fail "no partial state on part"
fails_with 1 "contains partially-complete state from \"zfs receive -s\"" cb recv -s part <"$TESTDIR/lone4"
[ "$(cb get -H -o value receive_resume_token part)" = "$tok" ] || fail "the refused receive dropped part's partial state"
ok cb recv -A part
ca send lone@4 | cb recv -s part || fail "recv -s after recv -A"

# ---- source is never received; -o under -R on the top only ----
ok ca set source=/etc tank
ok ca snapshot -r tank@8
ca send -R tank@8 | cb recv -o user:k=v nosrc || fail "recv -R -o"
[ "$(cb get -H -o value source nosrc)" = none ] || fail "source was received: $(cb get -H -o value source nosrc)"
[ "$(cb get -H -o value,source user:k nosrc | tr '\t' ' ')" = "v local" ] || fail "-o not local on the top"
[ "$(cb get -H -o value,source user:k nosrc/a | tr '\t' ' ')" = "v inherited from nosrc" ] ||
	fail "-o under -R: the child has $(cb get -H -o value,source user:k nosrc/a)"
ok ca set source="$S/tank" tank

# ---- memory per DATASET record is bounded ----
ca send lone@4 >"$TESTDIR/l4"
python3 "$T" emptyprops "$TESTDIR/l4" "$TESTDIR/props" 250000 # a 1 MB record
if asan_build; then
	echo "SKIP (ASan build): recv of N empty properties under ulimit -v"
	cb recv np <"$TESTDIR/props" >/dev/null 2>"$TESTDIR/err"
	rc=$?
else
	(ulimit -v 400000; "$CAIRN" -s "$B" recv np <"$TESTDIR/props" >/dev/null 2>"$TESTDIR/err")
	rc=$?
fi
[ $rc = 1 ] || fail "DATASET with 250000 empty properties: exit $rc ($(cat "$TESTDIR/err"))"
grep -q "invalid.*malformed" "$TESTDIR/err" || fail "empty properties: $(cat "$TESTDIR/err")"
cb list -H -o name np >/dev/null 2>&1 && fail "a refused stream created np"

# ---- trees that cannot restore ----
for t in dup childfirst volroot hole62 hole63 bundle; do
	python3 "$T" tree "$TESTDIR/l4" "$TESTDIR/x" $t
	fails_with 1 "invalid" cb recv "tr$t" <"$TESTDIR/x"
	cb list -H -o name "tr$t@4" >/dev/null 2>&1 && fail "tree '$t': a snapshot that cannot restore was committed"
done

# ---- creation times ----
for v in 9223372036854775807 -9223372036854775808 -1; do
	python3 "$T" creation "$TESTDIR/l4" "$TESTDIR/x" -- "$v" 2>/dev/null ||
		python3 "$T" creation "$TESTDIR/l4" "$TESTDIR/x" "$v"
	fails_with 1 "creation time out of range" cb recv "ct" <"$TESTDIR/x"
	cb list -H -o name ct >/dev/null 2>&1 && fail "creation $v: dataset ct created"
done

# ---- bytes after END ----
ok ca snapshot lone@5
L0=$(cb list -H -p -t all -o name,guid)
fails_with 1 "bytes follow the end of the stream" cb recv cat < <(cat "$TESTDIR/l4"; ca send -i @4 lone@5)
[ "$(cb list -H -p -t all -o name,guid)" = "$L0" ] || fail "concatenated streams changed the target"

# ---- sync: a host part beginning with '-' never reaches ssh ----
printf '#!/bin/sh\necho ran >"%s"\n' "$TESTDIR/ssh-ran" >"$TESTDIR/fakessh"
chmod +x "$TESTDIR/fakessh"
CAIRN_SSH="$TESTDIR/fakessh" fails_with 1 "must not be empty or begin with '-'" ca sync -- tank "-oProxyCommand=x:/st:ds"
[ -e "$TESTDIR/ssh-ran" ] && fail "ssh ran with a host beginning with '-'"
# a receive into a missing parent says what to do (recv has no -p) and
# makes nothing
fails_with 1 "nosuch/child: parent does not exist (nosuch; create it first" cb recv nosuch/child <"$TESTDIR/lone4"
cb get name nosuch >/dev/null 2>&1 && fail "a refused receive made the parent"
cb recv nosuch/child <"$TESTDIR/lone4" 2>&1 | grep -q "use -p" && fail "recv's message names -p"
done_test
