/* test_names.c - cairn_name_check: what it accepts, what it rejects, and
 * that the reason names the offending character or component. */
#include <stdio.h>
#include <string.h>

#include "cairn.h"
#include "unit.h"

typedef struct {
	const char *name;
	bool with_snap;
	bool ok;
	const char *why; /* a substring the reason must contain (rejects only) */
} name_case;

static const name_case cases[] = {
	/* plain dataset names */
	{"tank", false, true, NULL},
	{"tank/www/logs", false, true, NULL},
	{"a", false, true, NULL},
	{"A-Z_a.z:0-9", false, true, NULL},
	{"pool/.hidden", false, true, NULL},
	{"pool/...", false, true, NULL},
	{"pool/..x", false, true, NULL},
	{"pool/x..", false, true, NULL},
	{"1/2/3/4/5/6/7/8/9", false, true, NULL},
	{"tank", true, true, NULL},
	/* a leading letter or digit, as zfs wants of pool names (issue 10) */
	{"-", false, false, "letter or digit"},
	{"-o", false, false, "letter or digit"},
	{"-rf", false, false, "letter or digit"},
	{"-rf@s", true, false, "letter or digit"},
	{"_x", false, false, "letter or digit"},
	{":x/y", false, false, "letter or digit"},
	{"9lives", false, true, NULL},
	{"a/-x", false, true, NULL},
	/* snapshots and bookmarks, only with with_snap */
	{"tank@snap", true, true, NULL},
	{"tank/www@2026-11-30_12:00", true, true, NULL},
	{"tank#bm", true, true, NULL},
	{"tank/a#b.c", true, true, NULL},
	{"tank@snap", false, false, "'@'"},
	{"tank#bm", false, false, "'#'"},
	{"tank@a@b", true, false, "'@'"},
	{"tank@a#b", true, false, "'#'"},
	{"tank#a@b", true, false, "'@'"},
	{"tank@a/b", true, false, "'/'"},
	{"tank#a/b", true, false, "'/'"},
	{"tank@", true, false, "empty"},
	{"tank#", true, false, "empty"},
	{"@snap", true, false, "empty"},
	{"tank/@snap", true, false, "empty"},
	{"tank@.", true, false, "'.'"},
	{"tank@..", true, false, "'..'"},
	{"tank@...", true, true, NULL},
	{"tank/../x@s", true, false, "'..'"},
	{"tank@a b", true, false, "' '"},
	/* empty components, leading and trailing slashes */
	{"", false, false, "empty"},
	{"", true, false, "empty"},
	{"/", false, false, "empty"},
	{"/tank", false, false, "empty"},
	{"tank/", false, false, "empty"},
	{"tank//www", false, false, "empty"},
	{"tank/www/", true, false, "empty"},
	/* "." and ".." components */
	{".", false, false, "'.'"},
	{"..", false, false, "'..'"},
	{"tank/.", false, false, "'.'"},
	{"tank/..", false, false, "'..'"},
	{"./tank", false, false, "'.'"},
	{"tank/../etc", false, false, "'..'"},
	/* bad characters are named */
	{"tank www", false, false, "' '"},
	{"tank/w$w", false, false, "'$'"},
	{"tank/w*", false, false, "'*'"},
	{"tank\\x", false, false, "'\\'"},
	{"tank%", false, false, "'%'"},
	{"tank+1", false, false, "'+'"},
	{"t,ank", false, false, "','"},
	{"tank'", false, false, "'''"},
	{"tank\"", false, false, "'\"'"},
	{"tank\t", false, false, "0x09"},
	{"tank\n", false, false, "0x0a"},
	{"tank\x01", false, false, "0x01"},
	{"tank\x7f", false, false, "0x7f"},
	{"caf\xc3\xa9", false, false, "0xc3"},
	{"tank/\xff", false, false, "0xff"},
	{"tank@sn\xe2\x82\xacp", true, false, "0xe2"},
};

/* A name of exactly len bytes of valid characters: "aaa.../aaa...". */
static void long_name(char *buf, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix);
	memset(buf, 'a', len - sl);
	for (size_t i = 100; i < len - sl - 1; i += 100)
		buf[i] = '/'; /* several components, none empty */
	memcpy(buf + len - sl, suffix, sl);
	buf[len] = 0;
}

