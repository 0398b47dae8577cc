#!/bin/bash
# Excludes: the exclude property (gitignore rules), exclude_caches,
# .cairnignore files, inheritance, bad syntax at set time, and the restore
# holding exactly the expected tree.
. "$(dirname "$0")/lib.sh"
new_store
S=$TESTDIR/src
mk() { mkdir -p "$(dirname "$S/$1")" && echo "$1" >"$S/$1"; }
for f in a.o keep.c sub/b.o sub/c.c build/x sub/build logs/x.log logs/important.log \
	top.txt sub/top.txt doc/a.tmp doc/x/y/b.tmp doc/keep q1.txt q10.txt a.dat c.dat \
	cache/data cache2/data sub2/old.bak sub2/important.bak sub2/only sub2/deeper/only \
	sub2/deeper/x.bak 'comma,name' space/file; do
	mk "$f"
done
printf 'Signature: 8a477f597d28d172789f06886806bc55\n# a cache\n' >"$S/cache/CACHEDIR.TAG"
printf 'Signature: not the right one\n' >"$S/cache2/CACHEDIR.TAG"
printf '# comment\n\n*.bak\n!important.bak\n/only\n' >"$S/sub2/.cairnignore"

# Expected paths after the rules below (sorted, relative).
expected() {
	cat <<'EOF'
.
./cache
./cache/CACHEDIR.TAG
./cache2
./cache2/CACHEDIR.TAG
./cache2/data
./doc
./doc/keep
./doc/x
./doc/x/y
./keep.c
./logs
./logs/important.log
./q10.txt
./space
./space/file
./sub
./sub/build
./sub/c.c
./sub/top.txt
./sub2
./sub2/.cairnignore
./sub2/deeper
./sub2/deeper/only
./sub2/important.bak
./c.dat
EOF
}
listing() { (cd "$1" && find . | LC_ALL=C sort); }

ok cairn create -o source="$S" ds
ok cairn set 'exclude=*.o, build/, logs/*.log, !logs/important.log, /top.txt, doc/**/*.tmp, q?.txt, [ab].dat, comma\,name' ds
ok cairn set exclude_caches=on ds
past_racy_tick
err=$(cairn snapshot -v ds@1 2>&1) || fail "snapshot: $err"
echo "$err" | grep -q '^14 paths excluded' || fail "snapshot -v excluded count: $err"
ok cairn restore ds@1 "$TESTDIR/r1"
exp=$(expected | LC_ALL=C sort)
got=$(listing "$TESTDIR/r1")
[ "$got" = "$exp" ] || { fail "restored tree"; diff <(echo "$exp") <(echo "$got") >&2; }
# Content and metadata of what was kept are intact.
for f in keep.c sub/c.c logs/important.log sub2/important.bak cache/CACHEDIR.TAG; do
	cmp -s "$S/$f" "$TESTDIR/r1/$f" || fail "content of $f"
done

# A live diff applies the same rules: nothing changed, nothing to report.
out=$(cairn diff ds@1) || fail "live diff"
[ -z "$out" ] || fail "live diff reports excluded files: $out"

# .cairnignore can be turned off; exclude_caches off keeps the cache.
ok cairn set cairnignore=off exclude_caches=off ds
ok cairn snapshot ds@2
ok cairn restore ds@2 "$TESTDIR/r2"
[ -f "$TESTDIR/r2/sub2/old.bak" ] || fail "cairnignore=off still ignores sub2/old.bak"
[ -f "$TESTDIR/r2/cache/data" ] || fail "exclude_caches=off still drops cache/data"
[ ! -e "$TESTDIR/r2/a.o" ] || fail "exclude property lost with cairnignore=off"

# Inheritance: a child dataset gets the parent's patterns.
P=$TESTDIR/parent
mkdir -p "$P/c/d"
echo 1 >"$P/c/d/x.tmp"
echo 2 >"$P/c/d/y.txt"
ok cairn create -o source="$P" par
ok cairn set 'exclude=*.tmp' par
ok cairn create par/c
src=$(cairn get -H -o value,source exclude par/c) || fail "get exclude"
[ "$src" = "$(printf '*.tmp\tinherited from par')" ] || fail "inherited exclude: '$src'"
ok cairn snapshot par/c@1
ok cairn restore par/c@1 "$TESTDIR/r3"
[ "$(listing "$TESTDIR/r3")" = "$(printf '.\n./d\n./d/y.txt')" ] || fail "inherited exclude not applied: $(listing "$TESTDIR/r3")"
# A local value overrides; inherit brings the parent's back.
ok cairn set 'exclude=*.txt' par/c
ok cairn snapshot par/c@2
ok cairn restore par/c@2 "$TESTDIR/r4"
[ "$(listing "$TESTDIR/r4")" = "$(printf '.\n./d\n./d/x.tmp')" ] || fail "local exclude: $(listing "$TESTDIR/r4")"
ok cairn inherit exclude par/c
[ "$(cairn get -H -o value exclude par/c)" = '*.tmp' ] || fail "inherit exclude"

# Bad syntax fails at set time, naming the pattern, and changes nothing.
fails_with 1 "pattern '\[abc': unterminated \[" cairn set 'exclude=[abc' ds
fails_with 1 "empty pattern" cairn set 'exclude=a,,b' ds
fails_with 1 "pattern '!': matches nothing" cairn set 'exclude=!' ds
fails_with 1 "lone backslash" cairn set 'exclude=a\' ds
fails_with 1 "exclude_caches=maybe: expected on or off" cairn set exclude_caches=maybe ds
[ "$(cairn get -H -o value exclude_caches ds)" = off ] || fail "bad set changed exclude_caches"
[ "$(cairn get -H -o value exclude ds)" = '*.o, build/, logs/*.log, !logs/important.log, /top.txt, doc/**/*.tmp, q?.txt, [ab].dat, comma\,name' ] ||
	fail "bad set changed exclude"

# A bad line in a .cairnignore is reported and skipped; the rest applies.
printf '[oops\n*.bak\n' >"$S/sub2/.cairnignore"
ok cairn set cairnignore=on ds
err=$(cairn snapshot ds@3 2>&1) || fail "snapshot with a bad .cairnignore line: $err"
echo "$err" | grep -q 'sub2/.cairnignore: line 1: pattern .\[oops.: unterminated' || fail "bad line not reported: $err"
ok cairn restore ds@3 "$TESTDIR/r5"
[ ! -e "$TESTDIR/r5/sub2/old.bak" ] || fail "good lines after a bad one ignored"

# Changing the rules keeps the rest reused: a large file is not read again.
head -c 4000000 /dev/urandom >"$S/big.bin"
past_racy_tick
ok cairn snapshot ds@4
ok cairn set 'exclude=*.o, *.c' ds
out=$(cairn snapshot -v ds@5 2>&1) || fail "snapshot after an exclude change"
read_b=$(echo "$out" | sed -n 's/^[0-9]* files, \([^ ]*\) read,.*/\1/p')
case "$read_b" in
*B | *K) ;;
*) fail "exclude change re-read data: $out" ;;
esac

done_test
