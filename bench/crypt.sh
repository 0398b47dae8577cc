#!/bin/bash
# bench/crypt.sh - cost of encryption: backup and restore of one corpus by
# cairn into a plain dataset and into an encrypted one (keyformat=hex, so no
# KDF in the timing), side by side in the same run with restic (always
# encrypted) and borg (`borg init -e repokey-blake2`).  Prints seconds,
# MB/s and ratios against plain cairn.  Results go to BENCHMARKS.md
# ("Encryption").
#
# Each tool starts from an empty repository; every backup is the first one
# (all data new: hashing, compression and encryption all count), every
# restore goes to an empty directory.  Dirty data is synced before each step.
#
# Environment:
#   CAIRN_BENCH_DIR     base directory (default /var/tmp/cairn-bench-crypt)
#   CAIRN_BENCH_CORPUS  corpus directory (default: a copy of /usr/include and
#                       /usr/share/doc under the base directory, built once)
#   CAIRN_BENCH_BIN     cairn binary (default: build/cairn of this tree)
#   CAIRN_BENCH_ROUNDS  runs of each step; the best is kept (default 1)
#   CAIRN_BENCH_PEERS=0 skip restic and borg
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench-crypt}
CORPUS=${CAIRN_BENCH_CORPUS:-$BASE/corpus}
CAIRN=${CAIRN_BENCH_BIN:-$ROOT/build/cairn}
ROUNDS=${CAIRN_BENCH_ROUNDS:-1}
WORK=$BASE/work
say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
[ -x "$CAIRN" ] || die "$CAIRN: not built (make build/cairn)"
[ -x /usr/bin/time ] || die "/usr/bin/time missing (apt-get install time)"
command -v keyctl >/dev/null || die "keyctl missing (apt-get install keyutils)"

# The encrypted dataset's key is loaded into a session keyring of this run.
if [ -z "${CAIRN_BENCH_SESSION:-}" ]; then
	export CAIRN_BENCH_SESSION=1
	exec keyctl session - bash "$0" "$@"
fi
export CAIRN_KEYRING=session

if [ ! -e "$CORPUS.complete" ] && [ -z "${CAIRN_BENCH_CORPUS:-}" ]; then
	say "building corpus $CORPUS"
	rm -rf "$CORPUS" && mkdir -p "$CORPUS"
	cp -a /usr/include /usr/share/doc "$CORPUS/" 2>/dev/null || true
	touch "$CORPUS.complete"
fi
BYTES=$(find "$CORPUS" -type f -printf '%i %s\n' | sort -u -k1,1n | awk '{s+=$2} END {printf "%.0f\n", s}')
NFILES=$(find "$CORPUS" -type f | wc -l)
say "corpus: $BYTES bytes in $NFILES files"
LOAD_BEFORE=$(uptime)

rm -rf "$WORK" && mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
now_ns() { date +%s%N; }
declare -A T

# timed NAME CMD...: best wall time of ROUNDS runs, and separately the
# least CPU time (user + system, children included) and the least user
# CPU time of any run: on a shared machine CPU time is the steadier
# measure, and encryption's own cost (AES-GCM, HMAC) is all user time,
# while restore's system time (creating files) swings with the
# filesystem's state.  PREP_<NAME> (a function) runs untimed before each.
declare -A CPU USR
timed() {
	local name=$1 best="" bestcpu="" bestusr="" t0 t1 i
	shift
	for i in $(seq 1 "$ROUNDS"); do
		if declare -F "prep_$name" >/dev/null; then "prep_$name"; fi
		sync
		t0=$(now_ns)
		/usr/bin/time -f '%U %S' -o "$WORK/$name.cpu" "$@" >"$WORK/$name.out" \
			2>"$WORK/$name.err" || {
			cat "$WORK/$name.err" >&2
			die "$name failed"
		}
		t1=$(now_ns)
		local s=$(((t1 - t0) / 1000000))
		local c=$(awk 'END {printf "%d", ($1 + $2) * 1000}' "$WORK/$name.cpu")
		local u=$(awk 'END {printf "%d", $1 * 1000}' "$WORK/$name.cpu")
		if [ -z "$best" ] || [ "$s" -lt "$best" ]; then best=$s; fi
		if [ -z "$bestcpu" ] || [ "$c" -lt "$bestcpu" ]; then bestcpu=$c; fi
		if [ -z "$bestusr" ] || [ "$u" -lt "$bestusr" ]; then bestusr=$u; fi
	done
	T[$name]=$best
	CPU[$name]=$bestcpu
	USR[$name]=$bestusr
	say "$name: $best ms wall, $bestcpu ms CPU, $bestusr ms user"
}
# ---- cairn, plain and encrypted ----
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/key.hex"
prep_cairn_plain_backup() {
	rm -rf "$WORK/cs" && "$CAIRN" -s "$WORK/cs" init >/dev/null &&
		"$CAIRN" -s "$WORK/cs" create -o source="$CORPUS" plain
}
prep_cairn_enc_backup() {
	rm -rf "$WORK/ce" && "$CAIRN" -s "$WORK/ce" init >/dev/null &&
		"$CAIRN" -s "$WORK/ce" create -o source="$CORPUS" -o encryption=on -o keyformat=hex \
			-o keylocation="file://$WORK/key.hex" enc
}
prep_cairn_plain_restore() { rm -rf "$WORK/r"; }
prep_cairn_enc_restore() { rm -rf "$WORK/r"; }
timed cairn_plain_backup "$CAIRN" -s "$WORK/cs" snapshot plain@1
# Every timed restore must start the same way: after the previous
# restore's tree was deleted (ext4 then scans for recently freed inodes
# while creating files, which cost up to 2x in kernel time here).  This
# untimed restore gives the first timed one a tree to delete too.
"$CAIRN" -s "$WORK/cs" restore plain@1 "$WORK/r" || die "warm-up restore failed"
timed cairn_plain_restore "$CAIRN" -s "$WORK/cs" restore plain@1 "$WORK/r"
timed cairn_enc_backup "$CAIRN" -s "$WORK/ce" snapshot enc@1
timed cairn_enc_restore "$CAIRN" -s "$WORK/ce" restore enc@1 "$WORK/r"
diff -rq --no-dereference "$CORPUS" "$WORK/r" >/dev/null || die "encrypted restore differs from the corpus"
rm -rf "$WORK/r" "$WORK/cs" "$WORK/ce"

