#!/bin/bash
# On vfat a file's ctime is its mtime (no change time is kept) while statx
# reports its real creation time as the birth time, so a file whose mtime
# was set into the past (cp -p, unzip, touch -d) was "born after its
# ctime".  The open's check for a file removed and made again (born after
# the stat's ctime, once its ctime moved) then took such a file, written
# in place between the walk's stat and the open, for another file: it was
# left out as replaced (exit 1), and one written often was never backed
# up.  Now only an object born since the walk started can be a
# replacement; this one is read (recorded with the stat's metadata, read
# again by the next backup).  An LD_PRELOAD shim shows the source's times
# as vfat does and writes the file in place at the open; a small file (read
# with its bundle) and a large one (read on its own) take different paths.
. "$(dirname "$0")/lib.sh"
new_store
build_shim fat-ctime
for kind in small big; do
	S=$TESTDIR/src-$kind
	mkdir -p "$S"
	echo data >"$S/other"
	if [ $kind = small ]; then
		echo "old small file" >"$S/$kind"
	else
		head -c 1000000 /dev/zero | tr '\0' O >"$S/$kind"
	fi
	touch -d '@981173106' "$S/$kind"
	# the shim really shows the file as vfat would: its ctime is its mtime
	vfat_ctime=$(env LD_PRELOAD="$SHIM" FAT_ROOT="$(realpath "$S")" stat -c %Z "$S/$kind")
	[ "$vfat_ctime" = 981173106 ] || fail "the shim shows $kind's ctime as $vfat_ctime, not its mtime"
	ok cairn create -o source="$S" "$kind"
	past_racy_tick
	shimmed "$kind@one" "wrote $kind" FAT_ROOT="$(realpath "$S")" WRITE_FILE=$kind
	[ $rc = 0 ] || fail "$kind@one: a file written in place before its open left out: exit $rc: $out"
	ok cairn restore "$kind@one" "$TESTDIR/r-$kind"
	[ -f "$TESTDIR/r-$kind/$kind" ] || fail "$kind@one: $kind not in the snapshot"
	[ "$(head -c 1 "$TESTDIR/r-$kind/$kind")" = W ] || fail "$kind@one: $kind not read at its open"
	# the next backup reads it again (a bundle with its neighbours), as its
	# times moved
	out=$(cairn snapshot -v -p "$kind@two" 2>&1) || fail "$kind@two: $out"
	read_b=$(echo "$out" | sed -n 's/^[0-9]* files, \([0-9]*\) read,.*/\1/p')
	[ "${read_b:-0}" -ge "$(stat -c %s "$S/$kind")" ] || fail "$kind@two read '$read_b' bytes: $out"
done
done_test
