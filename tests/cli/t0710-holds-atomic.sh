#!/bin/bash
# Batches of 1000 holds and releases: one bad item anywhere in the list
# applies nothing and is the only item named; a good batch is one
# transaction.  The catalog's WAL stays bounded over a series of large
# hold/release commands.  And the sync count: holding and releasing 1, 100
# and 10,000 snapshots costs the same number of fsync/fdatasync/syncfs calls.
. "$(dirname "$0")/lib.sh"
new_store
DB=$CAIRN_STORE/catalog.db
SRC=$TESTDIR/src
mkdir -p "$SRC"
echo p >"$SRC/f"
ok cairn create -o source="$SRC" p
for i in 0 1 2 3 4 5 6 7 8 9; do
	mkdir "$SRC/c$i" && echo "$i" >"$SRC/c$i/f"
	ok cairn create "p/c$i"
done
# 100 recursive snapshots of 11 datasets: 1100 real snapshots
for i in $(seq -w 1 100); do
	cairn snapshot -r "p@s$i" || fail "snapshot -r p@s$i"
done
mapfile -t all < <(cairn list -H -o name -t snapshot -r p)
[ ${#all[@]} = 1100 ] || fail "expected 1100 snapshots, have ${#all[@]}"
list=("${all[@]:0:1000}")

txg() { sqlite3 "$DB" "SELECT value FROM meta WHERE key='txg'"; }
nholds() { sqlite3 "$DB" "SELECT COUNT(*) FROM hold${1:+ WHERE tag='$1'}"; }
state() {
	cairn list -t all -H -p -o name,userrefs,defer_destroy
	sqlite3 "$DB" "SELECT snapshot, tag FROM hold ORDER BY 1, 2; SELECT value FROM meta WHERE key='txg'"
}
# batch_refused BAD_NAME CMD...: exit 1, the one bad item named (and no
# other), and the store is unchanged.
batch_refused() {
	local bad=$1 before err n
	shift
	before=$(state)
	err=$("$@" 2>&1 >/dev/null)
	[ $? = 1 ] || fail "expected exit 1: ${*:1:3} ..."
	echo "$err" | grep -qF "$bad" || fail "bad item $bad not named: $(echo "$err" | head -3)"
	n=$(echo "$err" | grep -c "^cairn: [a-z]*: [^ ]*[@#][^ ]*: ")
	[ "$n" = 1 ] || fail "expected exactly one item reported, got $n: $(echo "$err" | head -3)"
	[ "$(state)" = "$before" ] || fail "a refused batch changed the store: ${*:1:3} ..."
}

# ---- one bad item in 1000 ----
# a missing snapshot in the middle
batch_refused p/c3@nosuch cairn hold t "${list[@]:0:500}" p/c3@nosuch "${list[@]:500:499}"
[ "$(nholds)" = 0 ] || fail "holds applied by a refused batch"
# a missing dataset first
batch_refused nosuch/x@s001 cairn hold t nosuch/x@s001 "${list[@]:1}"
# a tag already present, last in the list
ok cairn hold t "${list[999]}"
batch_refused "${list[999]}" cairn hold t "${list[@]}"
[ "$(nholds)" = 1 ] || fail "refused batch left $(nholds) holds"
# an item that is not a snapshot (a bookmark) in the middle
ok cairn bookmark p/c5@s050 p/c5#bm
batch_refused p/c5#bm cairn hold t "${list[@]:0:700}" p/c5#bm "${list[@]:700:299}"
# the summary counts 1000 items
err=$(cairn hold t "${list[@]:0:999}" p@nosuch 2>&1 >/dev/null)
echo "$err" | grep -q "nothing was changed (1 of 1000 items failed)" || fail "summary: $(echo "$err" | tail -1)"

# ---- the good batch: one transaction ----
t0=$(txg)
ok cairn hold t "${list[@]:0:999}"
[ "$(txg)" = $((t0 + 1)) ] || fail "hold of 999 took $(($(txg) - t0)) transactions"
[ "$(nholds t)" = 1000 ] || fail "expected 1000 holds, have $(nholds t)"
[ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM snapshot WHERE userrefs = 1")" = 1000 ] || fail "userrefs"

# release: one tag not there (on a snapshot outside the 1000) refuses all
batch_refused "${all[1050]}" cairn release t "${list[@]:0:400}" "${all[1050]}" "${list[@]:400}"
[ "$(nholds t)" = 1000 ] || fail "partial release"
batch_refused p@nosuch cairn release t "${list[@]}" p@nosuch
t0=$(txg)
ok cairn release t "${list[@]}"
[ "$(txg)" = $((t0 + 1)) ] || fail "release of 1000 took $(($(txg) - t0)) transactions"
[ "$(nholds)" = 0 ] || fail "holds left after release"

# ---- -r: 100 names x 11 datasets in one command ----
names=()
for i in $(seq -w 1 100); do names+=("p@s$i"); done
batch_refused p@s999 cairn hold -r r "${names[@]:0:50}" p@s999 "${names[@]:50}"
[ "$(nholds)" = 0 ] || fail "hold -r with a bad name applied holds"
t0=$(txg)
ok cairn hold -r r "${names[@]}"
[ "$(txg)" = $((t0 + 1)) ] || fail "hold -r of 1100 is not one transaction"
[ "$(nholds r)" = 1100 ] || fail "hold -r made $(nholds r) holds"
ok cairn release -r r "${names[@]}"
[ "$(nholds)" = 0 ] || fail "release -r left holds"

# ---- 10,010 snapshots ----
# 8910 more snapshot rows (810 names x 11 datasets), copies of each
# dataset's s001 with their own guid and createtxg: 10,010 in all.
sqlite3 "$DB" "
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 810)
INSERT INTO snapshot(dataset, name, guid, createtxg, creation, referenced,
		     logicalreferenced, written, used)
SELECT s.dataset, printf('x%03d', n.i), abs(random()) + 1,
       (SELECT value FROM meta WHERE key='txg') + n.i, s.creation, s.referenced,
       s.logicalreferenced, 0, s.used
FROM snapshot s, n WHERE s.name = 's001';
INSERT INTO snapdata SELECT c.id, d.tree, d.idx FROM snapshot c
JOIN snapshot o ON o.dataset = c.dataset AND o.name = 's001'
JOIN snapdata d ON d.snapshot = o.id WHERE c.name LIKE 'x%';
UPDATE meta SET value = value + 811 WHERE key = 'txg';
COMMIT;" || fail "inserting snapshot rows"
mapfile -t big < <(cairn list -H -o name -t snapshot -r p)
[ ${#big[@]} = 10010 ] || fail "expected 10010 snapshots, have ${#big[@]}"

# ---- the WAL stays bounded over a series of cairn commands ----
# Each cairn process opens the catalog afresh and re-reads the whole WAL
# into a new wal-index, so a WAL that is never reset makes every later
# command (hold, release, list...) cost more and more.  With SQLite's
# auto-checkpoint at 1000 pages the WAL restarts once checkpointed: it
# cannot grow far past 1000 pages plus one transaction.  Only cairn touches
# the store here (the sqlite3 shell would checkpoint it on close).
psize=$(sqlite3 "$DB" "PRAGMA page_size")
# Ten rounds; three in a sanitizer build, where each of these 10,010-snapshot
# commands costs about half a minute (still six commands, past one
# auto-checkpoint's worth of pages).
rounds=10
[ "${CAIRN_ASAN:-}" = 1 ] && rounds=3
for k in $(seq 1 $rounds); do
	"$CAIRN" hold wal "${big[@]}" || fail "hold of 10,010 (round $k)"
	"$CAIRN" release wal "${big[@]}" || fail "release of 10,010 (round $k)"
done
wal=$(stat -c %s "$DB-wal" 2>/dev/null || echo 0)
echo "WAL after $((2 * rounds)) commands: $wal bytes (page size $psize)"
[ "$wal" -le $((2000 * psize)) ] ||
	fail "the WAL grows without bound: $wal bytes after $((2 * rounds)) hold/release commands (> 2000 pages)"

# ---- sync counts at 1, 100 and 10,000 snapshots ----
# LeakSanitizer cannot run under ptrace: in a sanitizer build (CAIRN_ASAN=1)
# the commands counted under strace run with leak detection off; ASan and
# UBSan still check them.
traced() {
	if [ "${CAIRN_ASAN:-}" = 1 ]; then
		ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace "$@"
	else
		strace "$@"
	fi
}
if ! command -v strace >/dev/null || ! strace -f -c -o /dev/null true 2>/dev/null; then
	echo "needs strace (and ptrace permission) for the sync counts; scripts/deps.sh installs it"
	[ $fails -gt 0 ] && done_test
	exit 77
fi
# Each measured command starts from an empty WAL: the checkpoint here, and
# the sqlite3 checks between commands (the shell checkpoints on close).
sqlite3 "$DB" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
# syncs CMD...: the number of fsync/fdatasync/syncfs calls CMD makes.
syncs() {
	local f=$TESTDIR/strace.out
	traced -f -c -o "$f" -e trace=fsync,fdatasync,syncfs "$@" >/dev/null ||
		fail "failed under strace: ${*:1:3} ..."
	awk '$NF == "total" { print $4 }' "$f"
}
declare -A counts
for n in 1 100 10000; do
	counts[hold$n]=$(syncs "$CAIRN" hold "sync$n" "${big[@]:0:n}")
	[ "$(nholds "sync$n")" = "$n" ] || fail "hold of $n made $(nholds "sync$n") holds"
	counts[release$n]=$(syncs "$CAIRN" release "sync$n" "${big[@]:0:n}")
	[ "$(nholds)" = 0 ] || fail "release of $n left holds"
done
echo "sync calls: hold 1/100/10000: ${counts[hold1]}/${counts[hold100]}/${counts[hold10000]};" \
	"release: ${counts[release1]}/${counts[release100]}/${counts[release10000]}"
ref=${counts[hold1]}
[ -n "$ref" ] && [ "$ref" -gt 0 ] || fail "no sync calls counted for a hold (strace?)"
[ "${ref:-0}" -le 8 ] || fail "a single hold costs $ref syncs"
for k in "${!counts[@]}"; do
	[ "${counts[$k]}" = "$ref" ] || fail "$k costs ${counts[$k]} syncs, hold1 costs $ref"
done

# ---- -r expands without a per-snapshot cost ----
# hold -r of 100 names over 11 datasets against the same 1100 snapshots
# named explicitly.  Every SQLite read transaction takes and drops its
# locks with fcntl; expanding may cost a query per name given, not one per
# (name, dataset) pair.
locks() {
	local f=$TESTDIR/strace.out
	traced -f -c -o "$f" -e trace=fcntl "$@" >/dev/null || fail "failed under strace: ${*:1:3} ..."
	awk '$NF == "total" { print $4 }' "$f"
}
lr=$(locks "$CAIRN" hold -r lk "${names[@]}")
[ "$(nholds lk)" = 1100 ] || fail "hold -r made $(nholds lk) holds"
ok cairn release -r lk "${names[@]}"
ll=$(locks "$CAIRN" hold lk "${all[@]}")
[ "$(nholds lk)" = 1100 ] || fail "hold of 1100 made $(nholds lk) holds"
ok cairn release lk "${all[@]}"
echo "fcntl calls: hold -r of 100 names (1100 snapshots): $lr; hold of 1100 names: $ll"
[ "$lr" -le $((ll + 8 * 100 + 50)) ] ||
	fail "hold -r costs $lr lock calls for 100 names, the explicit list $ll: a read transaction per (name, dataset)"

done_test