static void test_table(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const name_case *c = &cases[i];
		char why[256] = "untouched";
		int r = cairn_name_check(c->name, c->with_snap, why, sizeof(why));
		if (c->ok) {
			CHECK_EQ(r, 0);
			if (r != 0)
				fprintf(stderr, "  rejected \"%s\" (with_snap %d): %s\n", c->name,
					c->with_snap, why);
		} else {
			CHECK_EQ(r, CAIRN_EBADNAME);
			bool named = strstr(why, c->why) != NULL;
			CHECK(named);
			if (r != CAIRN_EBADNAME || !named)
				fprintf(stderr, "  \"%s\" (with_snap %d): r=%d why=\"%s\", want \"%s\"\n",
					c->name, c->with_snap, r, why, c->why);
		}
		/* The result never depends on whether a reason was asked for. */
		CHECK_EQ(cairn_name_check(c->name, c->with_snap, NULL, 0), r);
		CHECK_EQ(cairn_name_check(c->name, c->with_snap, NULL, 100), r);
	}
}

static void test_lengths(void)
{
	char buf[600], why[256];
	long_name(buf, 255, "");
	CHECK_EQ(strlen(buf), 255);
	CHECK_EQ(cairn_name_check(buf, false, why, sizeof(why)), 0);
	long_name(buf, 256, "");
	CHECK_EQ(cairn_name_check(buf, false, why, sizeof(why)), CAIRN_EBADNAME);
	CHECK(strstr(why, "256") != NULL);
	CHECK(strstr(why, "255") != NULL);
	long_name(buf, 500, "");
	CHECK_EQ(cairn_name_check(buf, false, why, sizeof(why)), CAIRN_EBADNAME);

	/* The limit covers the whole snapshot name, as in ZFS. */
	long_name(buf, 255, "@snap");
	CHECK_EQ(cairn_name_check(buf, true, why, sizeof(why)), 0);
	long_name(buf, 256, "@snap");
	CHECK_EQ(cairn_name_check(buf, true, why, sizeof(why)), CAIRN_EBADNAME);
	long_name(buf, 255, "#bookmark");
	CHECK_EQ(cairn_name_check(buf, true, why, sizeof(why)), 0);
	long_name(buf, 256, "#bookmark");
	CHECK_EQ(cairn_name_check(buf, true, why, sizeof(why)), CAIRN_EBADNAME);

	/* One 255-byte component is fine too. */
	memset(buf, 'x', 255);
	buf[255] = 0;
	CHECK_EQ(cairn_name_check(buf, false, NULL, 0), 0);
	buf[254] = '/';
	CHECK_EQ(cairn_name_check(buf, false, NULL, 0), CAIRN_EBADNAME); /* trailing '/' */
}

/* Every single byte as a one-character component: exactly the documented
 * set is accepted. */
static void test_every_byte(void)
{
	for (int c = 1; c < 256; c++) {
		char name[8];
		snprintf(name, sizeof(name), "a%cb", c);
		bool want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' || c == '-' ||
			    c == '/';
		int r = cairn_name_check(name, false, NULL, 0);
		CHECK_EQ(r, want ? 0 : CAIRN_EBADNAME);
		if ((r == 0) != want)
			fprintf(stderr, "  byte 0x%02x: r=%d\n", c, r);
		/* with_snap adds exactly '@' and '#'. */
		bool want_snap = want || c == '@' || c == '#';
		r = cairn_name_check(name, true, NULL, 0);
		CHECK_EQ(r, want_snap ? 0 : CAIRN_EBADNAME);
		if ((r == 0) != want_snap)
			fprintf(stderr, "  byte 0x%02x with_snap: r=%d\n", c, r);
	}
}

/* A short buffer gets a truncated, NUL-terminated reason; never an overflow. */
static void test_short_why(void)
{
	char why[8];
	memset(why, 'X', sizeof(why));
	CHECK_EQ(cairn_name_check("tank www", false, why, 4), CAIRN_EBADNAME);
	CHECK(memchr(why, 0, 4) != NULL);
	CHECK_EQ(why[4], 'X');
	memset(why, 'X', sizeof(why));
	CHECK_EQ(cairn_name_check("tank@a", false, why, 1), CAIRN_EBADNAME);
	CHECK_EQ(why[0], 0);
	CHECK_EQ(why[1], 'X');
}

int main(void)
{
	test_table();
	test_lengths();
	test_every_byte();
	test_short_why();
	UNIT_DONE();
}
