#!/bin/bash
# prune: PBS retention checked against hand-computed tables.  Buckets are
# local time (TZ), weeks are ISO weeks (%G-W%V), keep-last runs first, a
# bucket is filled by its newest snapshot, snapshots kept by an earlier rule
# pre-fill the later rules' buckets (without counting against them), and
# a snapshot an earlier rule marked for removal stays removed.  Held
# snapshots are kept ("kept because held") and fill no bucket.  -n -v shows
# the plan; the real run removes exactly the "remove" lines; one dataset's
# prune is one transaction; bad options change nothing.
#
# Creation times are set with SQL to chosen instants.  Every epoch below
# is written next to its UTC and Europe/Berlin local time.
. "$(dirname "$0")/lib.sh"
new_store
DB=$CAIRN_STORE/catalog.db
SRC=$TESTDIR/src
mkdir -p "$SRC/a" "$SRC/b"
echo x >"$SRC/f"
if [ -e /usr/share/zoneinfo/Europe/Berlin ]; then
	BERLIN=Europe/Berlin
else
	BERLIN='CET-1CEST,M3.5.0,M10.5.0/3' # the same rules, without tzdata
fi

txg() { sqlite3 "$DB" "SELECT value FROM meta WHERE key='txg'"; }
snaps() { cairn list -H -o name -t snapshot "$1" | tr '\n' ' ' | sed 's/ $//'; }
state() {
	cairn list -t all -H -p -o name,userrefs,creation
	sqlite3 "$DB" "SELECT value FROM meta WHERE key='txg'"
}

# mksnaps DATASET NAME=EPOCH...: a dataset with those snapshots, taken in
# the order given (so createtxg follows creation), creation set to EPOCH.
mksnaps() {
	local ds=$1 sql="" kv
	shift
	ok cairn create -o source="$SRC" "$ds"
	for kv in "$@"; do
		cairn snapshot "$ds@${kv%%=*}" || fail "snapshot $ds@${kv%%=*}"
		sql="$sql UPDATE snapshot SET creation=${kv#*=} WHERE name='${kv%%=*}'
			AND dataset=(SELECT id FROM dataset WHERE name='$ds');"
	done
	sqlite3 "$DB" "BEGIN; $sql COMMIT;" || fail "setting creation times of $ds"
}

# plan TZ ARGS... <<EXPECTED: the -n -v output is exactly EXPECTED, and the
# dry run changes nothing.
plan() {
	local tz=$1 before out want
	shift
	want=$(cat)
	before=$(state)
	out=$(TZ=$tz cairn prune -n -v "$@" 2>&1)
	[ $? = 0 ] || fail "prune -n $* failed: $out"
	[ "$out" = "$want" ] || {
		fail "prune -n -v $* (TZ=$tz):"
		diff <(echo "$want") <(echo "$out") | sed 's/^/    /' >&2
	}
	[ "$(state)" = "$before" ] || fail "prune -n $* changed the store"
}

# ---- fall DST, hourly: 2026-10-25 in Berlin, 03:00 CEST -> 02:00 CET ----
# local hour 02 happens twice and is ONE bucket in local time.
mksnaps fall \
	f0=1792884600 `# 2026-10-24 23:30 UTC = 10-25 01:30 CEST` \
	f1=1792887300 `# 2026-10-25 00:15 UTC = 02:15 CEST` \
	f2=1792889100 `# 2026-10-25 00:45 UTC = 02:45 CEST` \
	f3=1792890900 `# 2026-10-25 01:15 UTC = 02:15 CET` \
	f4=1792892700 `# 2026-10-25 01:45 UTC = 02:45 CET` \
	f5=1792894500 `# 2026-10-25 02:15 UTC = 03:15 CET`
# Berlin buckets: f5 [03], f4 f3 f2 f1 [02], f0 [01]
plan "$BERLIN" --keep-hourly 3 fall <<'EOF'
keep    fall@f5 (hourly 1)
keep    fall@f4 (hourly 2)
remove  fall@f3
remove  fall@f2
remove  fall@f1
keep    fall@f0 (hourly 3)
would remove 3, kept 3
EOF
# UTC buckets: f5 [02], f4 f3 [01], f2 f1 [00], f0 [10-24 23]
plan UTC --keep-hourly 3 fall <<'EOF'
keep    fall@f5 (hourly 1)
keep    fall@f4 (hourly 2)
remove  fall@f3
keep    fall@f2 (hourly 3)
remove  fall@f1
remove  fall@f0
would remove 3, kept 3
EOF

