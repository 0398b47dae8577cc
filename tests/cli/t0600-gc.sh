#!/bin/bash
# Garbage collection: after prune (and destroy), GC with gc_atime_cutoff=0
# removes exactly the chunks no snapshot or partial receive references.
# The expected set is computed independently here: a Python reader of
# catalog.db and of the index streams' chunk files (blob header parsed by
# hand, payload through the zstd tool) lists every referenced chunk; the
# garbage is every chunk file not in it.  The dry run must list the same
# set and remove nothing.  Bookmarks keep nothing.  Also: --status (text
# and JSON), leftover temporaries, other names left alone, a chunk that a
# killed sweep left as <hex>.gc is put back if referenced, else removed.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null && command -v zstd >/dev/null || {
	echo "needs python3 and zstd"
	exit 77
}
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
mkdir "$SRC/linux"
cp -a /usr/include/linux/[a-m]*.h "$SRC/linux/"
head -c 3000000 /dev/urandom >"$SRC/big.bin"
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn config gc_atime_cutoff=0

# referenced STORE: every chunk a snapshot or partial receive references.
referenced() {
	python3 - "$1" <<'EOF'
import os, sqlite3, struct, subprocess, sys
store = sys.argv[1]
db = sqlite3.connect('file:%s/catalog.db?mode=ro' % store, uri=True)
def refs(blob):
    return [blob[i:i + 32].hex() for i in range(0, len(blob), 40)]
def plain(hexd):
    data = open('%s/.chunks/%s/%s' % (store, hexd[:4], hexd), 'rb').read()
    assert data[:4] == b'CRNB', hexd
    flags, = struct.unpack_from('<B', data, 5)
    payload = data[24:]
    if flags & 1:
        payload = subprocess.run(['zstd', '-d', '-c', '-q'], input=payload,
                                 stdout=subprocess.PIPE, check=True).stdout
    return payload
out = set()
rows = list(db.execute('SELECT tree, idx FROM snapdata'))
rows += [(b'', r[0]) for r in db.execute('SELECT idx FROM recvstate')]
for tree, idx in rows:
    out.update(refs(tree))
    roots = refs(idx)
    out.update(roots)
    stream = b''.join(plain(h) for h in roots)
    assert stream[:8] == b'CAIRNIDX', 'bad index'
    body = stream[12:]
    assert len(body) % 40 == 0
    out.update(refs(body))
for h in sorted(out):
    print(h)
EOF
}
# chunkfiles: every chunk file (64 hex digits) in the store.
chunkfiles() {
	find "$CAIRN_STORE/.chunks" -type f -regextype egrep -regex '.*/[0-9a-f]{64}' -printf '%f\n' | sort
}
# removed_list OUTPUT: the chunk names a "gc -v" or "gc -n -v" listed.
removed_list() {
	sed -n 's,^\(would remove\|removed\) \.chunks/..../\([0-9a-f]\{64\}\) .*,\2,p' | sort
}

ok cairn snapshot tank@1
for i in 2 3 4 5; do
	echo "change $i" >>"$SRC/linux/kernel.h"
	head -c 500000 /dev/urandom >"$SRC/new$i.bin"
	rm -f "$SRC/new$((i - 2)).bin"
	ok cairn snapshot tank@$i
done
ok cairn bookmark tank@2 tank#bm2

# Nothing is garbage yet.
out=$(cairn gc -v) || fail "first gc: $out"
echo "$out" | grep -q '^removed  *0 chunks' || fail "first gc removed something: $out"
[ "$(referenced "$CAIRN_STORE")" = "$(chunkfiles)" ] || fail "oracle disagrees with a clean store"

# Prune the two oldest, destroy one in the middle (the bookmark stays).
ok cairn prune --keep-last 3 tank >/dev/null
ok cairn destroy tank@4
cairn list -H -o name -t snapshot | sort >"$TESTDIR/left"
[ "$(cat "$TESTDIR/left")" = "$(printf 'tank@3\ntank@5')" ] || fail "prune/destroy: $(cat "$TESTDIR/left")"
chunkfiles >"$TESTDIR/before"
referenced "$CAIRN_STORE" >"$TESTDIR/ref"
comm -23 "$TESTDIR/before" "$TESTDIR/ref" >"$TESTDIR/expect"
[ -s "$TESTDIR/expect" ] || fail "no garbage to collect"
echo "garbage expected: $(wc -l <"$TESTDIR/expect") of $(wc -l <"$TESTDIR/before") chunks"

