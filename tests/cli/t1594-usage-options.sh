#!/bin/bash
# Usage texts against the options the verbs accept: every verb answers
# --help and -h (exit 0, usage on stdout); every option a verb's code accepts
# (its getopt string and long option table, read from cli/cmd_*.c) is
# named in its usage; and every option its usage or manual page OPTIONS
# names is accepted (run, getopt must not call it invalid).
. "$(dirname "$0")/lib.sh"
SRC=${CAIRN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
verbs=$(sed -n 's/^\t{"\([a-z-]*\)", cmd_[a-z_]*, ".*/\1/p' "$SRC/cli/main.c")
[ -n "$verbs" ] || fail "no verbs read from cli/main.c"

# 1. VERB --help, and -h alone (cairn(8): every verb answers both; diff
# and send take -h as help only alone): the usage on stdout, nothing on
# stderr, exit 0.
for v in $verbs; do
	for h in --help -h; do
		out=$(cairn -s "$TESTDIR/none" $v $h 2>"$TESTDIR/err")
		rc=$?
		[ $rc -eq 0 ] || fail "$v $h: exit $rc"
		[ -s "$TESTDIR/err" ] && fail "$v $h: stderr: $(head -2 "$TESTDIR/err")"
		case $out in
		"usage: cairn $v "* | "usage: cairn recv "*) ;;
		*) fail "$v $h: no usage on stdout (got: ${out%%$'\n'*})" ;;
		esac
	done
done

# 2 and 3, in one pass over the verbs.
python3 - "$SRC" "$CAIRN" "$TESTDIR/none" <<'PY' || fail "usage texts and accepted options differ (listed above)"
import glob, os, re, subprocess, sys
src, cairn, store = sys.argv[1:4]
main = open(os.path.join(src, "cli/main.c")).read()
verbs = re.findall(r'^\t\{"([a-z-]+)", (cmd_[a-z_]+), "', main, re.M)
bad = 0

def say(msg):
    global bad
    print(msg)
    bad += 1

def named(text):
    """The options a text names: -abc is -a -b -c, --long as is."""
    s = set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*)', text))
    for m in re.findall(r'(?<![\w-])-([A-Za-z]+)', text):
        s |= {'-' + c for c in m}
    return s

def accepted_in_code(text):
    """getopt strings and long option tables of one cmd_*.c.  -h and
    --help are left out where they ask for help (cairn(8) says every
    verb answers them); diff -h and send -h are options and stay."""
    shorts = set()
    for s in re.findall(r'getopt(?:_long)?\(argc, argv, "([^"]*)"', text):
        shorts |= {c for c in s if c not in ":+-"}
    longs = set(re.findall(r'\{"([a-z][a-z-]*)", *(?:no|required|optional)_argument', text))
    if "json_listing_opts" in text:
        longs |= {"json", "json-int", "help"}
    help_h = "json_listing_opts" in text or re.search(r'\{"help", no_argument, 0, \'h\'\}', text)
    if help_h:
        shorts.discard('h')
    longs.discard("help")
    return {'-' + c for c in shorts} | {'--' + l for l in longs}

def man_options(v):
    page = os.path.join(src, "man", "cairn-%s.8.scd" % v)
    if not os.path.exists(page):
        return set()
    m = re.search(r'^# OPTIONS\n(.*?)^# ', open(page).read(), re.S | re.M)
    heads = [l for l in (m.group(1) if m else '').split('\n') if l.startswith('*')]
    return named(' '.join(re.findall(r'\*(--?[A-Za-z][A-Za-z-]*)\*', ' '.join(heads))))

def rejected(v, opt):
    """Whether getopt refuses opt: run on a store that does not exist, so
    that nothing is done even when the option is taken."""
    r = subprocess.run([cairn, '-s', store, v, opt], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=20)
    return re.search(r'invalid option|unrecognized option', r.stderr)

code_of = {}
for f in glob.glob(os.path.join(src, "cli/cmd_*.c")):
    text = open(f).read()
    for fn in re.findall(r'^int (cmd_[a-z_]+)\(int argc', text, re.M):
        code_of[fn] = (os.path.basename(f), accepted_in_code(text))
for v, fn in verbs:
    help_text = subprocess.run([cairn, '-s', store, v, '--help'], capture_output=True,
                               text=True).stdout
    # The usage proper: its first line and the indented lines that go on
    # with it (as t1590 reads it); the notes after it may name programs'
    # options (fusermount3 -u).
    lines = help_text.split('\n')
    proper = lines[0]
    for l in lines[1:]:
        if not l.startswith('    '):
            break
        proper += '\n' + l
    usage = named(help_text.split(' ', 2)[2] if help_text.count(' ') >= 2 else '')
    synopsis = named(proper.split(' ', 2)[2] if proper.count(' ') >= 2 else '')
    fname, code = code_of.get(fn, ('?', set()))
    # 2. What the code accepts, the usage names.
    for o in sorted(code - usage):
        say("cairn %s --help: does not name %s (accepted by %s)" % (v, o, fname))
    # 3. What the usage proper and the manual page name, the verb accepts.
    for o in sorted(synopsis | man_options(v)):
        if rejected(v, o):
            say("cairn %s: refuses %s, which its %s names" %
                (v, o, "usage" if o in synopsis else "manual page"))
sys.exit(1 if bad else 0)
PY

done_test
