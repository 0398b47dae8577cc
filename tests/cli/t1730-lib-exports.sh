#!/bin/bash
# libcairn.so exports the functions cairn.h declares and nothing else: an
# internal symbol (catalog_*, backend_*, buf_*...) in the dynamic symbol
# table is ABI a user can bind to by accident, and it interposes on (or is
# interposed by) a same-named symbol of the program or another library.
# The header also compiles on its own as C99 -pedantic and as C++.
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
so=$(dirname "$CAIRN")/libcairn.so
command -v nm >/dev/null && command -v cc >/dev/null || { echo "no nm or cc"; exit 77; }
[ -f "$so" ] || { echo "no $so (make all builds it)"; exit 77; }

echo '#include <cairn.h>' >"$TESTDIR/h.c"
cc -E -I"$src/include" "$TESTDIR/h.c" | grep -o '\bcairn_[a-z0-9_]*[ ]*(' | tr -d ' (' |
	LC_ALL=C sort -u >"$TESTDIR/declared"
[ "$(wc -l <"$TESTDIR/declared")" -gt 50 ] || fail "found only $(wc -l <"$TESTDIR/declared") functions in cairn.h"
nm -D --defined-only "$so" | awk '$2 ~ /^[TWDBRVi]$/ { print $3 }' | sed 's/@.*//' |
	LC_ALL=C sort -u >"$TESTDIR/exported"
extra=$(LC_ALL=C comm -13 "$TESTDIR/declared" "$TESTDIR/exported")
missing=$(LC_ALL=C comm -23 "$TESTDIR/declared" "$TESTDIR/exported")
[ -z "$extra" ] || fail "libcairn.so exports $(echo "$extra" | wc -l) symbols cairn.h does not declare: $(echo $extra | cut -c1-300)"
[ -z "$missing" ] || fail "cairn.h declares functions libcairn.so does not export: $(echo $missing)"

ok cc -std=c99 -Wall -Wextra -pedantic -Werror -I"$src/include" -c -o "$TESTDIR/h.o" "$TESTDIR/h.c"
if command -v g++ >/dev/null; then
	cp "$TESTDIR/h.c" "$TESTDIR/h.cc"
	ok g++ -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$src/include" "$TESTDIR/h.cc"
fi
done_test
