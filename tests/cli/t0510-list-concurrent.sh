#!/bin/bash
# `cairn list` while other processes create, rename and destroy snapshots
# of the same datasets.  Each listing runs with batch size 1..3 and a 1 us
# budget, so it spans hundreds of read transactions with writers
# committing in between.  For every listing: it succeeds, no snapshot comes
# twice (by name or by guid), every "stable" snapshot (one that existed
# before the listing began and that no writer ever touches) comes exactly
# once, and each dataset's snapshots come in createtxg order.
# CAIRN_LIST_SECS (default 12) is how long the writers run.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
T0=$(date +%s)
new_store
DB=$CAIRN_STORE/catalog.db
SRC=$TESTDIR/src
mkdir -p "$SRC/d1" "$SRC/d2" "$SRC/d3"
for d in d1 d2 d3; do echo "$d" >"$SRC/$d/f"; done
ok cairn create -o source="$SRC" c
for d in d1 d2 d3; do ok cairn create "c/$d"; done
ok cairn snapshot -r c@stable_seed
# 150 more stable snapshots per dataset, copied in SQL (with their data,
# so that nothing about them differs from real ones)
sqlite3 -cmd ".timeout 60000" "$DB" "
BEGIN IMMEDIATE;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 150)
INSERT INTO snapshot(dataset, name, guid, createtxg, creation, referenced, logicalreferenced,
	written, used, userrefs, defer_destroy)
 SELECT s.dataset, printf('stable_pre%03d', i), (abs(random()) % 9000000000000000000) + 1,
	(SELECT value FROM meta WHERE key = 'txg') + i, s.creation, s.referenced,
	s.logicalreferenced, 0, 0, 0, 0
 FROM n, snapshot s WHERE s.name = 'stable_seed';
INSERT INTO snapdata SELECT s.id, d.tree, d.idx FROM snapshot s
 JOIN snapshot t ON t.dataset = s.dataset AND t.name = 'stable_seed'
 JOIN snapdata d ON d.snapshot = t.id WHERE s.name LIKE 'stable_pre%';
UPDATE meta SET value = value + 150 WHERE key = 'txg';
COMMIT;" || fail "sqlite3 seed"

SECS=${CAIRN_LIST_SECS:-12}
END=$(($(date +%s) + SECS))
WERR=$TESTDIR/writer-errors
: >"$WERR"

# w CMD...: a writer's command; failures are logged (writers never reuse
# a name, so none should fail).
w() {
	"$CAIRN" "$@" >/dev/null 2>>"$WERR.$BASHPID" || echo "writer failed (exit $?): $*" >>"$WERR.$BASHPID"
}