# ---- spring DST, daily: 2026-03-29 in Berlin has 23 hours ----
mksnaps spring \
	d1=1774737000 `# 2026-03-28 22:30 UTC = 03-28 23:30 CET` \
	d2=1774740600 `# 2026-03-28 23:30 UTC = 03-29 00:30 CET` \
	d3=1774785600 `# 2026-03-29 12:00 UTC = 03-29 14:00 CEST` \
	d4=1774819800 `# 2026-03-29 21:30 UTC = 03-29 23:30 CEST` \
	d5=1774823400 `# 2026-03-29 22:30 UTC = 03-30 00:30 CEST` \
	d6=1774864800 `# 2026-03-30 10:00 UTC = 03-30 12:00 CEST`
# Berlin days: d6 d5 [03-30], d4 d3 d2 [03-29], d1 [03-28]
plan "$BERLIN" --keep-daily 3 spring <<'EOF'
keep    spring@d6 (daily 1)
remove  spring@d5
keep    spring@d4 (daily 2)
remove  spring@d3
remove  spring@d2
keep    spring@d1 (daily 3)
would remove 3, kept 3
EOF
# UTC days: d6 [03-30], d5 d4 d3 [03-29], d2 d1 [03-28]
plan UTC --keep-daily 3 spring <<'EOF'
keep    spring@d6 (daily 1)
keep    spring@d5 (daily 2)
remove  spring@d4
remove  spring@d3
keep    spring@d2 (daily 3)
remove  spring@d1
would remove 3, kept 3
EOF
# keep-last first; its snapshot pre-fills day 03-30 without using one of
# the two daily slots, so d5 (same day, undecided) is passed over.
plan "$BERLIN" --keep-last 1 --keep-daily 2 spring <<'EOF'
keep    spring@d6 (last 1)
remove  spring@d5
keep    spring@d4 (daily 1)
remove  spring@d3
remove  spring@d2
keep    spring@d1 (daily 2)
would remove 3, kept 3
EOF

# ---- the year boundary: ISO weeks 2026-W01 (starts 2025-12-29) and
# 2026-W53 (2026 has 53 ISO weeks: 2026-12-28 .. 2027-01-03) ----
mksnaps year \
	y1=1766919600 `# 2025-12-28 11:00 UTC = 12:00 CET  Sun  2025-W52` \
	y2=1767006000 `# 2025-12-29 11:00 UTC = 12:00 CET  Mon  2026-W01` \
	y3=1767220200 `# 2025-12-31 22:30 UTC = 23:30 CET  Wed  2026-W01` \
	y4=1767223800 `# 2025-12-31 23:30 UTC = 2026-01-01 00:30 CET  Thu  2026-W01` \
	y5=1767524400 `# 2026-01-04 11:00 UTC = 12:00 CET  Sun  2026-W01` \
	y6=1767610800 `# 2026-01-05 11:00 UTC = 12:00 CET  Mon  2026-W02` \
	z1=1798455600 `# 2026-12-28 11:00 UTC = 12:00 CET  Mon  2026-W53` \
	z2=1798756200 `# 2026-12-31 22:30 UTC = 23:30 CET  Thu  2026-W53` \
	z3=1798759800 `# 2026-12-31 23:30 UTC = 2027-01-01 00:30 CET  Fri  2026-W53` \
	z4=1798974000 `# 2027-01-03 11:00 UTC = 12:00 CET  Sun  2026-W53` \
	z5=1799060400 `# 2027-01-04 11:00 UTC = 12:00 CET  Mon  2027-W01`
