#!/bin/bash
# Command-line values (issue 10, item 4): one overflow-checked parser for
# numbers and durations, malformed config values refused, user property
# values must be UTF-8 (listings are JSON), dataset names begin with a
# letter or digit, and prune survives extreme creation times.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
echo data >"$SRC/f"
ok cairn create -o source="$SRC" ta
for s in 1 2 3; do ok cairn snapshot ta@$s; done
count() { cairn list -H -t snapshot -o name | wc -l; }

# --keep-within: overflow and out of range are refused, nothing removed.
fails_with 2 "out of range" cairn prune --keep-within 1000000000000y ta
fails_with 2 "out of range" cairn prune --keep-within 9223372036854775807s9223372036854775807s3s ta
fails_with 2 "out of range" cairn prune --keep-within 1001y ta
fails_with 2 "invalid duration" cairn prune --keep-within ' 30d' ta
fails_with 2 "invalid duration" cairn prune --keep-within 30 ta
fails_with 2 "invalid count" cairn prune --keep-last 99999999999999999999 ta
fails_with 2 "invalid count" cairn prune --keep-last +1 ta
[ "$(count)" = 3 ] || fail "a refused prune removed snapshots"
out=$(cairn prune -n --keep-within 1000y ta) || fail "prune --keep-within 1000y: $out"
echo "$out" | grep -q '^remove' && fail "1000y removes something: $out"

# Depths: get and list refuse the same values.
for v in 99999999999999999999 ' 1' +1 -1 1x ''; do
	fails_with 2 "invalid depth" cairn get -d "$v" all ta
	fails_with 2 "invalid depth" cairn list -d "$v" ta
done
ok cairn get -d 1 -H -o name name ta >/dev/null
# Other numeric options go through the same parser.
fails_with 2 "thread" cairn verify --threads ' 2'
fails_with 2 "thread" cairn gc --threads 99999999999999999999
fails_with 2 "batch" cairn gc --batch +5

# config: a malformed value is refused and changes nothing.
before=$(cairn config chunk_size 2>&1)
fails_with 1 "not a number" cairn config "chunk_size= 65536"
fails_with 1 "not a number" cairn config "gc_batch=+5"
fails_with 1 "not a number" cairn config "gc_batch= 5"
[ "$(cairn config chunk_size 2>&1)" = "$before" ] || fail "refused config changed chunk_size"

# User property values must be UTF-8; listings stay valid JSON.
fails_with 1 "UTF-8" cairn set u:bad=$'\xff\xfe' ta
fails_with 1 "UTF-8" cairn set u:bad=$'ok\xc3' ta
fails_with 1 "UTF-8" cairn set u:bad=$'\xed\xa0\x80' ta
ok cairn set u:good='héllo ✓ 𝄞' ta
[ "$(cairn get -H -o value u:good ta)" = 'héllo ✓ 𝄞' ] || fail "UTF-8 value not kept"
# A value stored by an older version: JSON still parses.
sqlite3 "$CAIRN_STORE/catalog.db" \
	"INSERT INTO dprop SELECT id, 'u:old', CAST(x'41ff42' AS TEXT) FROM dataset WHERE name='ta'" ||
	fail sqlite3
cairn list -j -o name,u:old,u:good ta | python3 -c 'import json, sys; json.load(sys.stdin)' ||
	fail "list -j is not valid JSON"

# Dataset names begin with a letter or digit.
for n in - -o -rf _x .x; do
	fails_with 1 "letter or digit" cairn create -- "$n"
done
ok cairn create 9lives
[ -z "$(cairn list -H -o name | grep -- '^[-_.]')" ] || fail "a refused name was created"

# prune with creation times at both ends of int64.
sqlite3 "$CAIRN_STORE/catalog.db" "UPDATE snapshot SET creation = -9223372036854775808 WHERE name = '1';
	UPDATE snapshot SET creation = 9223372036854775807 WHERE name = '3';" || fail sqlite3
for rule in "--keep-within 1d" "--keep-within 1000y" "--keep-daily 1" "--keep-weekly 1" \
	"--keep-monthly 1" "--keep-yearly 1" "--keep-hourly 1"; do
	# shellcheck disable=SC2086
	out=$(cairn prune -n -v $rule ta 2>&1) || fail "prune $rule with extreme times: $out"
	echo "$out" | grep -q 'keep .*ta@3' || fail "prune $rule does not keep the newest: $out"
done
out=$(cairn prune -n -v --keep-within 1d ta) || fail "prune"
echo "$out" | grep -q 'remove  ta@1' || fail "INT64_MIN snapshot not outside 1d of INT64_MAX: $out"
done_test
