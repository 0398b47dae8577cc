/* test_exclude.c - the gitignore-style matcher, rule by rule, without a
 * file system walk (exclude_enter is given a directory with no
 * .cairnignore). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/exclude.h"
#include "unit.h"

/* Does list exclude path (entry name = last component)? */
static int excluded(const char *list, const char *path, bool isdir)
{
	excl_t *x;
	char why[256];
	if (exclude_new(list, false, false, &x, why, sizeof(why)) < 0)
		return -1;
	const char *slash = strrchr(path, '/');
	bool r = exclude_match(x, path, slash ? slash + 1 : path, isdir);
	exclude_free(x);
	return r;
}

/* exclude_any: whether anything can be excluded where the walk is.  A
 * scratch tree: d/.cairnignore with one pattern, e/.cairnignore with only
 * a comment, c/CACHEDIR.TAG. */
static void test_any(void)
{
	char root[] = "/tmp/cairn-excl-XXXXXX", p[128], why[256];
	CHECK(mkdtemp(root) != NULL);
	const char *dirs[] = {"d", "e", "c"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
		CHECK_EQ(mkdir(p, 0755), 0);
	}
	const char *files[][2] = {{"d/.cairnignore", "*.tmp\n"},
				  {"e/.cairnignore", "# nothing\n"},
				  {"c/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55"}};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", root, files[i][0]);
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		CHECK(fd >= 0 && write(fd, files[i][1], strlen(files[i][1])) > 0);
		close(fd);
	}
	excl_t *x;
	unsigned bad_line;
	CHECK(!exclude_any(NULL));
	CHECK_EQ(exclude_new("*.o", false, true, &x, why, sizeof(why)), 0);
	CHECK(exclude_any(x)); /* a property pattern applies everywhere */
	exclude_free(x);
	CHECK_EQ(exclude_new("", true, true, &x, why, sizeof(why)), 0);
	int top = open(root, O_RDONLY | O_DIRECTORY);
	CHECK_EQ(exclude_enter(x, top, "", NULL, &bad_line, why, sizeof(why)), 0);
	CHECK(!exclude_any(x));
	const bool want[] = {true, false, true};
	for (size_t i = 0; i < 3; i++) {
		int fd = openat(top, dirs[i], O_RDONLY | O_DIRECTORY);
		CHECK_EQ(exclude_enter(x, fd, dirs[i], NULL, &bad_line, why, sizeof(why)), 0);
		CHECK_EQ(exclude_any(x), want[i]);
		exclude_leave(x);
		CHECK(!exclude_any(x)); /* the rules end with their directory */
		close(fd);
	}
	exclude_leave(x);
	exclude_free(x);
	close(top);
	snprintf(p, sizeof(p), "rm -rf %s", root);
	CHECK_EQ(system(p), 0);
}

static bool bad(const char *list)
{
	char why[256];
	return exclude_list_check(list, why, sizeof(why)) < 0;
}

int main(void)
{
	/* floating vs anchored */
	CHECK_EQ(excluded("*.o", "a.o", false), 1);
	CHECK_EQ(excluded("*.o", "x/y/a.o", false), 1);
	CHECK_EQ(excluded("/top", "top", false), 1);
	CHECK_EQ(excluded("/top", "x/top", false), 0);
	CHECK_EQ(excluded("x/*.c", "x/a.c", false), 1);
	CHECK_EQ(excluded("x/*.c", "y/x/a.c", false), 0); /* inner slash anchors */
	CHECK_EQ(excluded("x/*.c", "x/y/a.c", false), 0); /* '*' stays in one name */
	/* ? and classes */
	CHECK_EQ(excluded("q?.txt", "q1.txt", false), 1);
	CHECK_EQ(excluded("q?.txt", "q10.txt", false), 0);
	CHECK_EQ(excluded("[ab].dat", "b.dat", false), 1);
	CHECK_EQ(excluded("[!ab].dat", "b.dat", false), 0);
	CHECK_EQ(excluded("[!ab].dat", "c.dat", false), 1);
	/* ** */
	CHECK_EQ(excluded("**/logs", "a/b/logs", true), 1);
	CHECK_EQ(excluded("**/logs", "logs", true), 1);
	CHECK_EQ(excluded("a/**/z", "a/z", false), 1);
	CHECK_EQ(excluded("a/**/z", "a/b/c/z", false), 1);
	CHECK_EQ(excluded("a/**", "a/b", false), 1);
	CHECK_EQ(excluded("a/**", "a", true), 0); /* the inside, not the dir */
	/* directories only */
	CHECK_EQ(excluded("build/", "build", true), 1);
	CHECK_EQ(excluded("build/", "build", false), 0);
	CHECK_EQ(excluded("build/", "src/build", true), 1);
	/* negation: the last match decides */
	CHECK_EQ(excluded("*.log,!keep.log", "keep.log", false), 0);
	CHECK_EQ(excluded("*.log,!keep.log", "other.log", false), 1);
	CHECK_EQ(excluded("!keep.log,*.log", "keep.log", false), 1);
	/* escapes: a literal comma, star, bang and bracket */
	CHECK_EQ(excluded("a\\,b", "a,b", false), 1);
	CHECK_EQ(excluded("\\*", "x", false), 0);
	CHECK_EQ(excluded("\\*", "*", false), 1);
	CHECK_EQ(excluded("\\!x", "!x", false), 1);
	CHECK_EQ(excluded("\\[x]", "[x]", false), 1);
	/* dot files are matched by * (gitignore does not special-case them) */
	CHECK_EQ(excluded("*", ".hidden", false), 1);
	/* spaces around list items are trimmed */
	CHECK_EQ(excluded(" *.o , *.a ", "x.a", false), 1);
	CHECK_EQ(excluded("", "x", false), 0);
	/* bad syntax */
	CHECK(bad("[abc"));
	CHECK(bad("a,,b"));
	CHECK(bad("a,"));
	CHECK(bad("!"));
	CHECK(bad("/"));
	CHECK(bad("a//b"));
	CHECK(bad("a\\"));
	CHECK(!bad("[]a]"));
	CHECK(!bad("a/b/"));
	CHECK(!bad(""));
	test_any();
	UNIT_DONE();
}
