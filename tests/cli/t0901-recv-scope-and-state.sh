#!/bin/bash
# Review findings on a receive's reach and on where its partial state lives.
# 1. recv -R -F -d/-e works inside the stream's own subtree (zfs's "tofs"):
#    the target's other children are neither destroyed nor matched by guid.
# 2. A refusal by the target (newer snapshots, no incremental source) that
#    comes after a checkpoint of this receive leaves no partial state and
#    no dataset behind: the store is as it was.  A partial state an
#    earlier receive left is kept.
# 3. Partial state lives with its dataset: destroy removes it, rename moves
#    it (so the resume still works), and a new dataset under an old name
#    does not inherit a row an older version left behind.  With -d/-e it
#    lives on the received dataset, not on the target above it, so other
#    receives under the target go on.
. "$(dirname "$0")/lib.sh"
new_store
names() { "$CAIRN" -s "$1" list -H -o name -t all -r 2>/dev/null | sort | tr '\n' ' '; }
prop() { cb get -H -o value "$1" "$2" 2>/dev/null; }

SRC=$TESTDIR/src
mkdir -p "$SRC"
echo hi >"$SRC/f"
mkdir -p "$SRC/home"
ok ca create -o source="$SRC" pool
ok ca create pool/home
ok ca snapshot -r pool@1

# 1. -R -F -d and -e with a sibling under the parent
for flag in -d -e; do
	second_store
	ok cb create -p -o source="$SRC" backup/other
	ok cb snapshot backup/other@keep
	ok cb create -o source="$SRC" backup/stray # same guid as nothing sent
	ca send -R pool/home@1 | cb recv -F "$flag" backup || fail "recv -R -F $flag"
	want="backup backup/home backup/home@1 backup/other backup/other@keep backup/stray "
	[ "$(names "$B")" = "$want" ] || fail "recv -R -F $flag reached outside backup/home: $(names "$B")"
	# the same stream again with -F: the subtree is reconciled, still nothing else
	ca send -R pool/home@1 | cb recv -F "$flag" backup || fail "recv -R -F $flag again"
	[ "$(names "$B")" = "$want" ] || fail "second recv -R -F $flag: $(names "$B")"
done
# inside the subtree an incremental -R -F stream still prunes what the
# sender no longer has (a full one leaves it, as zfs does: t0905)
second_store
ok cb create -p -o source="$SRC" backup/other
ca send -R pool/home@1 | cb recv -F -d backup || fail "recv -R -F -d"
ok cb create -o source="$SRC" backup/home/gone
ok ca snapshot pool/home@1b
ca send -R -i @1 pool/home@1b | cb recv -F -d backup ||
	fail "recv -R -i -F -d with an extra child"
ok ca destroy pool/home@1b
case " $(names "$B")" in
*" backup/home/gone "*) fail "-F kept a dataset the sender does not have" ;;
esac
case " $(names "$B")" in
*" backup/other "*) ;;
*) fail "-F destroyed the sibling backup/other" ;;
esac

