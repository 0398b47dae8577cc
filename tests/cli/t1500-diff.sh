#!/bin/bash
# cairn diff: zfs diff's format (M + - R, -F type letters, -H, -t, escapes)
# against hand-written expected output.
. "$(dirname "$0")/lib.sh"
new_store
S=$TESTDIR/src
mkdir -p "$S/d/e" "$S/keep" "$S/old"
echo a >"$S/a"
echo b >"$S/d/b"
echo f >"$S/d/e/f"
echo k >"$S/keep/k"
echo r >"$S/ren"
echo s >"$S/same"
echo x >"$S/replaced"
echo o >"$S/old/file"
ok cairn create -o source="$S" ds
past_racy_tick
ok cairn snapshot ds@1
sleep 0.01 # distinct ctimes

echo more >>"$S/a"                 # M
rm "$S/d/b"                        # -
echo n >"$S/new"                   # +
mv "$S/ren" "$S/ren2"              # R
mv "$S/d/e" "$S/d/e2"              # R of a directory; d/e/f follows silently
ln "$S/keep/k" "$S/klink"          # M (+1)
rm "$S/replaced"; echo y >"$S/replaced" # same name, another inode: - then +
mkfifo "$S/fifo"
ln -s a "$S/sym"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$S/sock"
rm -r "$S/old"
past_racy_tick
ok cairn snapshot ds@2

out=$(cairn diff ds@1 ds@2) || fail "diff exited $?"
exp=$(cat <<EOF
M	$S/
M	$S/a
M	$S/d
-	$S/d/b
R	$S/d/e -> $S/d/e2
+	$S/fifo
M	$S/keep/k	(+1)
+	$S/new
-	$S/old
-	$S/old/file
R	$S/ren -> $S/ren2
-	$S/replaced
+	$S/replaced
+	$S/sock
+	$S/sym
EOF
)
[ "$out" = "$exp" ] || { fail "plain diff"; diff <(echo "$exp") <(echo "$out") >&2; }

out=$(cairn diff -F ds@1 ds@2) || fail "diff -F exited $?"
exp=$(cat <<EOF
M	/	$S/
M	F	$S/a
M	/	$S/d
-	F	$S/d/b
R	/	$S/d/e -> $S/d/e2
+	|	$S/fifo
M	F	$S/keep/k	(+1)
+	F	$S/new
-	/	$S/old
-	F	$S/old/file
R	F	$S/ren -> $S/ren2
-	F	$S/replaced
+	F	$S/replaced
+	=	$S/sock
+	@	$S/sym
EOF
)
[ "$out" = "$exp" ] || { fail "diff -F"; diff <(echo "$exp") <(echo "$out") >&2; }

# -H: renames tab-separated (no arrow); -t: the object's ctime first.
out=$(cairn diff -H ds@1 ds@2 | grep '^R') || fail "diff -H"
exp=$(printf 'R\t%s\t%s\nR\t%s\t%s' "$S/d/e" "$S/d/e2" "$S/ren" "$S/ren2")
[ "$out" = "$exp" ] || fail "diff -H renames: $out"
out=$(cairn diff -t ds@1 ds@2 | grep "	$S/new\$") || fail "diff -t"
exp=$(printf '%s\t+\t%s' "$(stat -c %.9Z "$S/new")" "$S/new")
[ "$out" = "$exp" ] || fail "diff -t: '$out' != '$exp'"

# Nothing changed: no output, success.
out=$(cairn diff ds@2 ds@2) || fail "diff of a snapshot with itself"
[ -z "$out" ] || fail "diff of a snapshot with itself printed: $out"

# Devices (root only: mknod needs it).
if [ "$(id -u)" = 0 ]; then
	mknod "$S/null" c 1 3
	mknod "$S/loop" b 7 200
	past_racy_tick
	ok cairn snapshot ds@3
	out=$(cairn diff -F ds@2 ds@3 | grep -v "	$S/\$") || fail "diff devices"
	exp=$(printf '+\tB\t%s\n+\tC\t%s' "$S/loop" "$S/null")
	[ "$out" = "$exp" ] || fail "diff devices: $out"
	rm "$S/null" "$S/loop"
	past_racy_tick
	ok cairn snapshot ds@3b
fi

