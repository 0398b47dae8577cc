#!/bin/bash
# The batched mark's knobs change speed, never results: the same store,
# copied with its atimes, collected with --order inode / digest / none,
# with the LRU off (--cache-capacity 0) or tiny, and with tiny batches,
# removes the same chunks and leaves the same chunks, and reports the same
# removed/pending/disk figures.  The dry run predicts exactly that too.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/d"
cp -a /usr/include/linux/[a-k]*.h "$SRC/d/"
for i in 0 1 2 3; do head -c 400000 /dev/urandom >"$SRC/big$i.bin"; done
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn create tank/d
for r in 1 2 3 4 5 6; do
	head -c 200000 /dev/urandom >"$SRC/big$((r % 4)).bin"
	echo "/* $r */" >>"$(find "$SRC/d" -name '*.h' | shuf -n 1)"
	cp "$SRC/big$(((r + 1) % 4)).bin" "$SRC/dup$r.bin"
	ok cairn snapshot -r tank@s$r
done
ok cairn destroy -r tank@s2
ok cairn destroy tank@s4
ok cairn destroy tank/d@s5
ok cairn config gc_atime_cutoff=0

chunkfiles() {
	find "$CAIRN_STORE/.chunks" -type f -printf '.chunks/%P\n' | sort
}
# Every variant starts from the same files with the same (old) atimes.
(cd "$CAIRN_STORE" && find .chunks -type f -print0 | tar --null -T - -cf "$TESTDIR/chunks.tar")
chunkfiles >"$TESTDIR/orig"
reset_store() {
	find "$CAIRN_STORE/.chunks" -type f -delete
	tar -C "$CAIRN_STORE" -xf "$TESTDIR/chunks.tar"
	find "$CAIRN_STORE/.chunks" -type f -exec touch -a -d '2001-01-01' {} +
}
variants=("--order inode" "--order digest" "--order none" "--cache-capacity 0"
	"--cache-capacity 0 --order none --batch 1" "--cache-capacity 5 --batch 7"
	"--order digest --batch 13 --cache-capacity 1" "--batch 3 --threads 1" "-n")
i=0
for v in "${variants[@]}"; do
	i=$((i + 1))
	reset_store
	# shellcheck disable=SC2086
	"$CAIRN" gc -v $v >"$TESTDIR/out$i" 2>&1 || fail "gc $v: $(cat "$TESTDIR/out$i")"
	sed -n 's,^\(would remove\|removed\) \(\.chunks/[^ ]*\) .*,\2,p' "$TESTDIR/out$i" | sort >"$TESTDIR/rm$i"
	# The same lines with each chunk's size, sorted: sweep order varies.
	sed -n 's,^\(would remove\|removed\) \(\.chunks/.*\),\2,p' "$TESTDIR/out$i" | sort >"$TESTDIR/rmsz$i"
	chunkfiles >"$TESTDIR/left$i"
	# Only the summary lines: the per-chunk lines come in sweep order, which
	# the threads make vary, and rm$i already compares them sorted.
	grep -E '^(removed|would remove|pending|on disk) ' "$TESTDIR/out$i" | grep -v ' \.chunks/' |
		sed 's/^would remove/removed/; s/  */ /g' >"$TESTDIR/fig$i"
	[ "$(wc -l <"$TESTDIR/fig$i")" = 3 ] || fail "gc $v: expected 3 summary lines, got: $(cat "$TESTDIR/fig$i")"
done
[ -s "$TESTDIR/rm1" ] || fail "nothing was collected"
for k in $(seq 2 $i); do
	cmp -s "$TESTDIR/rm1" "$TESTDIR/rm$k" || fail "${variants[k - 1]}: removed other chunks than ${variants[0]}"
	cmp -s "$TESTDIR/rmsz1" "$TESTDIR/rmsz$k" || fail "${variants[k - 1]}: other chunk sizes than ${variants[0]}"
	cmp -s "$TESTDIR/fig1" "$TESTDIR/fig$k" || {
		fail "${variants[k - 1]}: other figures"
		diff "$TESTDIR/fig1" "$TESTDIR/fig$k" >&2
	}
	[ "$k" = "$i" ] && continue # the dry run leaves everything
	cmp -s "$TESTDIR/left1" "$TESTDIR/left$k" || fail "${variants[k - 1]}: left other files"
done
cmp -s "$TESTDIR/left$i" "$TESTDIR/orig" || fail "the dry run changed files"
cmp -s "$TESTDIR/left1" <(comm -23 "$TESTDIR/orig" "$TESTDIR/rm1") || fail "left + removed != all"
echo "$(wc -l <"$TESTDIR/rm1") of $(wc -l <"$TESTDIR/orig") files removed alike by ${#variants[@]} variants"
ok cairn verify
done_test
