#!/bin/bash
# Manual pages: every page in man/ renders without warnings, every verb of
# cli/main.c has a page, and every option the code accepts (getopt strings
# and long options of cli/cmd_*.c) is documented in its verb's page.
. "$(dirname "$0")/lib.sh"
SRC=${CAIRN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
for tool in scdoc man; do
	command -v $tool >/dev/null || {
		[ "${CI:-}" = true ] && { echo "FAIL: $tool missing under CI"; exit 1; }
		echo "$tool is not installed (scripts/deps.sh installs it)"
		exit 77
	}
done

# 1. Each page builds and renders without warnings.
mkdir -p "$TESTDIR/man"
for f in "$SRC"/man/*.scd; do
	out=$TESTDIR/man/$(basename "$f" .scd)
	scdoc <"$f" >"$out" 2>"$TESTDIR/err" || { fail "$(basename "$f"): scdoc: $(cat "$TESTDIR/err")"; continue; }
	w=$(MANWIDTH=80 LC_ALL=C man --warnings -l "$out" 2>&1 >/dev/null)
	[ -z "$w" ] || fail "$(basename "$f"): man warnings: $w"
	MANWIDTH=80 LC_ALL=C man -l "$out" 2>/dev/null | grep -q '^NAME' || fail "$(basename "$f"): renders no NAME section"
done
[ -f "$TESTDIR/man/cairn.8" ] || fail "no cairn(8)"
[ -f "$TESTDIR/man/cairn-props.7" ] || fail "no cairn-props(7)"

# 2 and 3. Verbs and options, read from the sources.
python3 - "$SRC" <<'PY' || fail "verbs or options missing from the manual pages (listed above)"
import glob, os, re, sys
src = sys.argv[1]
main = open(os.path.join(src, "cli/main.c")).read()
verbs = re.findall(r'\{"([a-z-]+)", (cmd_[a-z_]+), "', main)
page = lambda v: os.path.join(src, "man", "cairn-%s.8.scd" % v)
bad = 0
by_fn = {}
for v, fn in verbs:
    by_fn.setdefault(fn, []).append(v)
documented = {}
for fn, vs in by_fn.items():
    have = [v for v in vs if os.path.exists(page(v))]
    if not have:
        print("missing page: man/cairn-%s.8.scd (verb '%s', %s)" % (vs[0], vs[0], fn))
        bad += 1
    documented[fn] = have
for f in sorted(glob.glob(os.path.join(src, "cli/cmd_*.c"))):
    text = open(f).read()
    fns = re.findall(r'^int (cmd_[a-z_]+)\(int argc', text, re.M)
    shorts = set()
    for s in re.findall(r'getopt(?:_long)?\(argc, argv, "([^"]*)"', text):
        shorts |= {c for c in s if c not in ":+-"}
    longs = set(re.findall(r'\{"([a-z][a-z-]*)", *(?:no|required|optional)_argument', text))
    for fn in fns:
        for v in documented.get(fn, []):
            doc = open(page(v)).read()
            for c in sorted(shorts):
                if "*-%s*" % c not in doc:
                    print("cairn-%s(8): option -%s (%s) is not documented" % (v, c, os.path.basename(f)))
                    bad += 1
            for l in sorted(longs):
                if "*--%s*" % l not in doc:
                    print("cairn-%s(8): option --%s (%s) is not documented" % (v, l, os.path.basename(f)))
                    bad += 1
sys.exit(1 if bad else 0)
PY

# 4. Each page's SYNOPSIS names the options of its verb's usage text
# (VERB --help: the "usage:" line and its indented continuation lines),
# no more and no fewer.
python3 - "$SRC" "$CAIRN" <<'PY' || fail "SYNOPSIS and usage differ (listed above)"
import os, re, subprocess, sys
src, cairn = sys.argv[1], sys.argv[2]
main = open(os.path.join(src, "cli/main.c")).read()
def opts(text):
    s = set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*)', text))
    for m in re.findall(r'(?<![\w-])-([A-Za-z]+)', text):
        s |= {'-' + c for c in m}
    return s
bad = 0
for v in re.findall(r'\{"([a-z-]+)", cmd_[a-z_]+, "', main):
    page = os.path.join(src, "man", "cairn-%s.8.scd" % v)
    if not os.path.exists(page):
        continue
    m = re.search(r'^# SYNOPSIS\n(.*?)^# ', open(page).read(), re.S | re.M)
    syn = re.sub(r'[*_\\]', '', m.group(1) if m else '').replace('[-s store]', '')
    lines = subprocess.run([cairn, v, '--help'], capture_output=True, text=True).stdout.split('\n')
    usage = lines[0]
    for l in lines[1:]:
        if not l.startswith('    '):
            break
        usage += '\n' + l
    su, ss = opts(usage), opts(syn)
    for o in sorted(su - ss):
        print("cairn-%s(8): SYNOPSIS lacks %s (in 'cairn %s --help')" % (v, o, v))
        bad += 1
    for o in sorted(ss - su):
        print("cairn-%s(8): SYNOPSIS has %s, 'cairn %s --help' does not" % (v, o, v))
        bad += 1
sys.exit(1 if bad else 0)
PY

done_test
