/* pool.c - see pool.h. */
#include "data/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct pool {
	chunkstore_t *cs;
	const crypt_keys_t *key;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	chunkjob_t *head, *tail;
	bool stop;
	int n;
	pthread_t th[64];
};

static void run_job(pool_t *p, chunkjob_t *j)
{
	j->err = 0;
	if (j->run) {
		j->run(j);
		return;
	}
	if (p->key)
		j->err = crypt_chunk_id(p->key, j->data, j->len, &j->ref.digest);
	else
		digest_of(j->data, j->len, &j->ref.digest);
	j->ref.plain_len = j->len;
	if (!j->err)
		j->err = chunkstore_put_key(p->cs, p->key, &j->ref.digest, j->data, j->len,
					    j->level, &j->ref.stored_len, &j->was_new);
	free(j->data);
	j->data = NULL;
}

static void *worker(void *arg)
{
	pool_t *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->work, &p->lock);
		if (!p->head)
			break;
		chunkjob_t *j = p->head;
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		run_job(p, j);
		pthread_mutex_lock(&p->lock);
		atomic_store(&j->done, 1);
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

pool_t *pool_new(chunkstore_t *cs, int nthreads)
{
	/* Workers that store chunks get one more than the CPUs: a worker
	 * waiting for its chunk's O_DIRECT write leaves its CPU to it. */
	if (nthreads <= 0)
		nthreads = sysconf(_SC_NPROCESSORS_ONLN) + (cs ? 1 : 0);
	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > 64)
		nthreads = 64;
	pool_t *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cs = cs;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	for (int i = 0; i < nthreads; i++) {
		if (thread_start(&p->th[i], worker, p))
			break;
		p->n++;
	}
	if (!p->n) {
		free(p);
		return NULL;
	}
	return p;
}

void pool_set_key(pool_t *p, const crypt_keys_t *k)
{
	p->key = k;
}

void pool_free(pool_t *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->n; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	free(p);
}

void pool_submit(pool_t *p, chunkjob_t *j)
{
	atomic_store(&j->done, 0);
	j->next = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}

void pool_wait(pool_t *p, chunkjob_t *j)
{
	if (atomic_load(&j->done))
		return;
	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&j->done))
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

bool pool_cancel(pool_t *p, chunkjob_t *j)
{
	bool found = false;
	pthread_mutex_lock(&p->lock);
	for (chunkjob_t **pp = &p->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp != j)
			continue;
		*pp = j->next;
		if (p->tail == j)
			p->tail = prev;
		j->next = NULL;
		found = true;
		break;
	}
	pthread_mutex_unlock(&p->lock);
	return found;
}