# One writer per dataset: new snapshots, renamed and destroyed at once or
# later, and now and then a new stable one (never touched again).
# Writers and listings go on past END until 5 listings ran (a loaded
# machine runs fewer), so the coverage check below holds.
writer() {
	local ds=$1 tag=$2 i=0 pending=()
	while [ "$(date +%s)" -lt "$END" ] || [ ! -e "$TESTDIR/enough" ]; do
		i=$((i + 1))
		w snapshot "$ds@w${tag}_$i"
		case $((i % 4)) in
		0) w rename "$ds@w${tag}_$i" "$ds@r${tag}_$i"; pending+=("$ds@r${tag}_$i") ;;
		1) w destroy "$ds@w${tag}_$i" ;;
		2) pending+=("$ds@w${tag}_$i") ;;
		3) w rename "$ds@w${tag}_$i" "x${tag}_$i"; w destroy "$ds@x${tag}_$i" ;;
		esac
		if [ ${#pending[@]} -ge 3 ]; then
			w rename "${pending[0]}" "${pending[0]}_moved"
			w destroy "${pending[1]}"
			pending=("${pending[@]:2}")
		fi
		[ $((i % 5)) = 0 ] && w snapshot "$ds@stable_${tag}_$i"
	done
}
# And one writer of recursive snapshots, renamed and destroyed recursively.
rwriter() {
	local i=0
	while [ "$(date +%s)" -lt "$END" ] || [ ! -e "$TESTDIR/enough" ]; do
		i=$((i + 1))
		w snapshot -r "c@rec$i"
		w rename -r "c@rec$i" "c@recmoved$i"
		[ $((i % 2)) = 0 ] && w destroy -r "c@recmoved$i"
		sleep 0.05
	done
}

pids=()
writer c/d1 a & pids+=($!)
writer c/d2 b & pids+=($!)
writer c/d3 c & pids+=($!)
rwriter & pids+=($!)

nlist=0 nrows=0 maxrows=0
check_listing() { # $1 listing, $2 stable names, $3 what
	awk -F'\t' -v what="$3" '
		FNR == NR { stable[$1] = 0; nstable++; next }
		{
			if ($1 in seen) { print what ": " $1 " listed twice"; bad = 1 }
			seen[$1] = 1
			if ($3 in guid) { print what ": guid " $3 " listed twice (" guid[$3] ", " $1 ")"; bad = 1 }
			guid[$3] = $1
			split($1, p, "@")
			if (p[1] == ds && $2 + 0 <= txg + 0) { print what ": " $1 " out of createtxg order"; bad = 1 }
			ds = p[1]; txg = $2
			if ($1 in stable) stable[$1]++
		}
		END {
			for (s in stable) if (stable[s] != 1) { print what ": stable " s " listed " stable[s] " times"; bad = 1 }
			if (nstable < 450) { print what ": only " nstable " stable snapshots"; bad = 1 }
			exit bad
		}' "$2" "$1" >&2
}

while [ "$(date +%s)" -lt "$END" ] || [ $nlist -lt 5 ]; do
	[ $nlist -ge 5 ] && touch "$TESTDIR/enough"
	nlist=$((nlist + 1))
	sqlite3 -cmd ".timeout 60000" "$DB" "SELECT d.name || '@' || s.name FROM snapshot s
		JOIN dataset d ON s.dataset = d.id WHERE s.name LIKE 'stable%'" >"$TESTDIR/stable" &&
		[ -s "$TESTDIR/stable" ] || { fail "sqlite3: cannot read the stable snapshots"; continue; }
	bs=$((1 + RANDOM % 3))
	ref=
	[ $((nlist % 4)) = 0 ] && ref=1 # the reference path holds the same guarantees
	CAIRN_LIST_REFERENCE=$ref CAIRN_LIST_BATCH_SIZE=$bs CAIRN_LIST_BATCH_TIME_US=1 \
		"$CAIRN" list -H -p -t snapshot -r -o name,createtxg,guid c >"$TESTDIR/out" 2>"$TESTDIR/err"
	rc=$?
	[ $rc = 0 ] || fail "listing $nlist (batch $bs${ref:+, reference}) exited $rc: $(head -c 300 "$TESTDIR/err")"
	[ -s "$TESTDIR/err" ] && fail "listing $nlist wrote to stderr: $(head -c 300 "$TESTDIR/err")"
	check_listing "$TESTDIR/out" "$TESTDIR/stable" "listing $nlist (batch $bs${ref:+, reference})" ||
		fail "listing $nlist is inconsistent"
	n=$(wc -l <"$TESTDIR/out")
	nrows=$((nrows + n))
	[ "$n" -gt "$maxrows" ] && maxrows=$n
	[ $fails -gt 10 ] && break
done
touch "$TESTDIR/enough"
wait "${pids[@]}"
cat "$WERR".* >>"$WERR" 2>/dev/null
if [ -s "$WERR" ]; then
	# Not the listing's fault, but a bug all the same: no writer reuses a
	# name, so every one of these commands should succeed.
	fail "$(grep -c 'writer failed' "$WERR") writer commands failed (concurrent snapshot/rename/destroy)"
	# their own messages first (a run here once showed only the commands)
	grep -v '^writer failed' "$WERR" | head -n 5 >&2
	grep '^writer failed' "$WERR" | head -n 5 >&2
fi
writes=$(sqlite3 -cmd ".timeout 60000" "$DB" "SELECT value FROM meta WHERE key = 'txg'")
echo "$nlist listings ($nrows rows, up to $maxrows per listing) against writers that reached txg $writes; $(($(date +%s) - T0)) s in all"
[ "$nlist" -ge 5 ] || fail "only $nlist listings ran"
done_test
