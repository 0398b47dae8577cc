/* unit.h - a minimal unit-test harness: CHECK records a failure and goes on. */
#ifndef CAIRN_UNIT_H
#define CAIRN_UNIT_H
#include <stdio.h>
#include <stdlib.h>

static int unit_failures, unit_checks;

#define CHECK(cond)                                                                 \
	do {                                                                        \
		unit_checks++;                                                      \
		if (!(cond)) {                                                      \
			unit_failures++;                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
				#cond);                                             \
		}                                                                   \
	} while (0)

#define CHECK_EQ(a, b)                                                              \
	do {                                                                        \
		long long _a = (long long)(a), _b = (long long)(b);                 \
		unit_checks++;                                                      \
		if (_a != _b) {                                                     \
			unit_failures++;                                            \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b);                \
		}                                                                   \
	} while (0)

/* Ends main(): prints a summary, exit status 1 on any failure. */
#define UNIT_DONE()                                                                 \
	do {                                                                        \
		printf("%d checks, %d failed\n", unit_checks, unit_failures);       \
		return unit_failures ? 1 : 0;                                       \
	} while (0)
#endif
