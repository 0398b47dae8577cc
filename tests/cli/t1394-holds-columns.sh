#!/bin/bash
# cairn holds sizes its columns from the rows, as list does: a name longer
# than 32 characters, a long tag and a restore's temporary tag
# (.restore-PID-START-N) all line up under NAME, TAG and TIMESTAMP, two
# spaces apart.  -H (tabs, no header), -p and -j are as before.  The
# restore holding the snapshot meanwhile is slowed by strace and checked
# to be running while it is listed, then restores with full fidelity.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || fail "strace missing"
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
long=a-dataset-whose-name-is-longer-than-the-old-columns
ok cairn create -o source="$SRC" "$long"
ok cairn snapshot "$long@1"
ok cairn create -o source="$SRC" t
ok cairn snapshot t@1
ok cairn hold a-tag-that-is-rather-longer-than-twenty t@1
ok cairn hold k "$long@1"

# aligned OUTPUT: every row's values start where the header's titles do
aligned() {
	python3 - "$1" <<'PY' || fail "holds columns do not line up: $1"
import re, sys
lines = sys.argv[1].split("\n")
head = lines[0]
starts = [m.start() for m in re.finditer(r"\S+", head)]
assert [head[s:].split()[0] for s in starts] == ["NAME", "TAG", "TIMESTAMP"], head
for row in lines[1:]:
    vals = [m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", row)]
    assert vals[:3] == starts, (row, vals, starts)
PY
}

R=$XDIR/r
CAIRN_RESTORE_THREADS=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o /dev/null \
	-e trace=openat -e inject=openat:delay_exit=100000 "$CAIRN" restore t@1 "$R" 2>"$TESTDIR/err" &
pid=$!
for _ in $(seq 1 400); do
	cairn holds t@1 2>/dev/null | grep -q '\.restore-' && break
	sleep 0.05
done
out=$(cairn holds t@1 "$long@1")
kill -0 $pid 2>/dev/null || fail "the restore ended before its hold was listed"
echo "$out" | grep -q '\.restore-[0-9]*-[0-9]*-1 .*(temporary, pid [0-9]*)$' ||
	fail "no temporary restore hold listed: $out"
[ "$(echo "$out" | wc -l)" = 4 ] || fail "holds lines: $out"
aligned "$out"
out=$(cairn holds -H t@1 "$long@1")
[ "$(echo "$out" | wc -l)" = 3 ] || fail "holds -H lines: $out"
echo "$out" | awk -F'\t' '!/temporary/ && NF != 3 { exit 1 } /temporary/ && NF != 4 { exit 1 }' ||
	fail "holds -H fields: $out"
out=$(cairn holds -H -p "$long@1")
[ "$out" = "$(printf '%s\tk\t' "$long@1")$(echo "$out" | cut -f3)" ] || fail "holds -H -p: $out"
case "$(echo "$out" | cut -f3)" in '' | *[!0-9]*) fail "holds -p timestamp: $out" ;; esac
cairn holds -j "$long@1" | python3 -c 'import json, sys; d = json.load(sys.stdin)
assert list(d["snapshots"]["'"$long@1"'"]["holds"]) == ["k"], d' || fail "holds -j"
wait $pid || fail "the restore failed: $(cat "$TESTDIR/err")"
same_tree "$SRC" "$R"
out=$(cairn holds t@1 "$long@1")
[ "$(echo "$out" | wc -l)" = 3 ] || fail "holds lines after the restore: $out"
aligned "$out"
done_test