# weekly: z5 [2027-W01], z4 z3 z2 z1 [2026-W53], y6 [2026-W02],
# y5 y4 y3 y2 [2026-W01], y1 [2025-W52].  (A %Y-based week would split
# 2026-W53 into "2026-W53" and "2027-W53".)
plan "$BERLIN" --keep-weekly 4 year <<'EOF'
keep    year@z5 (weekly 1)
keep    year@z4 (weekly 2)
remove  year@z3
remove  year@z2
remove  year@z1
keep    year@y6 (weekly 3)
keep    year@y5 (weekly 4)
remove  year@y4
remove  year@y3
remove  year@y2
remove  year@y1
would remove 7, kept 4
EOF
# yearly, Berlin: z5 z4 z3 [2027], z2 .. y4 [2026], y3 y2 y1 [2025]
plan "$BERLIN" --keep-yearly 3 year <<'EOF'
keep    year@z5 (yearly 1)
remove  year@z4
remove  year@z3
keep    year@z2 (yearly 2)
remove  year@z1
remove  year@y6
remove  year@y5
remove  year@y4
keep    year@y3 (yearly 3)
remove  year@y2
remove  year@y1
would remove 8, kept 3
EOF
# yearly, UTC: z5 z4 [2027], z3 .. y5 [2026], y4 .. y1 [2025]
plan UTC --keep-yearly 3 year <<'EOF'
keep    year@z5 (yearly 1)
remove  year@z4
keep    year@z3 (yearly 2)
remove  year@z2
remove  year@z1
remove  year@y6
remove  year@y5
keep    year@y4 (yearly 3)
remove  year@y3
remove  year@y2
remove  year@y1
would remove 8, kept 3
EOF
# daily across New Year: 11 local days in Berlin; in UTC z3/z2 and y4/y3
# share a day (12-31)
plan "$BERLIN" --keep-daily 100 year <<'EOF'
keep    year@z5 (daily 1)
keep    year@z4 (daily 2)
keep    year@z3 (daily 3)
keep    year@z2 (daily 4)
keep    year@z1 (daily 5)
keep    year@y6 (daily 6)
keep    year@y5 (daily 7)
keep    year@y4 (daily 8)
keep    year@y3 (daily 9)
keep    year@y2 (daily 10)
keep    year@y1 (daily 11)
would remove 0, kept 11
EOF
plan UTC --keep-daily 100 year <<'EOF'
keep    year@z5 (daily 1)
keep    year@z4 (daily 2)
keep    year@z3 (daily 3)
remove  year@z2
keep    year@z1 (daily 4)
keep    year@y6 (daily 5)
keep    year@y5 (daily 6)
keep    year@y4 (daily 7)
remove  year@y3
keep    year@y2 (daily 8)
keep    year@y1 (daily 9)
would remove 2, kept 9
EOF
# monthly: Berlin z5 z4 z3 [2027-01], z2 z1 [2026-12], y6 y5 y4 [2026-01];
# UTC puts z3 in 2026-12 and y4 in 2025-12
plan "$BERLIN" --keep-monthly 3 year <<'EOF'
keep    year@z5 (monthly 1)
remove  year@z4
remove  year@z3
keep    year@z2 (monthly 2)
remove  year@z1
keep    year@y6 (monthly 3)
remove  year@y5
remove  year@y4
remove  year@y3
remove  year@y2
remove  year@y1
would remove 8, kept 3
EOF
plan UTC --keep-monthly 3 year <<'EOF'
keep    year@z5 (monthly 1)
remove  year@z4
keep    year@z3 (monthly 2)
remove  year@z2
remove  year@z1
keep    year@y6 (monthly 3)
remove  year@y5
remove  year@y4
remove  year@y3
remove  year@y2
remove  year@y1
would remove 8, kept 3
EOF
# Every rule at once (Berlin), worked by hand:
#  last 1:    z5
#  daily 2:   day 2027-01-04 pre-filled by z5; z4 (01-03), z3 (01-01); full
#  weekly 2:  2027-W01 and 2026-W53 pre-filled, so z2, z1 are passed over;
#             y6 (2026-W02), y5 (2026-W01); y4 y3 y2 fall in y5's week:
#             removed; y1 (2025-W52): no slot left, undecided
#  monthly 2: 2027-01 and 2026-01 pre-filled; z2 (2026-12), z1 removed
#             (same month), y1 (2025-12)
#  yearly 5:  nothing undecided is left
plan "$BERLIN" --keep-last 1 --keep-daily 2 --keep-weekly 2 --keep-monthly 2 --keep-yearly 5 year <<'EOF'
keep    year@z5 (last 1)
keep    year@z4 (daily 1)
keep    year@z3 (daily 2)
keep    year@z2 (monthly 1)
remove  year@z1
keep    year@y6 (weekly 1)
keep    year@y5 (weekly 2)
remove  year@y4
remove  year@y3
remove  year@y2
keep    year@y1 (monthly 2)
would remove 4, kept 7
EOF
# ... and for real: exactly the "remove" lines go, in one transaction
t0=$(txg)
out=$(TZ=$BERLIN cairn prune -v --keep-last 1 --keep-daily 2 --keep-weekly 2 --keep-monthly 2 --keep-yearly 5 year)
[ "$(txg)" = $((t0 + 1)) ] || fail "prune of one dataset took $(($(txg) - t0)) transactions"
[ "$(echo "$out" | grep '^removed  ' | awk '{print $2}' | tr '\n' ' ')" = "year@z1 year@y4 year@y3 year@y2 " ] ||
	fail "prune -v reported: $out"
