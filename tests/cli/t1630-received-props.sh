#!/bin/bash
# Received properties (zfs's "received" source): a -R stream's properties
# are stored as received values; set overrides them (local), inherit -S
# brings them back, plain inherit hides them (the parent's or the default
# applies) while get -o received still shows them.  -o on recv is local on
# the top.  Stores from before the rprop table are upgraded when opened
# writable and stay readable when not.
. "$(dirname "$0")/lib.sh"
A="$TESTDIR/a" B="$TESTDIR/b"
mkdir -p "$TESTDIR/src/kid"
echo one >"$TESTDIR/src/f"
seq 1 20000 >"$TESTDIR/src/kid/g"
ok cairn -s "$A" init
ok cairn -s "$B" init
ok cairn -s "$A" create -o source="$TESTDIR/src" -o com.x:tag=red -o compression=zstd-3 \
	-o com.x:gone=soon tank
ok cairn -s "$A" create tank/kid
ok cairn -s "$A" snapshot -r tank@1
ok cairn -s "$B" create backup

# get NAME PROP FIELDS: one line of get -H.
g() { cairn -s "$B" get -H -o "$3" "$2" "$1"; }

cairn -s "$A" send -R tank@1 >"$TESTDIR/full" || fail "send -R"
ok cairn -s "$B" recv backup/tank <"$TESTDIR/full"
[ "$(g backup/tank com.x:tag value,received,source)" = "red	red	received" ] ||
	fail "received user property: $(g backup/tank com.x:tag value,received,source)"
[ "$(g backup/tank compression value,source)" = "zstd-3	received" ] ||
	fail "received native property: $(g backup/tank compression value,source)"
# The child had no local value on the sender: it inherits the received one.
[ "$(g backup/tank/kid com.x:tag value,received,source)" = "red	-	inherited from backup/tank" ] ||
	fail "child: $(g backup/tank/kid com.x:tag value,received,source)"
# source is never received.
[ "$(g backup/tank source value,source)" = "none	default" ] ||
	fail "source was received: $(g backup/tank source value,source)"
# A replica of the replica gets them too: send -R carries received values
# (not masked, not overridden) as well as local ones.
D="$TESTDIR/d"
ok cairn -s "$D" init
ok cairn -s "$D" create hop
cairn -s "$B" send -R backup/tank@1 >"$TESTDIR/hop" || fail "send -R from the replica"
ok cairn -s "$D" recv hop/tank <"$TESTDIR/hop"
for pv in "com.x:tag red" "compression zstd-3"; do
	set -- $pv
	v=$(cairn -s "$D" get -H -o value,source "$1" hop/tank) || fail "get $1 on the second replica"
	[ "$v" = "$2	received" ] || fail "second replica: $1 is '$v', want '$2	received'"
done
# The default field list has no received column; get -s received filters.
out=$(cairn -s "$B" get -H -s received -o property all backup/tank) || fail "get -s received"
[ "$(echo "$out" | sort | tr '\n' ' ')" = "com.x:gone com.x:tag compression " ] ||
	fail "get -s received all: $out"
out=$(cairn -s "$B" get -j com.x:tag backup/tank) || fail "get -j"
echo "$out" | grep -q '"source":{"type":"RECEIVED"' || fail "JSON source type: $out"
out=$(cairn -s "$B" list -j -o com.x:tag backup/tank) || fail "list -j"
echo "$out" | grep -q '"source":{"type":"RECEIVED"' || fail "list JSON source type: $out"

# set overrides; the received value stays visible.
ok cairn -s "$B" set com.x:tag=blue backup/tank
[ "$(g backup/tank com.x:tag value,received,source)" = "blue	red	local" ] ||
	fail "local over received: $(g backup/tank com.x:tag value,received,source)"
# inherit -S: back to the received value.
ok cairn -s "$B" inherit -S com.x:tag backup/tank
[ "$(g backup/tank com.x:tag value,source)" = "red	received" ] ||
	fail "inherit -S: $(g backup/tank com.x:tag value,source)"
# Plain inherit: the parent's value (or none) applies, the received one is kept.
ok cairn -s "$B" set com.x:tag=green backup
ok cairn -s "$B" set com.x:tag=blue backup/tank
ok cairn -s "$B" inherit com.x:tag backup/tank
[ "$(g backup/tank com.x:tag value,received,source)" = "green	red	inherited from backup" ] ||
	fail "plain inherit: $(g backup/tank com.x:tag value,received,source)"
ok cairn -s "$B" inherit -S com.x:tag backup/tank
[ "$(g backup/tank com.x:tag value,source)" = "red	received" ] ||
	fail "inherit -S after plain inherit: $(g backup/tank com.x:tag value,source)"
