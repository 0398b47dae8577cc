#!/bin/bash
# GC racing backups on S3: in each round a snapshot's chunks become garbage
# (snapshot destroyed, markers made old), then a new backup of the same data
# (which reuses exactly those chunks) runs at the same time as gc with
# cutoff 0.  Whatever the interleaving, the new snapshot must verify and
# restore: the sweep keeps objects with a marker or an upload intent, and a
# backup that finds a marker gone uploads the chunk again.  At least 30
# rounds (CAIRN_LONG=1: 100); the race must have happened: backup and gc
# overlapped in time, and the sweep removed objects while a backup ran.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
for i in $(seq 30); do head -c $((RANDOM * 4 + 1000)) /dev/urandom >"$SRC/f$i"; done
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn config gc_atime_cutoff=0
rounds=${CAIRN_LONG:+100}
rounds=${rounds:-30}
overlap=0 raced=0
# The bucket sweep pauses 1.5 s between its listing and its delete: the
# window in which a backup that found a marker gone uploads the chunk again.
export CAIRN_TEST_SWEEP_DELAY_US=20000 CAIRN_TEST_BUCKET_SWEEP_DELAY_US=1500000
for r in $(seq "$rounds"); do
	echo "round $r" >>"$SRC/f$((r % 30 + 1))"
	ok cairn snapshot "tank@a$r" >/dev/null
	ok cairn destroy "tank@a$r"
	find "$CAIRN_STORE/.chunks" -type f -exec touch -a -d '2001-01-01' {} +
	: >"$TESTDIR/gcstats"
	(
		sleep "0.$((RANDOM % 4))"
		s=$(date +%s%N)
		CAIRN_BACKEND_STATS="$TESTDIR/gcstats" "$CAIRN" gc >/dev/null 2>"$TESTDIR/gcerr"
		echo "$? $s $(date +%s%N)" >"$TESTDIR/gcrun"
	) &
	gcp=$!
	sleep "$((RANDOM % 2)).$((RANDOM % 10))"
	s=$(date +%s%N)
	: >"$TESTDIR/snapstats"
	CAIRN_BACKEND_STATS="$TESTDIR/snapstats" cairn snapshot "tank@b$r" >/dev/null 2>"$TESTDIR/snaperr" ||
		fail "round $r: snapshot: $(cat "$TESTDIR/snaperr")"
	e=$(date +%s%N)
	wait $gcp
	read -r grc gs ge <"$TESTDIR/gcrun"
	[ "$grc" = 0 ] || fail "round $r: gc: $(cat "$TESTDIR/gcerr")"
	if [ "$gs" -lt "$e" ] && [ "$s" -lt "$ge" ]; then
		overlap=$((overlap + 1))
		rm_=$(tr ' ' '\n' <"$TESTDIR/gcstats" | sed -n 's/^sweep_removed=//p' | tail -1)
		up=$(tr ' ' '\n' <"$TESTDIR/snapstats" | sed -n 's/^put=//p' | tail -1)
		# the sweep deleted objects while the backup re-uploaded chunks
		[ "${rm_:-0}" -gt 0 ] && [ "${up:-0}" -gt 2 ] && raced=$((raced + 1))
	fi
	ok cairn verify >/dev/null
	ok cairn destroy "tank@b$r"
done
rm -rf "$TESTDIR/r"
ok cairn snapshot tank@last >/dev/null
ok cairn restore tank@last "$TESTDIR/r" >/dev/null
same_tree "$SRC" "$TESTDIR/r"
echo "$rounds rounds, $overlap overlapping, $raced with objects deleted while the backup re-uploaded"
[ "$overlap" -ge $((rounds / 3)) ] || fail "backup and gc overlapped in only $overlap rounds"
[ "$raced" -ge 3 ] || fail "only $raced rounds deleted objects while a backup re-uploaded"
done_test
