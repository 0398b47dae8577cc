/* test_threads.c - the library's helper threads never take the signals
 * that stop a command (thread_start, util.h).  A command's handler is
 * written for the thread that called into the library: gc's flag, recv's
 * wake-up pipe.  The check is deterministic: the signal is sent while the
 * calling thread blocks it, so a helper that did not block it would take it
 * at once; only when the caller unblocks it may the handler run, on the
 * caller. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "unit.h"

static _Atomic pid_t handled_on;
static _Atomic int stop_helper;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&handled_on, (pid_t)syscall(SYS_gettid));
}

static _Atomic int helper_blocks; /* the stop signals the helper blocks */

static void *helper(void *arg)
{
	(void)arg;
	sigset_t m;
	pthread_sigmask(SIG_BLOCK, NULL, &m);
	atomic_store(&helper_blocks, sigismember(&m, SIGINT) + sigismember(&m, SIGTERM) +
					     sigismember(&m, SIGHUP));
	struct timespec ms = {0, 1000000};
	while (!atomic_load(&stop_helper))
		nanosleep(&ms, NULL); /* interruptible: a handler could run here */
	return NULL;
}

static void check_signal(int sig)
{
	struct sigaction sa = {.sa_handler = on_signal}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, &old);
	atomic_store(&handled_on, 0);
	atomic_store(&stop_helper, 0);
	atomic_store(&helper_blocks, -1);
	pthread_t th;
	CHECK_EQ(thread_start(&th, helper, NULL), 0);

	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_BLOCK, &one, NULL);
	kill(getpid(), sig);
	struct timespec wait = {0, 100000000}; /* the helper would have run it by now */
	nanosleep(&wait, NULL);
	CHECK_EQ(atomic_load(&handled_on), 0);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL); /* delivered here, to us */
	CHECK_EQ(atomic_load(&handled_on), (pid_t)syscall(SYS_gettid));

	atomic_store(&stop_helper, 1);
	pthread_join(th, NULL);
	CHECK_EQ(atomic_load(&helper_blocks), 3); /* directly, without timing */
	sigaction(sig, &old, NULL);
}

int main(void)
{
	/* Whatever mask we were started with (a blocked SIGHUP would make a
	 * broken thread_start pass), the caller starts with the three open. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
	check_signal(SIGINT);
	check_signal(SIGTERM);
	check_signal(SIGHUP);
	UNIT_DONE();
}
