#!/bin/bash
# A receive whose completeness check cannot read a snapshot's tree or index
# chunk from the receiver's disk (EIO, as a disk or NFS error) names the
# I/O error as the reason, with the snapshot and the chunk, as it does for
# a chunk it cannot touch (t0847): the stream is not to blame, and sync
# then says to run it again (recv_retryable looks for the I/O error).
# (Before: "stream is invalid at byte N: tree chunk unreadable", then
# "... snapshot index unreadable or incomplete", naming neither.)
. "$(dirname "$0")/lib.sh"
eio_shim
new_store
second_store
mkdir -p "$TESTDIR/src"
head -c 300000 /dev/urandom >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" ds
ok cairn snapshot ds@1
cairn send ds@1 >"$TESTDIR/s" || fail "send"
# the chunks on disk now read as usual; those the receive stores do not
find "$B" -type f -printf '%f\n' >"$TESTDIR/keep"
asan_opts=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0
eio_recv() {
	EIO_CALL=open EIO_KEEP=$TESTDIR/keep ASAN_OPTIONS=$asan_opts LD_PRELOAD=$SHIM "$CAIRN" -s "$B" recv bk \
		<"$TESTDIR/s" 2>"$TESTDIR/err" && fail "the receive succeeded though its reads failed"
}
eio_recv
# the tree chunk is read first
re='^cairn: recv: bk@1: %schunk ([0-9a-f]{64}): cannot check that it is on the receiver: Input/output error$'
# shellcheck disable=SC2059
tree=$(sed -nE "s|$(printf "$re" 'tree ')|\1|p" "$TESTDIR/err")
[ -n "$tree" ] || fail "the tree chunk's I/O error is not the reason given: $(cat "$TESTDIR/err")"
# with it readable, the index chunk is the one that fails
echo "$tree" >>"$TESTDIR/keep"
eio_recv
# shellcheck disable=SC2059
grep -Eq "$(printf "$re" 'index ')" "$TESTDIR/err" ||
	fail "the index chunk's I/O error is not the reason given: $(cat "$TESTDIR/err")"
! grep -q "stream is invalid" "$TESTDIR/err" ||
	fail "BUG: an I/O error on the receiver blamed the stream: $(cat "$TESTDIR/err")"
ok cb recv bk <"$TESTDIR/s"
want=$(cairn list -H -p -t snapshot -o name,guid ds@1 | sed 's|^ds|bk|')
[ -n "$want" ] && [ "$want" = "$(cb list -H -p -t snapshot -o name,guid bk@1 2>&1)" ] ||
	fail "bk@1 not received"
ok cb verify bk >/dev/null
done_test
