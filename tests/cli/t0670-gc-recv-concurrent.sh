#!/bin/bash
# tier: stress
# GC on the receiving store while receives and syncs run into it: no
# received snapshot may ever lose a chunk.
#
# Store A backs up a changing source; store B replicates it.  gc_atime_cutoff
# is 0 on B, so its GC removes every chunk it did not see in use.  Each round
# B prunes its copy to the newest snapshot (the content of the round before
# last becomes garbage still on disk) and A's source gets exactly that
# content back, so the round's stream carries chunks that B's GC is about to
# remove: recv must deduplicate against them safely (writer registry, touch,
# sweep's rename-and-recheck).  The transfer is `send -i | recv` or `sync`,
# by turns; the GC starts before or after it with random delays, and half
# the GCs pause inside sweep's removal window.  The delays are sized to the
# runs they straddle (a transfer takes some 20-60 ms here, a GC 80-400 ms),
# so that most rounds overlap: with delays of up to 400 ms, only 15 of 65
# rounds overlapped in one CI run and the coverage check below failed.
# After each round B verifies; every few rounds and at the end, B's
# snapshots restore to the manifest the source had when A took them.
#
# The test asserts its own coverage: at least 3 rounds, and a quarter of
# them, must have had GC's run and the transfer's run overlapping in time,
# and GC must have removed chunks in some of those rounds.
# DURATION (seconds, default 30) bounds the rounds.
. "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-30}
A=$TESTDIR/a
B=$TESTDIR/b
ca() { "$CAIRN" -s "$A" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca init >/dev/null
ok cb init >/dev/null
ok cb config gc_atime_cutoff=0
SRC=$TESTDIR/src
MAN=$TESTDIR/man
mkdir -p "$SRC" "$MAN"
cp -a /usr/include/linux/[a-h]*.h "$SRC/"
for i in 0 1 2; do head -c $((200000 + RANDOM * 10)) /dev/urandom >"$SRC/big$i.bin"; done
ok ca create -o source="$SRC" -o chunksize=64K ta

ok ca snapshot ta@r0
manifest "$SRC" >"$MAN/ta@r0"
ca send ta@r0 | cb recv ta || fail "first receive"
start=$(date +%s)
round=0 overlaps=0 removed_overlap=0 syncs=0 m0=$((RANDOM % 2))
while [ $(($(date +%s) - start)) -lt "$DURATION" ]; do
	round=$((round + 1))
	prev=r$((round - 1))
	# B's garbage: the round before last's content, which A gets back now.
	ok cb prune --keep-last 1 ta >/dev/null
	head -c $((1500000 + RANDOM)) /dev/urandom >"$SRC/fresh.bin"
	cp "$SRC/fresh.bin" "$TESTDIR/fresh.$round"
	[ -e "$TESTDIR/fresh.$((round - 2))" ] && cp "$TESTDIR/fresh.$((round - 2))" "$SRC/swap.bin"
	rm -f "$TESTDIR/fresh.$((round - 3))"
	f=$(find "$SRC" -name '*.h' | shuf -n 1)
	echo "/* $round */" >>"$f"
	ok ca snapshot "ta@r$round"
	manifest "$SRC" >"$MAN/ta@r$round"
	# A keeps its history short too (sync needs the common base only).
	ok ca prune --keep-last 2 ta >/dev/null
	mode=$(((round + m0) % 2)) # alternate, from a random start
	gcfirst=$((RANDOM % 2))
	(
		[ $gcfirst = 1 ] && sleep_ms $((RANDOM % 150))
		date +%s%N >"$TESTDIR/t.x"
		if [ $mode = 0 ]; then
			ca send -i "@$prev" "ta@r$round" | cb recv ta
		else
			"$CAIRN" sync "$A:ta" "$B:ta"
		fi >"$TESTDIR/x.out" 2>&1 && echo ok >"$TESTDIR/st.$round"
		date +%s%N >>"$TESTDIR/t.x"
	) &
	px=$!
	(
		[ $((RANDOM % 2)) = 0 ] && export CAIRN_TEST_SWEEP_DELAY_US=$((5000 + RANDOM % 20000))
		[ $gcfirst = 0 ] && sleep_ms $((RANDOM % 40))
		date +%s%N >"$TESTDIR/t.g"
		"$CAIRN" -s "$B" gc -j >"$TESTDIR/gc.out" 2>&1 || exit 1
		date +%s%N >>"$TESTDIR/t.g"
	) &
	pg=$!
	wait $px
	wait $pg || fail "round $round: gc failed: $(cat "$TESTDIR/gc.out")"
	[ -e "$TESTDIR/st.$round" ] || {
		fail "round $round: transfer (mode $mode) failed: $(cat "$TESTDIR/x.out")"
		break
	}
	[ $mode = 1 ] && syncs=$((syncs + 1))
	if overlapped "$TESTDIR/t.g" "$TESTDIR/t.x"; then
		overlaps=$((overlaps + 1))
		grep -qE '"removed_chunks":[1-9]' "$TESTDIR/gc.out" && removed_overlap=$((removed_overlap + 1))
	fi
	out=$(cb verify 2>&1) || {
		fail "round $round: verify of B failed after GC during a receive"
		echo "$out" | head -5 >&2
		break
	}
	if [ $((round % 4)) = 0 ]; then
		rm -rf "$TESTDIR/r"
		ok cb restore "ta@r$round" "$TESTDIR/r"
		[ "$(manifest "$TESTDIR/r")" = "$(cat "$MAN/ta@r$round")" ] || fail "round $round: content"
	fi
done
ok cb gc >/dev/null
ok cb verify >/dev/null
for s in $(cb list -H -o name -t snapshot); do
	rm -rf "$TESTDIR/r"
	ok cb restore "$s" "$TESTDIR/r"
	[ "$(manifest "$TESTDIR/r")" = "$(cat "$MAN/$s")" ] || fail "$s content at the end"
done
echo "$round rounds ($syncs by sync), $overlaps with GC and the transfer overlapping, $removed_overlap of them removing chunks"
[ $overlaps -ge 3 ] && [ $((overlaps * 4)) -ge $round ] ||
	fail "GC overlapped a transfer in only $overlaps of $round rounds (want >= 3 and >= a quarter)"
[ $removed_overlap -ge 1 ] || fail "no overlapping GC removed a chunk: the race was not exercised"
[ $syncs -ge 1 ] && [ $syncs -lt $round ] || fail "rounds by sync: $syncs of $round (want both kinds)"
done_test
