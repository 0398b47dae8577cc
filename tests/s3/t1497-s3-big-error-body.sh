#!/bin/bash
# Meta objects (the catalog copy) may be up to 4 GiB, but that bound is for
# the object, not for an error answer: with it, a server answering the
# catalog's GET with HTTP 500 and a 100 MB body (tests/s3/faultproxy.py
# meta-500-big: the first 3 GETs) made 'init --import' hold each 100 MB
# body in memory, try after try, to read the error code out of it.  An
# error answer's body is now read up to 1 MiB (S3's are a few hundred
# bytes) and the status decides as before (500: retried): import retries,
# completes, and stays small.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
rm -rf "$CAIRN_STORE"
ok cairn init --chunks "s3://$BUCKET/$PFX" --endpoint "$EP" >/dev/null
random_tank 1000000
n=$(objects)

# the catalog's GET answered 500 with a 100 MB body, three times
I=$TESTDIR/imported
echo meta-500-big >"$MODE"
peak_rss 51200 "$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" ||
	fail "import over three 500s failed: $(head -c 600 "$TESTDIR/out")"
echo pass >"$MODE"
[ "$(grep -c "^meta-500-big GET .*catalog.db" "$MODE.hits")" = 3 ] || fail "not three GETs were answered 500"
[ "$(markers "$I")" = "$n" ] || fail "the import has $(markers "$I") markers for $n objects"
ok cairn -s "$I" verify >/dev/null
done_test