# Leftovers: a dead process's temporary (old), a live one's, other names.
victim=$(head -1 "$TESTDIR/ref")
vdir="$CAIRN_STORE/.chunks/${victim:0:4}"
tmpdead="$vdir/$victim.tmp.999999999.7"
tmplive="$vdir/$victim.tmp.$$.8"
echo x >"$tmpdead"
echo x >"$tmplive"
touch -a -d '2001-01-01' "$tmpdead" "$tmplive"
touch -m -d '2001-01-01' "$tmpdead" "$tmplive"
echo x >"$vdir/$victim.bad"
# a chunk name in the wrong directory: not a chunk there, left alone
wrongdir=$(head -2 "$TESTDIR/ref" | tail -1)
wd=ffff
[ "${wrongdir:0:4}" = ffff ] && wd=0000
wrongpath="$CAIRN_STORE/.chunks/$wd/$wrongdir"
mkdir -p "${wrongpath%/*}" # chunk directories appear on first use
cp "$CAIRN_STORE/.chunks/${wrongdir:0:4}/$wrongdir" "$wrongpath"
touch -a -d '2001-01-01' "$wrongpath"
# Garbage that a killed sweep left renamed: collected like any garbage,
# listed under its own name, once, also where the chunk exists again.
gone=$(sed -n 1p "$TESTDIR/expect")
twice=$(sed -n 2p "$TESTDIR/expect")
[ -n "$twice" ] || fail "want two garbage chunks"
mv "$CAIRN_STORE/.chunks/${gone:0:4}/$gone" "$CAIRN_STORE/.chunks/${gone:0:4}/$gone.gc"
cp -p "$CAIRN_STORE/.chunks/${twice:0:4}/$twice" "$CAIRN_STORE/.chunks/${twice:0:4}/$twice.gc"
chunkfiles >"$TESTDIR/before2"

# The dry run lists exactly the garbage and changes nothing.
out=$(cairn gc -n -v) || fail "gc -n failed"
echo "$out" | removed_list >"$TESTDIR/dry"
diff "$TESTDIR/expect" "$TESTDIR/dry" >/dev/null || {
	fail "dry run list differs from the expected garbage"
	diff "$TESTDIR/expect" "$TESTDIR/dry" | head -5
}
echo "$out" | grep -q 'would remove .* 1 temporary files' || fail "dry run temporaries: $out"
[ "$(chunkfiles)" = "$(cat "$TESTDIR/before2")" ] || fail "dry run removed chunks"
[ -e "$tmpdead" ] || fail "dry run removed a temporary"

# A referenced chunk that a killed sweep left renamed: put back by mark.
mv "$vdir/$victim" "$vdir/$victim.gc"

# The real run removes exactly the garbage.
out=$(cairn gc -v) || fail "gc failed: $out"
echo "$out" | removed_list >"$TESTDIR/real"
diff "$TESTDIR/expect" "$TESTDIR/real" >/dev/null || {
	fail "removed list differs from the expected garbage"
	diff "$TESTDIR/expect" "$TESTDIR/real" | head -5
}
chunkfiles >"$TESTDIR/after"
sort "$TESTDIR/ref" <(echo "$wrongdir") >"$TESTDIR/want"
diff "$TESTDIR/want" "$TESTDIR/after" >/dev/null || {
	fail "chunks left are not exactly the referenced ones"
	diff "$TESTDIR/want" "$TESTDIR/after" | head -5
}
[ -e "$vdir/$victim" ] && [ ! -e "$vdir/$victim.gc" ] || fail "quarantined chunk not put back"
left=$(find "$CAIRN_STORE/.chunks" -name '*.gc')
[ -z "$left" ] || fail "quarantined garbage left: $left"
[ -e "$tmpdead" ] && fail "dead process's old temporary kept"
[ -e "$tmplive" ] || fail "live process's temporary removed"
[ -e "$vdir/$victim.bad" ] || fail ".bad file removed"
echo "$out" | grep -q 'other files  *2 ' || fail "other names not counted: $out"
echo "$out" | grep -q '1 temporary files' || fail "temporary not counted: $out"
[ -e "$wrongpath" ] || fail "chunk name in the wrong directory removed"
rm -f "$tmplive" "$vdir/$victim.bad" "$wrongpath"

# Everything left is whole, and the snapshots restore.
ok cairn verify
ok cairn restore tank@5 "$TESTDIR/r5"
same_tree "$SRC" "$TESTDIR/r5"

# A second run finds nothing; status is kept, in text and JSON.
out=$(cairn gc -v) || fail "second gc"
echo "$out" | grep -q '^removed  *0 chunks' || fail "second gc removed: $out"
st=$(cairn gc --status) || fail "gc --status"
for k in 'index data' 'on disk' 'removed' 'pending' 'dedup factor' 'cache' 'mark' 'sweep'; do
	echo "$st" | grep -q "^$k" || fail "status lacks '$k': $st"
