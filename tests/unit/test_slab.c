/* test_slab.c - read slabs (lib/data/slab.c): counted references, reuse
 * of up to `keep` returned slabs, the count of slabs out (backup waits on
 * it), and release from other threads. */
#include <pthread.h>
#include <string.h>

#include "data/slab.h"
#include "unit.h"

static void *put_later(void *arg)
{
	slab_put(arg);
	return NULL;
}

int main(void)
{
	slabpool_t sp;
	slabpool_init(&sp, 4096, 2);

	/* A slab stays out while any reference is held, then comes back. */
	slab_t *a = slab_get(&sp);
	CHECK(a != NULL && a->cap == 4096);
	memset(a->data, 0xab, a->cap);
	slab_ref(a);
	slab_ref(a);
	slab_put(a);
	slab_put(a);
	CHECK_EQ(sp.nfree, 0);
	CHECK_EQ(atomic_load(&sp.out), 1);
	slab_put(a);
	CHECK_EQ(sp.nfree, 1);
	CHECK_EQ(atomic_load(&sp.out), 0);
	CHECK(slab_get(&sp) == a); /* reused, not a fresh allocation */
	CHECK_EQ(sp.nfree, 0);

	/* At most `keep` are kept; the third returned one is freed. */
	slab_t *b = slab_get(&sp), *c = slab_get(&sp);
	CHECK(b && c && b != a && c != a && b != c);
	CHECK_EQ(atomic_load(&sp.out), 3);
	slab_put(a);
	slab_put(b);
	slab_put(c);
	CHECK_EQ(sp.nfree, 2);
	CHECK_EQ(atomic_load(&sp.out), 0); /* freed ones count as returned */

	/* The last reference dropped on another thread returns it too. */
	slab_t *d = slab_get(&sp);
	CHECK_EQ(sp.nfree, 1);
	slab_ref(d);
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, put_later, d), 0);
	pthread_join(th, NULL);
	CHECK_EQ(sp.nfree, 1);
	slab_put(d);
	CHECK_EQ(sp.nfree, 2);

	slabpool_destroy(&sp);
	UNIT_DONE();
}