# 2. refusals after a checkpoint (> 1024 chunks in the group)
ok ca config chunk_size=65536 >/dev/null
ok ca create -o source="$SRC" tank
ok ca snapshot tank@a
head -c 90000000 /dev/urandom >"$SRC/big"
ok ca snapshot tank@b
ca send -i tank@a tank@b >"$TESTDIR/inc" || fail "send -i"
chunks=$(ls "$CAIRN_STORE"/.chunks/*/ | grep -c .)
[ "$chunks" -gt 1100 ] || fail "only $chunks chunks: no checkpoint inside the group"
second_store
ca send tank@a | cb recv bk || fail "recv tank@a"
ok cb snapshot bk@local
before=$(names "$B")
fails_with 1 "newer than the stream's source" cb recv -s bk <"$TESTDIR/inc"
[ "$(prop inconsistent bk)" = off ] || fail "a refused receive left bk inconsistent"
[ "$(prop receive_resume_token bk)" = - ] || fail "a refused receive left a token"
[ "$(names "$B")" = "$before" ] || fail "a refused receive changed the datasets: $(names "$B")"
# the checkpoint did happen: the same stream cut short keeps a token
head -c 80000000 "$TESTDIR/inc" | cb recv -s -F bk 2>/dev/null && fail "a cut receive succeeded"
tok=$(prop receive_resume_token bk)
[ -n "$tok" ] && [ "$tok" != - ] || fail "no token after a cut: the group never reached a checkpoint"
# a refusal of a receive that resumes an earlier one keeps that state
ca send -t "$tok" | cb recv -s bk 2>/dev/null && fail "resume without -F over bk@local succeeded"
[ "$(prop receive_resume_token bk)" != - ] || fail "a refused resume dropped the earlier partial state"
ca send -t "$tok" | cb recv -s -F bk || fail "resume with -F did not converge"
cb list -H -o name bk@b >/dev/null || fail "bk@b missing after the resume"
# an incremental into a dataset that does not exist: nothing is created
fails_with 1 "incremental source .* is not on the target" cb recv -s newds <"$TESTDIR/inc"
cb list newds >/dev/null 2>&1 && fail "a refused incremental created newds"
# ... nor, with -e, the parents of the dataset it would have received
fails_with 1 "incremental source .* is not on the target" cb recv -s -e x/y <"$TESTDIR/inc"
cb list x >/dev/null 2>&1 && fail "a refused -e incremental left the parents it made: $(names "$B")"

# 3. the state lives with its dataset
ca send tank@b >"$TESTDIR/full" || fail "send tank@b"
second_store
head -c 30000000 "$TESTDIR/full" | cb recv -s part 2>/dev/null && fail "cut receive succeeded"
[ "$(prop inconsistent part)" = on ] || fail "no partial state after a cut"
ok cb destroy part
ca send tank@a | cb recv part || fail "another stream into a destroyed partial dataset's name"
cb recv -A part 2>/dev/null && fail "recv -A found state after a complete receive"
head -c 30000000 "$TESTDIR/full" | cb recv -s moved 2>/dev/null && fail "cut receive succeeded"
ok cb rename moved renamed
[ "$(prop inconsistent renamed)" = on ] || fail "the partial state did not follow the rename"
tok=$(prop receive_resume_token renamed)
ca send -t "$tok" | cb recv -s renamed || fail "resume into the renamed dataset"
cb list -H -o name renamed@b >/dev/null || fail "renamed@b missing after the resume"
ok cb create moved
[ "$(prop inconsistent moved)" = off ] || fail "a new dataset under the old name shows partial state"
# -e: the state is on backup/tank, the dataset received, and a receive of
# another dataset under backup is not refused
second_store
ok cb create backup
head -c 30000000 "$TESTDIR/full" | cb recv -s -e backup 2>"$TESTDIR/err" && fail "cut -e receive succeeded"
grep -q "backup/tank: partial state kept" "$TESTDIR/err" || fail "the hint does not name backup/tank: $(cat "$TESTDIR/err")"
[ "$(prop inconsistent backup)" = off ] || fail "the partial state went to the target backup"
[ "$(prop inconsistent backup/tank)" = on ] || fail "backup/tank holds no partial state"
ca send pool/home@1 | cb recv -e backup || fail "a receive of another dataset under backup was refused"
tok=$(prop receive_resume_token backup/tank)
ca send -t "$tok" | cb recv -s -e backup || fail "resume with -e"
cb list -H -o name backup/tank@b >/dev/null || fail "backup/tank@b missing after the -e resume"
[ "$(prop inconsistent backup/tank)" = off ] || fail "backup/tank still partial after the resume"

# a stream whose top is the target, writing into backup/home, which holds
# another stream's partial state: refused, as zfs refuses a dataset with
# %recv state, and the state stays
head -c 20000000 /dev/urandom >"$SRC/home/data"
ok ca snapshot -r pool@2
ca send -R pool/home@2 >"$TESTDIR/homeR" && ca send -R pool@2 >"$TESTDIR/poolR" || fail "send -R"
second_store
ok cb create backup
head -c 10000000 "$TESTDIR/homeR" | cb recv -s -d backup 2>/dev/null && fail "cut -d receive succeeded"
[ "$(prop inconsistent backup/home)" = on ] || fail "backup/home holds no partial state"
fails_with 1 "backup/home: destination contains partially-complete state" cb recv -s -d backup <"$TESTDIR/poolR"
[ "$(prop inconsistent backup/home)" = on ] || fail "the refusal dropped backup/home's state"
ok cb recv -A backup/home
ok cb recv -s -d backup <"$TESTDIR/poolR"

# a -d receive cut by an older version kept its state on the target
# (backup); the new version takes it over and the old token resumes.
# Made here by moving a fresh state row where the older version put it
# (and dropping meta.dataset_id_max, which an older version did not
# keep: the resume's backup/home takes the id of the row deleted here
# again, and with it the snapshots left under that id).
second_store
ok cb create backup
head -c 10000000 "$TESTDIR/homeR" | cb recv -s -d backup 2>/dev/null && fail "cut -d receive succeeded"
tok=$(prop receive_resume_token backup/home)
sqlite3 "$B/catalog.db" "UPDATE recvstate SET dataset='backup' WHERE dataset='backup/home';
	DELETE FROM dataset WHERE name='backup/home'; DELETE FROM meta WHERE key='dataset_id_max'" ||
	fail "making an old-style state"
[ "$(prop inconsistent backup)" = on ] || fail "the old-style state is not on backup"
ca send -t "$tok" | cb recv -s -d backup || fail "an older version's -d token does not resume"
cb list -H -o name backup/home@2 >/dev/null || fail "backup/home@2 missing after the legacy resume"
[ "$(prop inconsistent backup)" = off ] || fail "the old-style state stayed on backup"

# a row an older version's destroy left behind counts for nothing
sqlite3 "$B/catalog.db" "INSERT INTO recvstate(dataset, token, state, idx) VALUES('ghost', '$tok', '', x'')" ||
	fail "planting a stale row"
ca send tank@b | cb recv ghost || fail "a stale row blocked a receive into ghost"
[ "$(prop inconsistent ghost)" = off ] || fail "ghost inherited the stale row"
done_test
