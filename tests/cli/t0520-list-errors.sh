#!/bin/bash
# `cairn list` refusals: bad usage exits 2 naming the offending word, a
# missing or over-long name exits 1 naming it, bad batch settings are
# refused, the reference path refuses the same way, and no refusal changes
# anything in the store.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
new_store
DB=$CAIRN_STORE/catalog.db
mkdir -p "$TESTDIR/src/a"
echo x >"$TESTDIR/src/a/f"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn create tank/a
ok cairn snapshot -r tank@s1
ok cairn snapshot tank/a@s2

state() {
	cairn list -t all -H -p -o name,guid,createtxg
	sqlite3 -cmd ".timeout 10000" "$DB" .dump | md5sum
}
before=$(state)

# refused CODE PATTERN ARGS...: `cairn list ARGS` exits CODE, says PATTERN
# on stderr, prints nothing on stdout; the reference path does the same.
refused() {
	local code=$1 pat=$2 out
	shift 2
	fails_with "$code" "$pat" "$CAIRN" list "$@"
	out=$("$CAIRN" list "$@" 2>/dev/null)
	[ -z "$out" ] || fail "list $* printed on stdout: $(echo "$out" | head -n 2)"
	local a b
	a=$("$CAIRN" list "$@" 2>&1; echo "rc=$?")
	b=$(CAIRN_LIST_REFERENCE=1 "$CAIRN" list "$@" 2>&1; echo "rc=$?")
	[ "$a" = "$b" ] || fail "reference path refuses differently: list $*"
}

# ---- usage errors: exit 2, the offending word named ----
refused 2 "invalid property 'bogus'" -o name,bogus
refused 2 "invalid property 'bogus'" -o bogus -t all
refused 2 "bogus" -o name,user:ok,bogus
refused 2 "invalid property 'nocolon'" -o nocolon
refused 2 "invalid property 'bad:na me'" -o 'name,bad:na me'
refused 2 "invalid type 'bogus'" -t bogus
refused 2 "invalid type 'bogus'" -t snapshot,bogus
refused 2 "invalid type 'snapshots'" -t snapshots tank
refused 2 "invalid depth 'x'" -d x
refused 2 "invalid depth '-1'" -d -1
refused 2 "invalid depth '1x'" -d 1x tank
refused 2 "invalid depth ''" -d ''
refused 2 "invalid property 'bogus'" -s bogus
refused 2 "invalid property 'bogus'" -S bogus
refused 2 "invalid property 'bogus'" -s name -S bogus -t all
refused 2 "one property per -s/-S" -s name,type
refused 2 "empty property list" -o ''
refused 2 "json-int" --json-int
refused 2 "usage" -Z
refused 2 "usage" -d

# ---- missing objects: exit 1, the name given ----
refused 1 "nosuch: dataset does not exist" nosuch
refused 1 "tank/nosuch: dataset does not exist" -r tank/nosuch
refused 1 "tank/nosuch" -t snapshot tank/nosuch
refused 1 "tank@nosuch: snapshot does not exist" tank@nosuch
refused 1 "nosuch" -t snapshot nosuch@s1
# Several roots, some missing: as zfs, the others are listed, then exit 1.
fails_with 1 "tank/b: dataset does not exist" "$CAIRN" list tank tank/b
out=$("$CAIRN" list -H -o name tank tank/b 2>/dev/null)
[ "$out" = tank ] || fail "list tank tank/b: the existing root not listed ($out)"
fails_with 1 "tank/b" "$CAIRN" list -t all -r tank/a tank/b tank
# valid-looking names of exactly 255 bytes that do not exist: not a length error
n255=tank/$(printf 'n%.0s' $(seq 250))
refused 1 "dataset does not exist" "$n255"
s255=tank@$(printf 's%.0s' $(seq 250))
refused 1 "snapshot does not exist" "$s255"

# ---- over-long and malformed names ----
refused 1 "is 256 bytes long (at most 255)" "${n255}n"
refused 1 "is 256 bytes long (at most 255)" "${s255}s"
refused 1 "is 305 bytes long (at most 255)" -t snapshot "tank/$(printf 'a%.0s' $(seq 300))"
refused 1 "invalid character ' '" 'tank/a b'
refused 1 "invalid character" 'tank/a@s1@s2'
refused 1 "empty dataset component" 'tank//a'
refused 1 "empty snapshot component" 'tank@'
# a long name is echoed whole in the message, so the user sees which one
err=$("$CAIRN" list "${n255}n" 2>&1 >/dev/null)
case $err in *"${n255}n"*) ;; *) fail "over-long name not echoed: $err" ;; esac

# ---- batch settings out of range ----
for v in 0 4097 -1 abc 1x; do
	CAIRN_LIST_BATCH_SIZE=$v refused 1 "list_batch_size" -t snapshot tank
	CAIRN_LIST_BATCH_SIZE=$v refused 1 "CAIRN_LIST_BATCH_SIZE" -t snapshot tank
done
for v in 0 100001 abc; do
	CAIRN_LIST_BATCH_TIME_US=$v refused 1 "list_batch_time_us" -t snapshot tank
done
# ... and the bounds themselves are fine
for v in 1 4096; do
	out=$(CAIRN_LIST_BATCH_SIZE=$v cairn list -H -o name -t snapshot -r tank) || fail "batch size $v refused"
	[ "$(echo "$out" | wc -l)" = 3 ] || fail "batch size $v: $out"
done
for v in 1 100000; do
	out=$(CAIRN_LIST_BATCH_TIME_US=$v cairn list -H -o name -t snapshot -r tank) || fail "batch time $v refused"
	[ "$(echo "$out" | wc -l)" = 3 ] || fail "batch time $v: $out"
done

# ---- not a store ----
CAIRN_STORE=$TESTDIR/nostore refused 1 "no cairn store" -t all

# ---- nothing changed ----
after=$(state)
[ "$before" = "$after" ] || {
	fail "the store changed"
	diff <(echo "$before") <(echo "$after") | head -n 5 >&2
}
done_test
