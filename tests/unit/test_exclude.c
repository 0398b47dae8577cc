/* test_exclude.c - the gitignore-style matcher, rule by rule, without a
 * file system walk (exclude_enter is given a directory with no
 * .cairnignore). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "exclude.h"
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
	UNIT_DONE();
}
