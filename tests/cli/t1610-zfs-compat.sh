#!/bin/bash
# The zfs/zpool entry point: the pools file selects stores, outputs, error
# texts and exit codes are zfs's; the commands syncoid and sanoid run.
. "$(dirname "$0")/lib.sh"
BIN=$TESTDIR/bin
mkdir -p "$BIN" "$TESTDIR/src/a" "$TESTDIR/src/b"
ln -s "$CAIRN" "$BIN/zfs"
ln -s "$CAIRN" "$BIN/zpool"
A=$TESTDIR/sa
B=$TESTDIR/sb
"$CAIRN" -s "$A" init >/dev/null || fail "init A"
"$CAIRN" -s "$B" init >/dev/null || fail "init B"
printf '# comment\n\ntank %s\nbackup\t%s\n' "$A" "$B" >"$TESTDIR/pools"
export CAIRN_POOLS_FILE=$TESTDIR/pools
unset CAIRN_STORE
zfs() { "$BIN/zfs" "$@"; }
zpool() { "$BIN/zpool" "$@"; }
echo a >"$TESTDIR/src/a/f"
echo b >"$TESTDIR/src/b/f"
ok zfs create -o source="$TESTDIR/src/a" tank
ok zfs create -o source="$TESTDIR/src/b" tank/b
ok zfs create -o source="$TESTDIR/src/b" backup
ok zfs snapshot -r tank@s1
ok zfs snapshot -r tank@s2
ok zfs bookmark tank@s1 tank#s1
# Each pool lives in its own store.
"$CAIRN" -s "$A" list -H -o name tank/b >/dev/null || fail "tank/b not in store A"
"$CAIRN" -s "$B" list -H -o name tank 2>/dev/null && fail "tank visible in store B"

# zpool: configured pools, features.
[ "$(zpool list -H -o name | tr '\n' ' ')" = "tank backup " ] || fail "zpool list: $(zpool list -H -o name)"
[ "$(zpool get -o value -H feature@extensible_dataset tank)" = active ] || fail "extensible_dataset"
[ "$(zpool get -o value -H feature@bookmarks backup)" = active ] || fail "bookmarks"
[ "$(zpool get -o value -H feature@encryption tank)" = disabled ] || fail "encryption not disabled"
[ "$(zpool get -H -o name,property,value,source feature@bookmarks tank)" = \
	"$(printf 'tank\tfeature@bookmarks\tactive\tlocal')" ] || fail "zpool get -H row"
fails_with 2 "invalid property 'feature@nosuch'" zpool get -H feature@nosuch tank
# As zpool: an unknown property, field or pool fails before any output (a
# header used to come first, and a known property's rows before the
# unknown one's error); an unknown feature in list -o is refused (it
# crashed); "all", which the usage offers, works.
for args in "bogusprop" "bogusprop tank" "name,bogus tank" "-o value,nofield name tank"; do
	out=$(zpool get $args 2>/dev/null)
	rc=$?
	[ $rc -eq 2 ] || fail "zpool get $args: exit $rc, not 2"
	[ -z "$out" ] || fail "zpool get $args: printed before failing: $out"
done
fails_with 2 "invalid property 'bogus'" zpool get name,bogus tank
out=$(zpool get name nope 2>/dev/null)
[ $? -eq 1 ] && [ -z "$out" ] || fail "zpool get name nope: exit not 1 or output: $out"
out=$(zpool get name tank nope 2>/dev/null)
[ $? -eq 1 ] && [ "$(echo "$out" | tail -1 | tr -s ' ')" = "tank name tank -" ] ||
	fail "zpool get name tank nope: exit not 1 or no row for tank: $out"
fails_with 2 "invalid property 'feature@nosuch'" zpool list -o name,feature@nosuch
for v in get list; do
	fails_with 2 "missing argument for 'o' option" zpool $v -o
done
zpool get -H all tank | grep -q "^tank	feature@bookmarks	active	local$" || fail "zpool get all: no feature@bookmarks"
zpool get -H all tank | grep -q "^tank	health	ONLINE	-$" || fail "zpool get all: no health"
[ "$(zpool get -H -o all name tank)" = "$(printf 'tank\tname\ttank\t-')" ] || fail "zpool get -o all"
fails_with 1 "cannot open 'nope': no such pool" zpool list nope
out=$(zpool list -H -o name,health tank) || fail "zpool list health"
[ "$out" = "$(printf 'tank\tONLINE')" ] || fail "zpool list health: $out"

# zfs's error texts and exit codes.
fails_with 1 "^cannot open 'nosuch/x': dataset does not exist$" zfs list nosuch/x
fails_with 1 "^cannot open 'tank/nosuch': dataset does not exist$" zfs list tank/nosuch
fails_with 1 "^cannot open 'tank@nosuch': dataset does not exist$" zfs get -H name tank@nosuch
fails_with 1 "^cannot create snapshot 'tank@s2': dataset already exists$" zfs snapshot tank@s2
fails_with 1 "^cannot destroy 'tank/nosuch': dataset does not exist$" zfs destroy tank/nosuch
fails_with 1 "more recent snapshots or bookmarks exist" zfs rollback tank@s1
fails_with 1 "datasets must be within same pool" zfs rename tank/b backup/b
fails_with 1 "cannot resume send: resume token is corrupt" zfs send -t 1-00
fails_with 2 "unrecognized command 'frob'" zfs frob
fails_with 2 "^usage: zfs list" zfs list -Q
out=$(zfs list -h) || fail "zfs list -h exit"
echo "$out" | grep -q '^usage: zfs list' || fail "zfs list -h: $out"
# cairn's own texts outside zfs mode.
fails_with 1 "^cairn: list: tank/nosuch: dataset does not exist" "$CAIRN" -s "$A" list tank/nosuch

