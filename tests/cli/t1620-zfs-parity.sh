#!/bin/bash
# zfs command line details, one check each, in cairn's own mode (zfs mode
# runs the same verbs): list/get option order and implied depths, missing
# roots, empty listings, JSON, headers, destroy's texts and name lists,
# --help everywhere, -V, help VERB, send's accepted zfs flags.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src"
echo x >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn create -o source="$TESTDIR/src" tank/a
ok cairn create -o source="$TESTDIR/src" tank/a/b
ok cairn snapshot -r tank@s1
ok cairn snapshot tank/a@only

names() { cairn list -H -o name "$@" | tr '\n' ' '; }

# -d wins over -r, in either order (list and get).
[ "$(names -d 1 -r tank)" = "tank tank/a " ] || fail "list -d 1 -r: $(names -d 1 -r tank)"
[ "$(names -r -d 1 tank)" = "tank tank/a " ] || fail "list -r -d 1: $(names -r -d 1 tank)"
[ "$(cairn get -H -o name -r -d 0 name tank | tr '\n' ' ')" = "tank " ] || fail "get -r -d 0"
[ "$(cairn get -H -o name -d 0 -r name tank | tr '\n' ' ')" = "tank " ] || fail "get -d 0 -r"

# Only exactly -t snapshot / -t bookmark implies -d 1.
[ "$(names -t all tank)" = "tank " ] || fail "list -t all DS: $(names -t all tank)"
[ "$(names -t fs,snap tank)" = "tank " ] || fail "list -t fs,snap DS: $(names -t fs,snap tank)"
[ "$(names -t snapshot tank)" = "tank@s1 " ] || fail "list -t snapshot DS: $(names -t snapshot tank)"
[ "$(cairn get -H -o name -t snapshot name tank | tr '\n' ' ')" = "tank@s1 " ] || fail "get -t snapshot DS"
[ "$(cairn get -H -o name -t all name tank | tr '\n' ' ')" = "tank " ] || fail "get -t all DS"

# list A nosuch B: A and B listed, nosuch named, exit 1.
out=$(cairn list -H -o name tank nosuch tank/a 2>"$TESTDIR/err")
rc=$?
[ $rc = 1 ] || fail "list A nosuch B: exit $rc"
[ "$(echo "$out" | tr '\n' ' ')" = "tank tank/a " ] || fail "list A nosuch B printed: $out"
grep -q 'nosuch: dataset does not exist' "$TESTDIR/err" || fail "list A nosuch B: $(cat "$TESTDIR/err")"

# An empty result: "no datasets available" on stderr, nothing on stdout, exit 0.
out=$(cairn list -t snapshot tank/a/b@nope 2>/dev/null; cairn list -t bookmark tank 2>"$TESTDIR/err")
rc=$?
[ $rc = 0 ] || fail "empty listing: exit $rc"
[ -z "$out" ] || fail "empty listing printed: $out"
grep -qx 'no datasets available' "$TESTDIR/err" || fail "empty listing: $(cat "$TESTDIR/err")"

# --json is -j; JSON leaves name out of properties.
a=$(cairn list --json -o name,used tank) || fail "list --json"
b=$(cairn list -j -o name,used tank) || fail "list -j"
[ "$a" = "$b" ] || fail "--json differs from -j"
echo "$a" | python3 -c '
import json, sys
d = json.load(sys.stdin)["datasets"]["tank"]
assert d["name"] == "tank", d
assert "name" not in d["properties"], d["properties"]
assert "used" in d["properties"], d["properties"]' || fail "list JSON: $a"
cairn get -j used,name tank | python3 -c '
import json, sys
d = json.load(sys.stdin)["datasets"]["tank"]["properties"]
assert d["used"]["source"]["type"] == "NONE", d' || fail "get -j"

