#!/bin/bash
# Every thread the library or the command starts goes through thread_start
# (lib/util.c), which keeps the signals that stop a command away from it:
# a bare pthread_create would let SIGINT run gc's or recv's handler on a
# helper (test_threads checks thread_start itself).
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
bare=$(grep -rn --include='*.c' 'pthread_create(' "$ROOT/lib" "$ROOT/cli" | grep -v "^$ROOT/lib/util.c:")
[ -z "$bare" ] || fail "threads started without thread_start: $bare"
grep -q 'pthread_create(' "$ROOT/lib/util.c" || fail "thread_start no longer calls pthread_create: the check above checks nothing"
done_test