echo "$out" | tail -1 | grep -qx "removed 4, kept 7" || fail "prune -v summary: $(echo "$out" | tail -1)"
[ "$(snaps year)" = "year@y1 year@y5 year@y6 year@z2 year@z3 year@z4 year@z5" ] ||
	fail "after prune: $(snaps year)"
# again: nothing more to remove (the kept set is stable)
[ "$(TZ=$BERLIN cairn prune -n --keep-last 1 --keep-daily 2 --keep-weekly 2 --keep-monthly 2 --keep-yearly 5 year | tail -1)" = "would remove 0, kept 7" ] ||
	fail "a second prune would remove more"
# real runs of the DST tables
ok env TZ="$BERLIN" "$CAIRN" prune --keep-hourly 3 fall
[ "$(snaps fall)" = "fall@f0 fall@f4 fall@f5" ] || fail "fall after prune: $(snaps fall)"
out=$(TZ=UTC cairn prune --keep-daily 3 spring)
[ -z "$out" ] || fail "prune without -v/-n printed: $out"
[ "$(snaps spring)" = "spring@d2 spring@d5 spring@d6" ] || fail "spring after prune: $(snaps spring)"

# ---- held snapshots: kept, reported, and filling no bucket ----
mksnaps held \
	h1=1780308000 `# 2026-06-01 10:00 UTC` \
	h2=1780394400 `# 2026-06-02 10:00 UTC` \
	h3=1780473600 `# 2026-06-03 08:00 UTC` \
	h4=1780480800 `# 2026-06-03 10:00 UTC` \
	h5=1780567200 `# 2026-06-04 10:00 UTC`
ok cairn hold keep held@h4 held@h1
ok cairn hold other held@h5
# h5 and h4 are held: they fill neither a "last" slot nor day 06-03, so h3
# is the newest unheld snapshot and takes day 06-03 itself
plan UTC --keep-daily 1 held <<'EOF'
keep    held@h5 (kept because held)
keep    held@h4 (kept because held)
keep    held@h3 (daily 1)
remove  held@h2
keep    held@h1 (kept because held)
would remove 1, kept 4
EOF
plan UTC --keep-last 1 held <<'EOF'
keep    held@h5 (kept because held)
keep    held@h4 (kept because held)
keep    held@h3 (last 1)
remove  held@h2
keep    held@h1 (kept because held)
would remove 1, kept 4
EOF
ok env TZ=UTC "$CAIRN" prune --keep-last 1 held
[ "$(snaps held)" = "held@h1 held@h3 held@h4 held@h5" ] || fail "held after prune: $(snaps held)"
[ "$(cairn list -H -p -o userrefs held@h1)" = 1 ] || fail "prune dropped a hold"
# released, h5 becomes an ordinary snapshot and the newest one
ok cairn release other held@h5
plan UTC --keep-last 1 held <<'EOF'
keep    held@h5 (last 1)
keep    held@h4 (kept because held)
remove  held@h3
keep    held@h1 (kept because held)
would remove 1, kept 3
EOF

# ---- keep-within: relative to the newest snapshot, bound inclusive ----
mksnaps within \
	w1=1779235200 `# T - 10d` \
	w2=1779969599 `# T - 36h - 1s` \
	w3=1779969600 `# T - 36h` \
	w4=1780012800 `# T - 24h` \
	w5=1780099200 `# T = 2026-05-30 00:00 UTC`
plan UTC --keep-within 1d12h within <<'EOF'
keep    within@w5 (within)
keep    within@w4 (within)
keep    within@w3 (within)
remove  within@w2
remove  within@w1
would remove 2, kept 3
EOF
plan UTC --keep-last 1 --keep-within 2160min within <<'EOF'
keep    within@w5 (last 1)
keep    within@w4 (within)
keep    within@w3 (within)
remove  within@w2
remove  within@w1
would remove 2, kept 3
EOF
plan UTC --keep-within 2w within <<'EOF'
keep    within@w5 (within)
keep    within@w4 (within)
keep    within@w3 (within)
keep    within@w2 (within)
keep    within@w1 (within)
would remove 0, kept 5
EOF