# Escapes: space, backslash, tab and non-ASCII bytes as \0ooo; -h leaves them.
touch "$S/sp ace" "$S/back\\slash" "$S/$(printf 'tab\there')" "$S/caf$(printf '\303\251')"
past_racy_tick
ok cairn snapshot ds@4
out=$(cairn diff ds@2 ds@4 | grep '^+') || fail "diff escapes"
exp=$(cat <<EOF
+	$S/back\\0134slash
+	$S/caf\\0303\\0251
+	$S/sp\\0040ace
+	$S/tab\\0011here
EOF
)
[ "$out" = "$exp" ] || { fail "escaped names"; diff <(echo "$exp") <(echo "$out") >&2; }
out=$(cairn diff -h ds@2 ds@4 | grep '^+	.*sp ace$') || fail "diff -h keeps the space"

# -j: one JSON document whose changes say what `-F -t` says line by line;
# paths carry the same escapes (so any name survives), or with -h the name
# itself (U+FFFD for bytes that are not UTF-8).  --json-int: numbers.
touch "$S/bad$(printf '\377')"
past_racy_tick
ok cairn snapshot ds@4j
for to in ds@2 ds@4j; do
	cairn diff -F -t ds@1 $to >"$TESTDIR/diff.txt" || fail "diff -F -t ds@1 $to"
	cairn diff -j ds@1 $to >"$TESTDIR/diff.json" || fail "diff -j ds@1 $to"
	python3 - "$TESTDIR/diff.json" "$TESTDIR/diff.txt" <<'PY' || fail "diff -j ds@1 $to does not match diff -F -t"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["output_version"]["command"] == "cairn diff", doc["output_version"]
lines = []
for c in doc["changes"]:
    assert set(c) == {"change", "type", "path", "ctime", "link_delta"} | ({"new_path"} if c["change"] == "R" else set()), c
    row = "%20s\t%s\t%s\t%s" % (c["ctime"], c["change"], c["type"], c["path"])
    if c["change"] == "R":
        row += " -> " + c["new_path"]
    if c["link_delta"] != "0":
        row += "\t(%+d)" % int(c["link_delta"])
    lines.append(row)
text = open(sys.argv[2], encoding="ascii").read().splitlines()
assert lines == text, (lines, text)
assert len(lines) > 10, lines
PY
done
cairn diff -j -h ds@2 ds@4j >"$TESTDIR/diff.json" || fail "diff -j -h"
python3 - "$TESTDIR/diff.json" "$S" <<'PY' || fail "diff -j -h names"
import json, sys
S = sys.argv[2]
paths = sorted(c["path"] for c in json.load(open(sys.argv[1]))["changes"] if c["change"] == "+")
want = sorted([S + "/sp ace", S + "/back\\slash", S + "/tab\there", S + "/caf\u00e9", S + "/bad\ufffd"])
assert paths == want, (paths, want)
PY
cairn diff -j --json-int ds@1 ds@2 >"$TESTDIR/diff.json" || fail "diff -j --json-int"
python3 - "$TESTDIR/diff.json" <<'PY' || fail "diff --json-int numbers"
import json, sys
ch = json.load(open(sys.argv[1]))["changes"]
assert all(isinstance(c["ctime"], float) and isinstance(c["link_delta"], int) for c in ch), ch
assert [c["link_delta"] for c in ch if c["link_delta"]] == [1], ch
PY
out=$(cairn diff -j ds@2 ds@2) || fail "diff -j of a snapshot with itself"
[ "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["changes"])')" = "[]" ] || fail "empty diff -j: $out"
out=$(cairn diff -p -F ds@1 ds@2) || fail "diff -p"
[ "$out" = "$(cairn diff -F ds@1 ds@2)" ] || fail "diff -p changed the output"
fails_with 2 "--json-int needs -j" cairn diff --json-int ds@1 ds@2
out=$(cairn diff -j ds@nope ds@1 2>/dev/null); [ -z "$out" ] || fail "a failed diff -j printed: $out"
rm "$S/bad$(printf '\377')"

# Against the live source (the dataset as second argument, or none).
sleep 0.01
echo changed >>"$S/new"
touch "$S/added"
out=$(cairn diff ds@4 ds) || fail "live diff"
exp=$(cat <<EOF
M	$S/
+	$S/added
M	$S/new
EOF
)
[ "$out" = "$exp" ] || { fail "live diff"; diff <(echo "$exp") <(echo "$out") >&2; }
out2=$(cairn diff ds@4) || fail "live diff, one argument"
[ "$out" = "$out2" ] || fail "one-argument diff differs from 'diff ds@4 ds'"