# The commands syncoid runs, and their exact shapes.
[ "$(zfs list -o name,origin -t filesystem,volume -Hr tank)" = \
	"$(printf 'tank\t-\ntank/b\t-')" ] || fail "list -o name,origin: $(zfs list -o name,origin -t filesystem,volume -Hr tank)"
out=$(zfs get -Hpd 1 -t snapshot guid,creation tank) || fail "get -Hpd 1 -t snapshot"
[ "$(echo "$out" | wc -l)" = 4 ] || fail "get -Hpd 1 -t snapshot rows: $out"
echo "$out" | grep -q '^tank/b' && fail "child snapshots within -d 1: $out"
echo "$out" | grep -Eq "^tank@s1	guid	[0-9]+	-$" || fail "guid row: $out"
echo "$out" | grep -Eq "^tank@s2	creation	[0-9]+	-$" || fail "creation row: $out"
out=$(zfs get -Hpd 1 -t bookmark guid,creation tank) || fail "get -t bookmark"
g=$(zfs get -H -p -o value guid tank@s1)
[ "$(echo "$out" | head -1)" = "$(printf 'tank#s1\tguid\t%s\t-' "$g")" ] || fail "bookmark guid row: $out"
out=$(zfs get -Hpd 1 type,guid,creation tank) || fail "get type,guid,creation"
echo "$out" | grep -q "^tank@s1	type	snapshot	-$" || fail "type row: $out"
out=$(zfs get -H name tank/b) || fail "get -H name"
[ "$out" = "$(printf 'tank/b\tname\ttank/b\t-')" ] || fail "get -H name: $out"
[ "$(zfs get -H -o value receive_resume_token tank)" = - ] || fail "resume token"
[ "$(zfs get -H -o value syncoid:sync tank)" = - ] || fail "unset user property"
# sanoid: every pool's snapshots, no dataset named.
out=$(zfs get -Hrpt snapshot creation) || fail "get -Hrpt snapshot creation"
[ "$(echo "$out" | grep -c '	creation	')" = 4 ] || fail "get -Hrpt: $out"
# syncoid: zfs list -d0 -H -oname lists every pool's top dataset.
[ "$(zfs list -d0 -H -oname | tr '\n' ' ')" = "tank backup " ] || fail "list -d0: $(zfs list -d0 -H -oname)"
# A listing spanning pools: each store once, one header.
out=$(zfs list -o name tank backup) || fail "list across pools"
[ "$(echo "$out" | tr -s ' \n' ' ')" = "NAME tank backup " ] || fail "list across pools: $out"
# send -nvP: the last line is "size\tBYTES".
out=$(zfs send -nvP -I tank@s1 tank@s2) || fail "send -nvP"
echo "$out" | tail -1 | grep -Eq '^size	[0-9]+$' || fail "send -nvP: $out"
# A pipe between pools, as syncoid runs it, and resume tokens across stores.
zfs send tank@s1 | zfs receive -s backup/t || fail "send | receive across pools"
[ "$(zfs get -H -p -o value guid backup/t@s1)" = "$g" ] || fail "received guid"
head -c 2000000 /dev/urandom >"$TESTDIR/src/a/big"
ok zfs snapshot tank@s3
zfs send -I tank@s1 tank@s3 2>/dev/null | head -c 1000000 | zfs receive -s backup/t 2>/dev/null &&
	fail "cut receive succeeded"
tok=$(zfs get -H -o value receive_resume_token backup/t)
[ "$tok" != - ] || fail "no token"
zfs send -t "$tok" | zfs receive -s backup/t || fail "resume from the other store"
for s in s2 s3; do
	[ "$(zfs get -H -p -o value guid backup/t@$s)" = "$(zfs get -H -p -o value guid tank@$s)" ] ||
		fail "resumed guid of @$s"
done
# A pools file that does not parse.
printf 'tank\n' >"$TESTDIR/bad"
CAIRN_POOLS_FILE=$TESTDIR/bad fails_with 1 "expected 'POOLNAME STOREPATH'" zfs list
# -j over several pools is one JSON document, and the header of get comes
# with its first row (none when -s filters every row out).
jsonok() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(sorted(d["datasets"])))'; }
got=$(zfs list -j -o name,used | jsonok) || fail "zfs list -j over two pools is not one JSON document"
[ "$got" = "backup backup/t tank tank/b" ] || fail "zfs list -j over two pools: $got"
got=$(zfs get -j -t filesystem used | jsonok) || fail "zfs get -j over two pools is not one JSON document"
[ "$got" = "backup backup/t tank tank/b" ] || fail "zfs get -j over two pools: $got"
[ "$(zfs list -j -o name tank | python3 -c 'import json,sys; print(json.load(sys.stdin)["output_version"]["command"])')" = "zfs list" ] ||
	fail "zfs list -j names itself cairn"
v=$(zfs get -j --json-int used tank | python3 -c 'import json,sys; v=json.load(sys.stdin)["datasets"]["tank"]["properties"]["used"]["value"]; print(type(v).__name__)') ||
	fail "zfs get -j --json-int"
[ "$v" = int ] || fail "get --json-int gave a $v"
out=$(zfs get -s local used tank) || fail "get -s local"
[ -z "$out" ] || fail "get with every row filtered out printed: $out"
[ "$(zfs get -H -o all used tank | awk -F'\t' '{print NF}')" = 5 ] || fail "get -o all"
fails_with 1 "cannot create 'tank/nox/y': parent does not exist" zfs create tank/nox/y
done_test
