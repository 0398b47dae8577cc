#!/bin/bash
# The crash test of t0400-crash.sh, 300 rounds (run by `make check-long`).
# Every listed snapshot is still restored and compared at the end.
ROUNDS=${ROUNDS:-300} exec bash "$(dirname "$0")/t0400-crash.sh"