# ---- peers ----
if [ "${CAIRN_BENCH_PEERS:-1}" != 0 ]; then
	export RESTIC_PASSWORD=bench-password BORG_PASSPHRASE=bench-password
	export BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes BORG_RELOCATED_REPO_ACCESS_IS_OK=yes
	prep_restic_backup() {
		rm -rf "$WORK/restic" "$WORK/rcache" && restic -q -r "$WORK/restic" init >/dev/null
	}
	prep_restic_restore() { rm -rf "$WORK/r"; }
	prep_borg_backup() {
		rm -rf "$WORK/borg" && borg init -e repokey-blake2 "$WORK/borg" >/dev/null 2>&1
	}
	prep_borg_restore() { rm -rf "$WORK/r" && mkdir -p "$WORK/r"; }
	timed restic_backup restic -q -r "$WORK/restic" --cache-dir "$WORK/rcache" backup "$CORPUS"
	timed restic_restore restic -q -r "$WORK/restic" --cache-dir "$WORK/rcache" restore latest \
		--target "$WORK/r"
	timed borg_backup borg create "$WORK/borg::one" "$CORPUS"
	timed borg_restore bash -c "cd '$WORK/r' && borg extract '$WORK/borg::one'"
fi

# ---- report ----
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
mbs() { awk -v n="$BYTES" -v ms="$1" 'BEGIN {printf "%.1f", n / (ms / 1000) / 1e6}'; }
printf '\n%-11s %-8s %9s %8s %8s %8s %7s %8s %7s\n' tool step wall_ms MB/s wall/pl \
	cpu_ms cpu/pl user_ms usr/pl
for tool in cairn_plain cairn_enc restic borg; do
	for step in backup restore; do
		k=${tool}_$step
		[ -n "${T[$k]:-}" ] || continue
		p=cairn_plain_$step
		printf '%-11s %-8s %9s %8s %8s %8s %7s %8s %7s\n' "${tool/cairn_/cairn-}" "$step" \
			"${T[$k]}" "$(mbs "${T[$k]}")" "$(ratio "${T[$k]}" "${T[$p]}")" \
			"${CPU[$k]}" "$(ratio "${CPU[$k]}" "${CPU[$p]}")" \
			"${USR[$k]}" "$(ratio "${USR[$k]}" "${USR[$p]}")"
	done
done
printf '\nencrypted/plain (target <= 1.10):\n'
for step in backup restore; do
	printf '  %-8s wall %s  CPU %s  user CPU %s\n' "$step" \
		"$(ratio "${T[cairn_enc_$step]}" "${T[cairn_plain_$step]}")" \
		"$(ratio "${CPU[cairn_enc_$step]}" "${CPU[cairn_plain_$step]}")" \
		"$(ratio "${USR[cairn_enc_$step]}" "${USR[cairn_plain_$step]}")"
done
printf 'rounds: %s (best of each)\nload before: %s\nload after:  %s\n' "$ROUNDS" "$LOAD_BEFORE" \
	"$(uptime)"
