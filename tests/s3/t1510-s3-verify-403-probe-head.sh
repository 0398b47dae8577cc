#!/bin/bash
# After a 403 for a chunk, verify asks whether this credential reads an
# object it read before, to tell a missing object (403 to a credential
# without ListBucket) from a refused credential.  That second read was a
# whole GET of a chunk, once per 403: with many missing chunks about twice
# the traffic of the verify's own reads.  A HEAD answers the question
# without moving the body.
#  With two chunk objects gone and their 404s answered 403
#  (tests/s3/faultproxy.py missing-403), verify names both and sends no
#  more chunk GETs than when the same two are answered 404 (no probe):
#  the two probes move no object body.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

gets() { grep -c "^$1 GET /[^/]*/.*/chunks/" "$MODE.hits"; }

# Two chunks that verify reads only once (not index chunks).
keys=$(verify_reads 2)
for key in $keys; do
	ok "$S3TOOL" rm "$BUCKET" "$key"
done

echo missing-403 >"$MODE"
cairn verify --threads 1 --order digest >/dev/null 2>"$TESTDIR/v.err" &&
	fail "verify with missing chunks answered 403 succeeded"
echo pass >"$MODE"
for key in $keys; do
	grep -q "chunk ${key##*/}.*missing, or this credential may not read it" "$TESTDIR/v.err" ||
		fail "verify did not name ${key##*/}: $(cat "$TESTDIR/v.err")"
done
probed=$(gets missing-403)

# The same verify with the 404s as they are: no probe (it removes the
# two markers, so it comes last).
: >"$MODE.hits"
echo log >"$MODE"
cairn verify --threads 1 --order digest >/dev/null 2>"$TESTDIR/v404.err" &&
	fail "verify with missing chunks succeeded"
echo pass >"$MODE"
grep -q "marker removed" "$TESTDIR/v404.err" || fail "verify did not find the chunks missing: $(cat "$TESTDIR/v404.err")"
plain=$(gets log)
[ "$probed" = "$plain" ] ||
	fail "verify sent $probed chunk GETs with two 403s, $plain with two 404s: the probe read a body"
done_test
