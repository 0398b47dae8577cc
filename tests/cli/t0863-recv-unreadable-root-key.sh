#!/bin/bash
# A raw incremental resumed onto a copy whose encryption root's key record
# cannot be read (damaged in the catalog) fails naming the root and why,
# and keeps the partial state: only a real difference of key material is
# a refusal that drops it (t0861).  With the record mended, the same
# resume completes, with full fidelity.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
second_store
ok ca config chunk_size=65536
SRC=$TESTDIR/src
rich_tree "$SRC"
ok mkroot tank "$PASS1" -o source="$SRC"
ok ca snapshot tank@1
head -c 3000000 /dev/urandom >"$SRC/new.bin"
ok ca snapshot tank@2
cp -a "$SRC" "$TESTDIR/copy2"

ok ca send -w tank@1 >"$TESTDIR/raw1"
ok cb recv bk <"$TESTDIR/raw1"
ok ca send -w -i @1 tank@2 >"$TESTDIR/raw-i"
head -c $(($(stat -c %s "$TESTDIR/raw-i") / 2)) "$TESTDIR/raw-i" >"$TESTDIR/raw-i-cut"
cb recv -s bk <"$TESTDIR/raw-i-cut" 2>/dev/null && fail "a cut stream was received"
token=$(cb get -H -o value receive_resume_token bk)
[ "$token" != - ] || fail "the cut receive left no partial state"

db=$B/catalog.db
sel="dataset=(SELECT id FROM dataset WHERE name='bk')"
good=$(sqlite3 "$db" "SELECT hex(keyblob) FROM cryptkey WHERE $sel")
[ -n "$good" ] || fail "no key record for bk"
sqlite3 "$db" "UPDATE cryptkey SET keyblob=zeroblob(length(keyblob)) WHERE $sel" || fail "damage the key record"
ok ca send -t "$token" >"$TESTDIR/resume"
fails_with 1 "bk: the key of encryption root bk cannot be read (missing or damaged)" \
	cb recv -s bk <"$TESTDIR/resume"
[ "$(cb get -H -o value receive_resume_token bk)" = "$token" ] ||
	fail "a key record it could not read dropped the partial state"

sqlite3 "$db" "UPDATE cryptkey SET keyblob=x'$good' WHERE $sel" || fail "mend the key record"
ok cb recv -s bk <"$TESTDIR/resume"
[ "$(cb get -H -o value receive_resume_token bk)" = - ] || fail "the resume left a token"
printf '%s\n' "$PASS1" | ok cb load-key bk
ok cb restore bk@2 "$TESTDIR/out"
same_tree "$TESTDIR/copy2" "$TESTDIR/out"
ok cb verify
done_test
