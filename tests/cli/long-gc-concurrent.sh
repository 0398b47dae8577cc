#!/bin/bash
# The GC-during-backups test of t0610-gc-concurrent.sh for 10 minutes
# (run by `make check-long`).
DURATION=${DURATION:-600} exec bash "$(dirname "$0")/t0610-gc-concurrent.sh"