# Second names of a symlink and a FIFO read the same in a snapshot and live.
ln -P "$S/sym" "$S/sym2" && ln "$S/fifo" "$S/fifo2" || fail "cannot hardlink a symlink or FIFO"
past_racy_tick
ok cairn snapshot ds@5
out=$(cairn diff ds@5 ds) || fail "live diff after hardlinking a symlink"
[ -z "$out" ] || fail "live diff of an unchanged tree with a hardlinked symlink: $out"
# New first names (sorting before the old ones) of the same symlink and FIFO:
# each object changed (+1), reported once with its own type.
ln -P "$S/sym" "$S/0sym" && ln "$S/fifo" "$S/0fifo" || fail "cannot hardlink a symlink or FIFO"
past_racy_tick
ok cairn snapshot ds@6
out=$(cairn diff -F ds@5 ds@6) || fail "diff after new first names"
exp=$(printf 'M\t/\t%s/\nM\t|\t%s/fifo\t(+1)\nM\t@\t%s/sym\t(+1)' "$S" "$S" "$S")
[ "$out" = "$exp" ] || { fail "diff -F of new first names"; diff <(echo "$exp") <(echo "$out") >&2; }
out=$(cairn diff -F ds@6 ds) || fail "live diff after new first names"
[ -z "$out" ] || fail "live diff of an unchanged tree with new first names: $out"
# A directory rename moves a symlink's first name without changing it: only
# the directory is listed.
mkdir "$S/lz" && ln -s tgt "$S/lsym" && ln -P "$S/lsym" "$S/lz/lsym2" || fail "setup lz"
past_racy_tick
ok cairn snapshot ds@7
mv "$S/lz" "$S/la"
past_racy_tick
ok cairn snapshot ds@8
for to in ds@8 ds; do
	out=$(cairn diff -F ds@7 $to) || fail "diff after renaming lz"
	exp=$(printf 'M\t/\t%s/\nR\t/\t%s/lz -> %s/la' "$S" "$S" "$S")
	[ "$out" = "$exp" ] || { fail "diff -F ds@7 $to after renaming lz"; diff <(echo "$exp") <(echo "$out") >&2; }
done

# Errors name the object and the cause; nothing is printed on stdout.
ok cairn create -o source="$S" other
ok cairn snapshot other@1
fails_with 1 "ds@2: not an earlier snapshot than ds@1" cairn diff ds@2 ds@1
fails_with 1 "other@1: not a snapshot of ds" cairn diff other@1 ds@2
fails_with 1 "ds@nope: snapshot does not exist" cairn diff ds@nope ds@1
fails_with 1 "ds: the first argument must be a snapshot" cairn diff ds ds@1
fails_with 2 "expected a snapshot" cairn diff
fails_with 2 "too many arguments" cairn diff ds@1 ds@2 ds@3
truncate -s 1M "$TESTDIR/vol.img"
ok cairn create -V -o source="$TESTDIR/vol.img" vol 2>/dev/null || ok cairn create -o source="$TESTDIR/vol.img" -V vol
ok cairn snapshot vol@1
fails_with 1 "vol@1: not a filesystem dataset" cairn diff vol@1 vol@1
ok cairn create -o source=none empty
ok cairn snapshot empty@1
fails_with 1 "empty: has no source" cairn diff empty@1
cairn diff --help | grep -q 'usage: cairn diff' || fail "diff --help"

# An encrypted dataset: diff reads its trees with the loaded key, and
# refuses, naming the key, without it.
E=$TESTDIR/esrc
mkdir -p "$E"
echo one >"$E/a"
printf 'correct horse battery staple\n' >"$TESTDIR/key"
ok cairn create -o encryption=aes-256-gcm -o keyformat=passphrase -o keylocation="file://$TESTDIR/key" -o source="$E" enc
ok cairn snapshot enc@1
echo two >"$E/b"
ok cairn snapshot enc@2
out=$(cairn diff enc@1 enc@2) || fail "diff of an encrypted dataset"
[ "$out" = "$(printf 'M\t%s/\n+\t%s/b' "$E" "$E")" ] || fail "encrypted diff: $out"
ok cairn unload-key enc
mv "$TESTDIR/key" "$TESTDIR/key.away"
fails_with 1 "enc: keylocation" cairn diff enc@1 enc@2

done_test
