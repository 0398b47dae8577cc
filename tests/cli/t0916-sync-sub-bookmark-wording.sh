#!/bin/bash
# sync -R into a destination with nothing of its own, whose datasets
# under it hold only unrelated bookmarks, is refused naming a bookmark as
# a bookmark, as the refusal about the top itself does ("has bookmarks
# (eg. f#x)").  Before, it said "datasets under it do (eg. d/k#x)", with
# "snapshots" before it: a bookmark called a snapshot.
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
ok cb create -o source="$S" d
ok cb create -o source="$S/k" d/k
ok cb snapshot d/k@x
ok cb bookmark d/k@x 'd/k#x'
ok cb destroy d/k@x
fails_with 1 "d: has no snapshots of its own, but datasets under it have bookmarks (eg. d/k#x), none in common with p" \
	ca sync -R p "$B:d"
done_test
