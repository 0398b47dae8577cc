# lib-s3.sh - sourced by tests/s3/t1[45]*.sh after tests/cli/lib.sh: stores
# whose chunks live in the Ceph that tests/s3/run.sh started.
: "${CAIRN_S3_ENDPOINT:?run under make check-s3 (tests/s3/run.sh)}"
: "${S3TOOL:?}" "${CEPH_DIR:?}"
BUCKET=${CAIRN_S3_TEST_BUCKET:-cairn-tests}
PFX="t$$-$RANDOM"
export CAIRN_BACKEND_STATS="$TESTDIR/stats"

# swapped_marker_kept MARKER: another chunk's object is copied over
# MARKER's object and MARKER is removed (a lost marker whose object is
# not the chunk's).  gc must report the chunk missing, make no marker for
# it, and keep its object: it is referenced, and only a backup of the
# data replaces it.
swapped_marker_kept() {
	local hex other
	hex=$(basename "$1")
	other=$("$S3TOOL" ls "$BUCKET" "$PFX/chunks/" | grep -v "$hex" | head -n 1)
	"$S3TOOL" get "$BUCKET" "$other" >"$TESTDIR/obj" || fail "get object"
	ok "$S3TOOL" put "$BUCKET" "$PFX/chunks/${hex:0:4}/$hex" "$TESTDIR/obj"
	rm -f "$1"
	fails_with 1 "$hex.*missing" cairn gc
	[ -e "$1" ] && fail "gc made a marker for another chunk's blob"
	"$S3TOOL" ls "$BUCKET" "$PFX/chunks/" | grep -q "$hex" || fail "gc deleted a referenced object whose marker was lost"
}

