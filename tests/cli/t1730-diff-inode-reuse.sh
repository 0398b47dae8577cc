#!/bin/bash
# cairn diff tells an inode number the filesystem handed out again from a
# rename, as zfs diff does by the object's generation: a removed file whose
# number a new file got is "-" and "+", not "R"; the same number again at
# the same path is "-" and "+", not "M"; a real rename is still "R".  Between
# two snapshots and between a snapshot and the live source.
. "$(dirname "$0")/lib.sh"
new_store

# reuse DIR OLDINO NAME: creates files in DIR until one gets inode number
# OLDINO (a number just freed), renames it to NAME and removes the others.
# Fails (returns 1) if the filesystem does not hand the number out again.
reuse() {
	local d=$1 want=$2 name=$3 i got=
	for i in $(seq 1 2000); do
		: >"$d/.cand.$i"
		if [ "$(stat -c %i "$d/.cand.$i")" = "$want" ]; then
			got=$i
			break
		fi
	done
	[ -n "$got" ] && mv "$d/.cand.$got" "$d/$name"
	rm -f "$d"/.cand.*
	[ -n "$got" ]
}

# A filesystem that reuses a freed inode number right away (ext4, xfs...):
# $TESTDIR is tmpfs when there is one, whose numbers only grow.
SRCFS=
for d in "$TESTDIR" "${CAIRN_REUSE_TMP:-/var/tmp}" /tmp; do
	if [ "$d" != "$TESTDIR" ]; then
		d=$(mktemp -d "$d/cairn-reuse.XXXXXX") || continue
		XATTR_DIRS="$XATTR_DIRS $d" # removed on exit with lib.sh's own
	fi
	: >"$d/.probe"
	ino=$(stat -c %i "$d/.probe")
	rm -f "$d/.probe"
	if reuse "$d" "$ino" .probe2; then
		rm -f "$d/.probe2"
		SRCFS=$d
		break
	fi
done
[ -n "$SRCFS" ] || { echo "no filesystem here reuses a freed inode number"; exit 77; }

S=$SRCFS/src
mkdir -p "$S/dir"
echo old >"$S/gone"
echo keep >"$S/keep"
echo same >"$S/same"
echo in >"$S/dir/in"
ok cairn create -o source="$S" t
ok cairn snapshot t@1
sleep 0.01 # distinct ctimes

# gone's number goes to fresh; same's number comes back at same; keep is
# renamed; dir goes, and dir/in's number goes to a new file.
ino_gone=$(stat -c %i "$S/gone")
rm "$S/gone"
reuse "$S" "$ino_gone" fresh || fail "inode $ino_gone (gone) was not reused"
[ "$(stat -c %i "$S/fresh")" = "$ino_gone" ] || fail "fresh did not get gone's inode"
ino_same=$(stat -c %i "$S/same")
rm "$S/same"
reuse "$S" "$ino_same" same || fail "inode $ino_same (same) was not reused"
echo new >"$S/same"
ino_in=$(stat -c %i "$S/dir/in")
rm -r "$S/dir"
reuse "$S" "$ino_in" file || fail "inode $ino_in (dir/in) was not reused"
mv "$S/keep" "$S/keep2"
ok cairn snapshot t@2

out=$(cairn diff t@1 t@2) || fail "diff exited $?"
exp=$(cat <<EOF
M	$S/
-	$S/dir
-	$S/dir/in
+	$S/file
+	$S/fresh
-	$S/gone
R	$S/keep -> $S/keep2
-	$S/same
+	$S/same
EOF
)
[ "$out" = "$exp" ] || { fail "diff t@1 t@2"; diff <(echo "$exp") <(echo "$out") >&2; }

# The live source against t@2: fresh's number goes to fresh2, keep2 is
# renamed again.
sleep 0.01
ino_fresh=$(stat -c %i "$S/fresh")
rm "$S/fresh"
reuse "$S" "$ino_fresh" fresh2 || fail "inode $ino_fresh (fresh) was not reused"
mv "$S/keep2" "$S/keep3"
out=$(cairn diff t@2 t) || fail "live diff exited $?"
exp=$(cat <<EOF
M	$S/
-	$S/fresh
+	$S/fresh2
R	$S/keep2 -> $S/keep3
EOF
)
[ "$out" = "$exp" ] || { fail "diff t@2 t (live)"; diff <(echo "$exp") <(echo "$out") >&2; }

# A snapshot of that carries unchanged objects' birth times: t@2 to t@3
# says what the live diff said, and t@3 against the source says nothing.
ok cairn snapshot t@3
out2=$(cairn diff t@2 t@3) || fail "diff t@2 t@3 exited $?"
[ "$out2" = "$exp" ] || { fail "diff t@2 t@3"; diff <(echo "$exp") <(echo "$out2") >&2; }
out=$(cairn diff t@3 t) || fail "diff t@3 t exited $?"
[ -z "$out" ] || fail "diff t@3 t: expected nothing, got: $out"

done_test