# compression: a native inheritable property behaves the same.
ok cairn -s "$B" set compression=zstd-5 backup/tank
[ "$(g backup/tank compression value,received,source)" = "zstd-5	zstd-3	local" ] ||
	fail "native local over received: $(g backup/tank compression value,received,source)"
ok cairn -s "$B" inherit -S compression backup/tank
[ "$(g backup/tank compression value,source)" = "zstd-3	received" ] ||
	fail "native inherit -S: $(g backup/tank compression value,source)"

# The next -R stream carries the sender's new set: a changed value is
# updated, a removed one dropped; the local override survives.
ok cairn -s "$B" set com.x:tag=blue backup/tank
ok cairn -s "$A" set com.x:tag=yellow tank
ok cairn -s "$A" inherit com.x:gone tank
ok cairn -s "$A" snapshot -r tank@2
cairn -s "$A" send -R -i tank@1 tank@2 >"$TESTDIR/incr" || fail "send -R -i"
ok cairn -s "$B" recv backup/tank <"$TESTDIR/incr"
[ "$(g backup/tank com.x:tag value,received,source)" = "blue	yellow	local" ] ||
	fail "incremental received: $(g backup/tank com.x:tag value,received,source)"
[ "$(g backup/tank com.x:gone value,received,source)" = "-	-	-" ] ||
	fail "property removed on the sender still received: $(g backup/tank com.x:gone value,received,source)"

# recv -o: a local value on the top; the children inherit it.
ok cairn -s "$B" recv -o com.x:tag=pink backup/other <"$TESTDIR/full"
[ "$(g backup/other com.x:tag value,source)" = "pink	local" ] ||
	fail "recv -o: $(g backup/other com.x:tag value,source)"
[ "$(g backup/other/kid com.x:tag value,source)" = "pink	inherited from backup/other" ] ||
	fail "recv -o child: $(g backup/other/kid com.x:tag value,source)"

# Destroying a dataset drops its received values with it.
ok cairn -s "$B" destroy -r backup/other
left=$(sqlite3 "$B/catalog.db" "SELECT COUNT(*) FROM rprop WHERE dataset NOT IN (SELECT id FROM dataset)")
[ "$left" = 0 ] || fail "received values of a destroyed dataset left behind: $left"

# A store from before received properties: no rprop table.  Read-only it
# stays readable (root: a tmpfs remounted ro; else a file without write
# permission); writable it is upgraded on open.
C="$TESTDIR/ro/c"
mkdir -p "$TESTDIR/ro"
if [ "$(id -u)" = 0 ]; then
	mount -t tmpfs -o size=64m tmpfs "$TESTDIR/ro" || fail "cannot mount a tmpfs"
	trap 'umount "$TESTDIR/ro" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT
fi
ok cairn -s "$C" init
ok cairn -s "$C" create -o com.x:tag=old pool
sqlite3 "$C/catalog.db" "DROP TRIGGER rprop_gone; DROP TABLE rprop; PRAGMA wal_checkpoint(TRUNCATE);" \
	>/dev/null || fail "dropping rprop"
if [ "$(id -u)" = 0 ]; then
	mount -o remount,ro "$TESTDIR/ro" || fail "remount,ro"
else
	chmod a-w "$C/catalog.db" "$C"
fi
out=$(cairn -s "$C" get -H -o value,received,source com.x:tag pool) || fail "old store read-only"
[ "$out" = "old	-	local" ] || fail "old store read-only: $out"
[ "$(sqlite3 "file:$C/catalog.db?immutable=1" "SELECT COUNT(*) FROM sqlite_master WHERE name='rprop'")" = 0 ] ||
	fail "read-only store changed"
if [ "$(id -u)" = 0 ]; then
	mount -o remount,rw "$TESTDIR/ro" || fail "remount,rw"
else
	chmod u+w "$C/catalog.db" "$C"
fi
out=$(cairn -s "$C" get -H -o value,received,source com.x:tag pool) || fail "old store"
[ "$out" = "old	-	local" ] || fail "old store: $out"
[ "$(sqlite3 "$C/catalog.db" "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('rprop','rprop_gone')")" = 2 ] ||
	fail "old store not upgraded"
cairn -s "$A" send -R tank@1 | cairn -s "$C" recv pool/tank || fail "recv into an upgraded store"
[ "$(cairn -s "$C" get -H -o source com.x:tag pool/tank)" = received ] || fail "upgraded store: received"

[ "$(id -u)" = 0 ] && umount "$TESTDIR/ro"
done_test