# ---- -r: one transaction per dataset ----
ok cairn create -o source="$SRC" tree
ok cairn create tree/a
ok cairn create tree/b
for s in r1 r2 r3; do ok cairn snapshot -r "tree@$s"; done
before=$(state)
out=$(cairn prune -n -r --keep-last 1 tree)
[ "$(echo "$out" | grep -c '^remove ')" = 6 ] || fail "prune -n -r plan: $out"
# -H: action, snapshot, reason, tab-separated, no summary
out=$(cairn prune -n -H -r --keep-last 1 tree) || fail "prune -n -H"
[ "$(echo "$out" | wc -l)" = 9 ] || fail "prune -H lines: $out"
echo "$out" | awk -F'\t' 'NF != 3 { exit 1 }' || fail "prune -H is not 3 tab-separated fields: $out"
[ "$(echo "$out" | grep -c "^remove$(printf '\t')tree/a@")" = 2 ] || fail "prune -H removals: $out"
[ "$(echo "$out" | grep "tree/b@r3")" = "$(printf 'keep\ttree/b@r3\tlast 1')" ] || fail "prune -H keep: $out"
# -j: one document over the three datasets; --json-int counts as numbers
out=$(cairn prune -n -j --json-int -r --keep-last 1 tree) || fail "prune -n -j"
echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["output_version"]["command"] == "cairn prune", d
s = d["snapshots"]
assert len(s) == 9, s
assert s["tree/a@r3"] == {"name": "tree/a@r3", "action": "keep", "reason": "last 1"}, s
assert s["tree/b@r1"]["action"] == "remove", s
assert d["dry_run"] is True and d["removed"] == 6 and d["kept"] == 3, d
' || fail "prune -j document: $out"
[ "$(state)" = "$before" ] || fail "prune -n -H / -j changed the store"
fails_with 2 "needs -j" cairn prune -n --json-int --keep-last 1 tree
[ "$(state)" = "$before" ] || fail "prune -n -r changed the store"
t0=$(txg)
ok cairn prune -r --keep-last 1 tree
[ "$(txg)" = $((t0 + 3)) ] || fail "prune -r of 3 datasets took $(($(txg) - t0)) transactions"
[ "$(cairn list -H -o name -t snapshot -r tree | tr '\n' ' ')" = "tree@r3 tree/a@r3 tree/b@r3 " ] ||
	fail "prune -r: $(cairn list -H -o name -t snapshot -r tree)"

# ---- bad options: exit 2 (usage) or 1, a clear message, nothing changed ----
refused() {
	local before
	before=$(state)
	fails_with "$@"
	[ "$(state)" = "$before" ] || fail "refused prune changed the store: ${*:3}"
}
refused 2 "no keep option" cairn prune held
refused 2 "no keep option" cairn prune --keep-last 0 held
refused 2 "no keep option" cairn prune -n -v held
refused 2 "invalid count '-1'" cairn prune --keep-daily -1 held
refused 2 "invalid count 'abc'" cairn prune --keep-daily abc held
refused 2 "invalid count '3x'" cairn prune --keep-weekly 3x held
refused 2 "invalid count ''" cairn prune --keep-monthly '' held
refused 2 "invalid count" cairn prune --keep-yearly 99999999999999999999 held
refused 2 "twice" cairn prune --keep-last 2 --keep-last 3 held
refused 2 "twice" cairn prune --keep-daily 1 --keep-last 1 --keep-daily 1 held
refused 2 "twice" cairn prune --keep-last 0 --keep-last 3 held
refused 2 "twice" cairn prune --keep-within 1d --keep-within 2d held
for d in 3q '' 0d d -1d 1.5d '1d x' 5; do
	refused 2 "invalid duration" cairn prune --keep-within "$d" held
done
refused 2 "expected at least one dataset" cairn prune --keep-last 1
refused 2 "usage" cairn prune --keep-bogus 1 held
refused 1 "nosuch.*does not exist" cairn prune --keep-last 1 nosuch
refused 1 "held@h1" cairn prune --keep-last 1 held@h1
done_test