# Headers: zfs's names, right-aligned over numbers.
hdr=$(cairn list -o name,used,refer,guid tank | head -1)
echo "$hdr" | grep -Eq '^NAME +USED +REFER +GUID$' || fail "header: $hdr"
row=$(cairn list -o name,used,refer,guid tank | sed -n 2p)
[ ${#hdr} = ${#row} ] || fail "numeric headers not right-aligned: '$hdr' / '$row'"
[ "$(cairn get -H -o value origin tank)" = - ] || fail "origin"
[ "$(cairn list -H -o name,origin tank)" = "$(printf 'tank\t-')" ] || fail "list -o origin"
# get -s: only the sources asked for.
ok cairn set user:tag=v tank
out=$(cairn get -H -s local -o property used,user:tag tank) || fail "get -s local"
[ "$out" = user:tag ] || fail "get -s local: '$out'"
out=$(cairn get -H -s none,default -o property used,user:tag tank) || fail "get -s none"
[ "$out" = used ] || fail "get -s none,default: '$out'"
fails_with 2 "invalid source 'bogus'" cairn get -s bogus used tank

# destroy: -v / -n / -p texts, lists with missing names, -r to descendants only.
ok cairn snapshot tank@d1
out=$(cairn destroy -nv tank@d1) || fail "destroy -nv"
echo "$out" | grep -qx 'would destroy tank@d1' || fail "destroy -nv: $out"
echo "$out" | grep -q '^would reclaim ' || fail "destroy -nv reclaim: $out"
out=$(cairn destroy -np tank@d1) || fail "destroy -np"
[ "$(echo "$out" | head -1)" = "$(printf 'destroy\ttank@d1')" ] || fail "destroy -p: $out"
echo "$out" | tail -1 | grep -Eq '^reclaim	[0-9]+$' || fail "destroy -p reclaim: $out"
out=$(cairn destroy -v tank@d1,nosuch) || fail "destroy a,nosuch"
echo "$out" | grep -qx 'will destroy tank@d1' || fail "destroy -v: $out"
fails_with 1 "tank@gone: snapshot does not exist" cairn destroy tank@gone
fails_with 1 "could not find any snapshots" cairn destroy tank@gone1,gone2
out=$(cairn destroy -rv tank@only) || fail "destroy -r where only a child has it"
echo "$out" | grep -qx 'will destroy tank/a@only' || fail "destroy -r child: $out"
[ "$(names -t snapshot -r tank | grep -c only)" = 0 ] || fail "tank/a@only left"

# Every verb: -h and --help print the usage on stdout and exit 0.
for v in init config create snapshot restore list get set inherit rename destroy hold holds \
	release bookmark prune gc verify send recv sync rollback; do
	for h in -h --help; do
		out=$(cairn $v $h 2>"$TESTDIR/err")
		rc=$?
		[ $rc = 0 ] || fail "$v $h: exit $rc"
		echo "$out" | grep -q "^usage: cairn $v" || fail "$v $h: $out"
		[ -s "$TESTDIR/err" ] && fail "$v $h wrote to stderr: $(cat "$TESTDIR/err")"
	done
done
[ "$(cairn -V)" = "$(cairn --version)" ] || fail "-V and --version differ"
cairn -V | grep -Eq '^cairn [0-9]+\.[0-9]+' || fail "cairn -V: $(cairn -V)"
out=$(MANPAGER=cat PAGER=cat cairn help rollback 2>&1) || fail "help rollback exit"
echo "$out" | grep -qi 'rollback' || fail "help rollback: $out"
fails_with 2 "unknown verb" cairn help nosuch

# rename ds@a @b; inherit of a bogus property is a usage error; user
# property names are lower case.
ok cairn rename tank@s1 @s1b
[ "$(names -t snapshot tank)" = "tank@s1b " ] || fail "rename ds@a @b: $(names -t snapshot tank)"
ok cairn rename tank@s1b s1
fails_with 2 "invalid property 'BOGUS'" cairn inherit BOGUS tank
fails_with 1 "lower case" cairn set user:Upper=1 tank
[ "$(cairn get -H -o value user:upper tank)" = - ] || fail "refused property set anyway"

# send accepts zfs's meaningless flags and long options.
out=$(cairn send -L -c -e -b -p -D --props --large-block --dryrun --verbose --parsable tank@s1) ||
	fail "send with ignored flags"
echo "$out" | tail -1 | grep -Eq '^size	[0-9]+$' || fail "send -nvP (long): $out"
done_test
