/* Two threads that deadlock on two mutexes taken in opposite orders (for ftbpf-ci's tests). */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;

static void *take_ab(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&a);
	usleep(100000);
	pthread_mutex_lock(&b);
	return NULL;
}

static void *take_ba(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&b);
	usleep(100000);
	pthread_mutex_lock(&a);
	return NULL;
}

int main(void)
{
	pthread_t t1, t2;

	printf("deadlock: starting\n");
	fflush(stdout);
	pthread_create(&t1, NULL, take_ab, NULL);
	pthread_create(&t2, NULL, take_ba, NULL);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	printf("deadlock: never printed\n");
	return 0;
}