done
cairn gc --status -j | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in ("start", "end", "snapshots", "index_bytes", "disk_chunks", "disk_bytes",
          "removed_chunks", "pending_chunks", "dedup_factor", "avg_chunk", "cache_hits",
          "cache_misses", "mark_ns", "sweep_ns", "touches_per_s"):
    assert k in d, k
assert d["snapshots"] == 2 and d["removed_chunks"] == 0 and d["disk_chunks"] > 0
assert d["dedup_factor"] > 0 and not d["dry_run"]
' || fail "gc --status -j"
# -H: a "name<TAB>value" line a JSON field; with -p the values are the
# JSON's, exactly; -p alone keeps the report's layout with exact numbers.
cairn gc --status -j >"$TESTDIR/st.json" || fail "gc --status -j"
cairn gc --status -H -p >"$TESTDIR/st.hp" || fail "gc --status -Hp"
cairn gc --status -H >"$TESTDIR/st.h" || fail "gc --status -H"
python3 - "$TESTDIR/st.json" "$TESTDIR/st.hp" "$TESTDIR/st.h" <<'PY' || fail "gc --status -H/-p disagree with -j"
import json, sys
d = json.load(open(sys.argv[1]))
hp = [l.split("\t") for l in open(sys.argv[2]).read().splitlines()]
h = [l.split("\t") for l in open(sys.argv[3]).read().splitlines()]
assert [k for k, _ in hp] == list(d) == [k for k, _ in h], (hp, list(d))
for k, v in hp:
    assert json.loads(v) == d[k], (k, v, d[k])
human = dict(h)
assert human["disk_bytes"][-1] in "BKMGT" and human["disk_bytes"] != str(d["disk_bytes"]), human
assert human["dry_run"] == "false" and human["disk_chunks"] == str(d["disk_chunks"]), human
PY
bytes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["disk_bytes"])' "$TESTDIR/st.json")
cairn gc --status -p | grep -q "^on disk  *$bytes in " || fail "gc --status -p: $(cairn gc --status -p)"
# The status is in the catalog, not in a file of its own.
sqlite3 "$CAIRN_STORE/catalog.db" 'SELECT disk_chunks FROM gcstatus' >/dev/null || fail "no gcstatus table"

# Usage errors.
fails_with 2 "invalid order" "$CAIRN" gc --order random
fails_with 2 "invalid batch" "$CAIRN" gc --batch 0
fails_with 2 "status" "$CAIRN" gc --status -n
fails_with 2 "takes only -j, -H and -p" "$CAIRN" gc --status -v
# --status shows the last run: the run's tuning is refused, not ignored.
fails_with 2 "status" "$CAIRN" gc --status --threads 2
fails_with 2 "status" "$CAIRN" gc --status --order digest

# -v -j: standard output is one JSON document (the removed chunks' lines
# went there first).
mkdir "$TESTDIR/gj"
head -c 200000 /dev/urandom >"$TESTDIR/gj/f"
ok cairn create -o source="$TESTDIR/gj" tank2
ok cairn snapshot tank2@a
ok cairn destroy -r tank2
sleep 1
"$CAIRN" gc -v -j >"$TESTDIR/gj.out" || fail "gc -v -j"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["removed_chunks"] > 0, d
' "$TESTDIR/gj.out" || fail "gc -v -j is not JSON: $(head -c 300 "$TESTDIR/gj.out")"
# -v -H -p: one "removed<TAB>PATH<TAB>BYTES" line a chunk, then the fields.
head -c 300000 /dev/urandom >"$TESTDIR/gj/g"
ok cairn create -o source="$TESTDIR/gj" tank3
ok cairn snapshot tank3@a
ok cairn destroy -r tank3
sleep 1
"$CAIRN" gc -v -H -p >"$TESTDIR/gjh.out" || fail "gc -v -H -p"
awk -F'\t' '$1 == "removed" && $3 ~ /^[0-9]+$/ && $3 > 0 {n++} END {exit !(n > 0)}' "$TESTDIR/gjh.out" ||
	fail "gc -v -H -p chunk lines: $(head -c 300 "$TESTDIR/gjh.out")"
grep -q "^removed_chunks	[1-9]" "$TESTDIR/gjh.out" || fail "gc -v -H -p fields: $(cat "$TESTDIR/gjh.out")"
rm -rf "$TESTDIR/empty"
CAIRN_STORE=$TESTDIR/empty "$CAIRN" init >/dev/null
out=$(CAIRN_STORE=$TESTDIR/empty "$CAIRN" gc --status 2>&1) && fail "status on a fresh store"
echo "$out" | grep -q "no garbage collection" || fail "fresh status message: $out"
CAIRN_STORE=$TESTDIR/empty ok "$CAIRN" gc
done_test