# s3_new_store [STORE [PREFIX]]: an empty store on s3://$BUCKET/PREFIX.
s3_new_store() {
	local st=${1:-$CAIRN_STORE} p=${2:-$PFX}
	rm -rf "$st"
	"$CAIRN" -s "$st" init --chunks "s3://$BUCKET/$p" >/dev/null || fail "init --chunks s3://$BUCKET/$p"
}
# objects [PREFIX]: how many chunk objects the bucket holds under PREFIX.
objects() { "$S3TOOL" count "$BUCKET" "${1:-$PFX}/chunks/"; }
# markers [STORE]: how many chunk markers the store has.
markers() {
	find "${1:-$CAIRN_STORE}/.chunks" -type f -regextype egrep -regex '.*/[0-9a-f]{64}' | wc -l
}
# stat_of KEY: the value of KEY on the last stats line (requests of the
# last command).
stat_of() { tail -n 1 "$CAIRN_BACKEND_STATS" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# corpus DIR: files of several sizes, a hardlink, a symlink, xattrs.
corpus() {
	mkdir -p "$1/sub"
	cp -a "$CAIRN_SRC/lib" "$1/"
	head -c 3000000 /dev/urandom >"$1/big.bin"
	for i in $(seq 20); do head -c $((RANDOM * 2)) /dev/urandom >"$1/sub/f$i"; done
	ln "$1/sub/f1" "$1/sub/hard"
	ln -s f2 "$1/sub/link"
	setfattr -n user.k -v v "$1/sub/f3" 2>/dev/null || true
}
# s3_corpus_snapshot: an empty S3 store (s3_new_store) with dataset tank
# over a corpus in $SRC (64K chunks) and its first snapshot, tank@1.
s3_corpus_snapshot() {
	s3_new_store
	SRC=$TESTDIR/src
	corpus "$SRC"
	ok cairn create -o source="$SRC" -o chunksize=64K tank
	ok cairn snapshot tank@1 >/dev/null
}

# fault_proxy: tests/s3/faultproxy.py between cairn and the radosgw, its
# fault read from $MODE (a file; "pass" to begin with), its endpoint $EP;
# stopped on exit.  Its messages go to $TESTDIR/proxy.err.
fault_proxy() {
	local upstream=${CAIRN_S3_ENDPOINT##*:}
	MODE=$TESTDIR/mode
	echo pass >"$MODE"
	python3 "$CAIRN_SRC/tests/s3/faultproxy.py" "$TESTDIR/port" "$upstream" "$MODE" 2>"$TESTDIR/proxy.err" &
	proxy=$!
	trap 'kill $proxy 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT
	for _ in $(seq 100); do [ -s "$TESTDIR/port" ] && break; sleep 0.1; done
	[ -s "$TESTDIR/port" ] || fail "the fault proxy did not start"
	EP="http://127.0.0.1:$(cat "$TESTDIR/port")"
}

# proxied_store: an empty store whose requests go through the fault proxy
# ($EP, from fault_proxy), with a 2 s retry budget so that faults end fast.
proxied_store() {
	rm -rf "$CAIRN_STORE"
	"$CAIRN" init --chunks "s3://$BUCKET/$PFX" --endpoint "$EP" >/dev/null || fail "init through the proxy"
	"$CAIRN" config s3_retry_seconds=2 || fail "config s3_retry_seconds=2"
}

# pad_catalog CATALOG: 70 MiB more in a table of its own (a catalog over
# the 64 MiB bound of chunk objects).
pad_catalog() {
	python3 - "$1" <<'PY' || fail "padding the catalog $1"
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE test_padding(b BLOB)")
for _ in range(70):
    db.execute("INSERT INTO test_padding VALUES (?)", (os.urandom(1 << 20),))
db.commit()
db.close()
PY
}

# peak_rss KIB CMD...: runs CMD (both outputs in $TESTDIR/out), fails the
# test if its peak resident size reached KIB, and returns CMD's status.
peak_rss() {
	local max=$1 rc rss
	shift
	/usr/bin/time -f "%M" -o "$TESTDIR/rss" "$@" >"$TESTDIR/out" 2>&1
	rc=$?
	rss=$(tail -n 1 "$TESTDIR/rss")
	[ "$rss" -lt "$max" ] || fail "$* grew to $rss KiB"
	return $rc
}

# random_tank BYTES: tank@1 in the current store, a snapshot of $SRC
# holding one random file of BYTES ($SRC/a), in 64 KiB chunks.
random_tank() {
	SRC=$TESTDIR/src
	mkdir -p "$SRC"
	head -c "$1" /dev/urandom >"$SRC/a"
	ok cairn create -o source="$SRC" -o chunksize=64K tank
	ok cairn snapshot tank@1 >/dev/null
}

# gc_tank: a proxied store (proxied_store) whose gc removes garbage at
# once (gc_atime_cutoff=0), holding a random_tank of 1 MB; n is its count
# of chunk objects (at least 4).
gc_tank() {
	proxied_store
	ok cairn config gc_atime_cutoff=0
	random_tank 1000000
	n=$(objects)
	[ "$n" -ge 4 ] || fail "only $n objects"
}

# interrupt_gc PID ERRFILE: SIGINT to the gc PID (started in the
# background, its stderr in ERRFILE); the proxy goes back to "pass".  gc
# must stop within 10 s, fail, say "interrupted", and leave all n objects.
interrupt_gc() {
	local t0 rc took
	t0=$(date +%s)
	kill -INT "$1"
	wait "$1"
	rc=$?
	took=$(($(date +%s) - t0))
	echo pass >"$MODE"
	[ $rc -ne 0 ] || fail "an interrupted gc succeeded"
	[ $took -le 10 ] || fail "gc took $took s to stop after SIGINT"
	grep -q "interrupted" "$2" || fail "gc did not say it was interrupted: $(cat "$2")"
	[ "$(objects)" = "$n" ] || fail "objects went: $(objects) of $n"
}

# gc_refuses_listing PROXYMODE PATTERN: with the proxy in PROXYMODE, gc
# must fail within 60 s saying PATTERN (a grep pattern), and leave all n
# objects; the proxy goes back to "pass".
gc_refuses_listing() {
	local rc
	echo "$1" >"$MODE"
	timeout 60 "$CAIRN" gc >/dev/null 2>"$TESTDIR/gc.err"
	rc=$?
	echo pass >"$MODE"
	[ $rc = 124 ] && fail "gc listed for 60 s ($1)"
	[ $rc = 0 ] && fail "gc succeeded ($1)"
	grep -q "$2" "$TESTDIR/gc.err" || fail "gc did not say '$2' ($1): $(cat "$TESTDIR/gc.err")"
	[ "$(objects)" = "$n" ] || fail "objects went ($1): $(objects) of $n"
}

# verify_reads N [TIMES]: the keys of the first N chunk objects (by
# digest) that a logged one-reader verify reads TIMES times (default 1:
# not the index chunks, which it also reads to list the others; 2: those).
# Fails unless there are N.  $MODE.hits keeps that verify's log.
verify_reads() {
	local n=$1 times=${2:-1} keys
	echo log >"$MODE"
	ok cairn verify --threads 1 --order digest >/dev/null
	echo pass >"$MODE"
	keys=$(sed -n 's|^log GET /[^/]*/\(.*/chunks/.*\)|\1|p' "$MODE.hits" | sort | uniq -c |
		awk -v t="$times" '$1 == t {print $2}' | LC_ALL=C sort -t/ -k4 | head -n "$n")
	[ "$(echo "$keys" | grep -c .)" = "$n" ] ||
		fail "not $n chunks that verify reads $times times: $(cat "$MODE.hits")"
	echo "$keys"
}

# verify_blames_credential: with every read refused (forbid-get-head),
# verify fails with the credential's refusal and judges no chunk.
verify_blames_credential() {
	echo forbid-get-head >"$MODE"
	cairn verify >/dev/null 2>"$TESTDIR/vc.err" && fail "verify with reads refused succeeded"
	echo pass >"$MODE"
	grep -q "refused to read chunk.*credential.*GET .*/chunks/.*HTTP 403" "$TESTDIR/vc.err" ||
		fail "verify did not blame the credential: $(cat "$TESTDIR/vc.err")"
	grep -q "bad chunk" "$TESTDIR/vc.err" && fail "verify reported bad chunks: $(cat "$TESTDIR/vc.err")"
}

# unnamed_stream_chunk: tank's only snapshot loses its index and its tree
# root's length, so a walk over it cannot say which chunk it failed on.
unnamed_stream_chunk() {
	ok sqlite3 "$CAIRN_STORE/catalog.db" "UPDATE snapdata SET idx = x'',
		tree = substr(tree, 1, 32) || x'00000000' || substr(tree, 37)"
}

