/*
 * The fencing token (invariant I4, docs/decisions.md) on the training loop's side: a save that
 * should_save_gen handed out for generation G is committed by saved_gen only while the slot
 * still says G, no stop was decided and the agent does not hold the rank. The client library
 * is compiled in (its handle is private) over a slot in plain memory, written as the agent
 * writes it.
 */
#include "client/libftbpf.c"

#include <CUnit/Basic.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>

static struct ftbpf_slot slot;
static struct ftbpf handle;

/* A slot whose agent asked every rank to save at step 10, in generation gen. */
static struct ftbpf *requested(uint64_t gen)
{
	memset(&slot, 0, sizeof(slot));
	slot.dec.generation = gen;
	slot.own_generation = gen;
	slot.dec.ckpt_step = 10;
	slot.dec.ckpt_id = 1;
	slot.dec.ckpt_state = FTBPF_CK_REQUESTED;
	slot.dec.action = FTBPF_ACT_NONE;
	slot.dec.resume_step = -1;
	slot.saved_step = -1;
	handle.slot = &slot;
	handle.sock = -1;
	handle.wait_ns = 1000000; /* 1 ms at a boundary: nothing here waits longer */
	handle.ticket_step = -1;
	slot.fence_token = (7ull << 32) | gen; /* run 7 */
	return &handle;
}

static void test_token_commits_in_its_generation(void)
{
	struct ftbpf *h = requested(3);
	uint64_t gen = 99;

	CU_ASSERT_EQUAL(ftbpf_should_save_gen(h, 9, &gen), 0); /* not the agreed step */
	CU_ASSERT_EQUAL(ftbpf_should_save_gen(h, 10, &gen), 1);
	CU_ASSERT_EQUAL(gen, 3);
	CU_ASSERT_EQUAL(ftbpf_saved_gen(h, 10, gen), 0);
	CU_ASSERT_EQUAL(slot.saved_step, 10);
	CU_ASSERT_EQUAL(slot.saved_generation, 4); /* generation + 1: 0 means unknown */
	CU_ASSERT_EQUAL(ftbpf_should_save_gen(h, 10, &gen), 0); /* saved once */
}

static void test_stale_token_is_refused(void)
{
	struct ftbpf *h = requested(3);
	uint64_t gen = 0;

	CU_ASSERT_EQUAL(ftbpf_should_save_gen(h, 10, &gen), 1);
	/* while the rank saved, a new generation was decided (another node failed) */
	slot.dec.generation = 4;
	slot.own_generation = 4;
	CU_ASSERT_EQUAL(ftbpf_saved_gen(h, 10, gen), -ESTALE);
	CU_ASSERT_EQUAL(slot.saved_step, -1); /* nothing committed */
	CU_ASSERT_EQUAL(slot.saved_generation, 0);
	/* the job's generation moved but this process still runs in the old one */
	h = requested(3);
	CU_ASSERT_EQUAL(ftbpf_should_save_gen(h, 10, &gen), 1);
	slot.dec.generation = 4;
	CU_ASSERT_EQUAL(ftbpf_saved_gen(h, 10, gen), -ESTALE);
	/* a stop was decided meanwhile */
	h = requested(3);
	CU_ASSERT_EQUAL(ftbpf_should_save_gen(h, 10, &gen), 1);
	slot.dec.action = FTBPF_ACT_STOP;
	CU_ASSERT_EQUAL(ftbpf_saved_gen(h, 10, gen), -ESTALE);
	/* the node cannot reach the store: the agent holds the rank, nothing is committed */
	h = requested(3);
	CU_ASSERT_EQUAL(ftbpf_should_save_gen(h, 10, &gen), 1);
	slot.hold = 1;
	CU_ASSERT_EQUAL(ftbpf_saved_gen(h, 10, gen), -ESTALE);
	CU_ASSERT_EQUAL(slot.saved_step, -1);
	CU_ASSERT_EQUAL(slot.failed_step, 11); /* said failed (step + 1): the request ends */
	/* a token of another generation than the slot's, whatever the slot says */
	h = requested(5);
	CU_ASSERT_EQUAL(ftbpf_saved_gen(h, 10, 4), -ESTALE);
	CU_ASSERT_EQUAL(ftbpf_saved_gen(h, 10, 5), 0);
}

/* The ticket carries the token of its generation; ftbpf_saved fences with the ticket, and a
 * save without one is refused, never counted in whatever generation the slot says now. */
static void test_saved_needs_ticket(void)
{
	struct ftbpf *h = requested(3);
	uint64_t gen = 0, token = 0;

	CU_ASSERT_EQUAL(ftbpf_save_ticket(h, 10, &gen, &token), -ENOENT);
	CU_ASSERT_EQUAL(ftbpf_saved(h, 10), -ENOENT); /* no ticket of step 10 */
	CU_ASSERT_EQUAL(slot.saved_step, -1);
	CU_ASSERT_EQUAL(ftbpf_should_save(h, 10), 1);
	CU_ASSERT_EQUAL(ftbpf_save_ticket(h, 10, &gen, &token), 0);
	CU_ASSERT_EQUAL(gen, 3);
	CU_ASSERT_EQUAL(token, (7ull << 32) | 3);
	CU_ASSERT_EQUAL(ftbpf_save_ticket(h, 11, &gen, &token), -ENOENT);
	CU_ASSERT_EQUAL(ftbpf_save_ticket(h, -1, &gen, &token), -EINVAL);
	CU_ASSERT_EQUAL(ftbpf_fence_token(h), (7ull << 32) | 3);
	/* a newer generation decided while saving: the ticket's generation is stale */
	slot.dec.generation = 4;
	slot.own_generation = 4;
	slot.fence_token = (7ull << 32) | 4;
	CU_ASSERT_EQUAL(ftbpf_saved(h, 10), -ESTALE);
	CU_ASSERT_EQUAL(slot.saved_step, -1);
	/* in its generation it counts */
	h = requested(3);
	CU_ASSERT_EQUAL(ftbpf_should_save(h, 10), 1);
	CU_ASSERT_EQUAL(ftbpf_saved(h, 10), 0);
	CU_ASSERT_EQUAL(slot.saved_step, 10);
	CU_ASSERT_EQUAL(slot.saved_generation, 4);
}

/* A save that failed is said so (issue 32: a refused save left its request stuck): the
 * agents end the request instead of waiting for it. */
static void test_save_failed(void)
{
	struct ftbpf *h = requested(3);

	CU_ASSERT_EQUAL(slot.failed_step, 0); /* none */
	CU_ASSERT_EQUAL(ftbpf_save_failed(h, -1), -EINVAL);
	CU_ASSERT_EQUAL(ftbpf_should_save(h, 10), 1);
	CU_ASSERT_EQUAL(ftbpf_save_failed(h, 10), 0); /* its storage refused the commit */
	CU_ASSERT_EQUAL(slot.failed_step, 11);
	CU_ASSERT_EQUAL(slot.saved_step, -1);
	CU_ASSERT_EQUAL(ftbpf_save_failed(NULL, 10), 0); /* no agent: nothing to tell */
	/* a save that counts says nothing failed, and makes an earlier failure good */
	h = requested(3);
	CU_ASSERT_EQUAL(ftbpf_should_save(h, 10), 1);
	slot.failed_step = 11;
	CU_ASSERT_EQUAL(ftbpf_saved(h, 10), 0);
	CU_ASSERT_EQUAL(slot.failed_step, 0);
}

static void *settle_later(void *arg)
{
	struct timespec ts = {0, 50000000};

	(void)arg;
	nanosleep(&ts, NULL);
	slot.dec.generation = 3;
	slot.dec.resume_step = 40;
	__atomic_store_n(&slot.settling, 0, __ATOMIC_RELEASE);
	return NULL;
}

/* Issue 32: a rank that starts while its agent has not decided (a generation being decided, or
 * no run known: the store not read) waits; still undecided after the wait, restart_info says
 * so (-EAGAIN) rather than hand out generation 0 and no checkpoint as if decided. */
static void test_restart_info_waits_for_decision(void)
{
	struct ftbpf_restart_info ri;
	pthread_t t;

	requested(0);
	slot.dec.ckpt_state = FTBPF_CK_NONE;
	slot.settling = 1;
	settle_wait_ns = 100000000ull; /* 0.1 s here, 10 s in the library */
	CU_ASSERT_EQUAL(ftbpf_restart_info(&handle, &ri), -EAGAIN);
	CU_ASSERT_EQUAL(ri.resume_step, -1);
	settle_wait_ns = 5000000000ull;
	CU_ASSERT_EQUAL(pthread_create(&t, NULL, settle_later, NULL), 0);
	CU_ASSERT_EQUAL(ftbpf_restart_info(&handle, &ri), 0); /* decided meanwhile: read after */
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(ri.generation, 3);
	CU_ASSERT_EQUAL(ri.resume_step, 40);
	settle_wait_ns = 10000000000ull;
}

/* An agent being restarted: it listens only after 150 ms, is killed while the first
 * registration waits for its answer (the connection reset), then answers the next one with a
 * slot. */
static void *listen_later(void *arg)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timespec ts = {0, 150000000};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), c, mfd;
	char req[512], cbuf[CMSG_SPACE(sizeof(int))] = {0};
	static const char ok[] = "{\"ok\":true}\n";
	struct iovec iov = {(void *)ok, sizeof(ok) - 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	struct ftbpf_slot *sl;

	nanosleep(&ts, NULL);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", (const char *)arg);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0)
		return NULL;
	if ((c = accept(fd, NULL, NULL)) >= 0)
		close(c); /* killed before it answered */
	if ((c = accept(fd, NULL, NULL)) < 0)
		return NULL;
	(void)!read(c, req, sizeof(req));
	mfd = memfd_create("slot", 0);
	if (mfd >= 0 && ftruncate(mfd, sizeof(struct ftbpf_slot)) == 0 &&
	    (sl = mmap(NULL, sizeof(*sl), PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) !=
		MAP_FAILED) {
		sl->magic = FTBPF_SLOT_MAGIC;
		sl->version = FTBPF_SLOT_VERSION;
		munmap(sl, sizeof(*sl));
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &mfd, sizeof(int));
		(void)!sendmsg(c, &mh, 0);
	}
	if (mfd >= 0)
		close(mfd);
	close(c);
	close(fd);
	return NULL;
}

/* Issue 32: a rank started while its agent is being restarted (FTBPF_AGENT_WAIT) waits for it,
 * through a registration the dying agent never answered, rather than train on without the
 * job's decisions; it gives up after the wait, once per process; without the variable it goes
 * on at once, as before. */
static void test_agent_wait(void)
{
	char dir[] = "/tmp/ftbpf-unit-XXXXXX", path[64];
	struct ftbpf *h = NULL;
	uint64_t t0;
	pthread_t t;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	unsetenv("FTBPF_AGENT_WAIT");
	t0 = mono_ns();
	CU_ASSERT_EQUAL(ftbpf_open(path, "j", 0, &h), -ENOENT);
	CU_ASSERT_TRUE(mono_ns() - t0 < 100000000ull); /* no wait asked: at once */
	setenv("FTBPF_AGENT_WAIT", "10", 1);
	CU_ASSERT_EQUAL(pthread_create(&t, NULL, listen_later, path), 0);
	t0 = mono_ns();
	CU_ASSERT_EQUAL(ftbpf_open(path, "j", 0, &h), 0); /* waited, through the reset */
	pthread_join(t, NULL);
	CU_ASSERT_TRUE(mono_ns() - t0 >= 150000000ull);
	CU_ASSERT_PTR_NOT_NULL(h);
	if (h) {
		CU_ASSERT_EQUAL(h->slot->magic, FTBPF_SLOT_MAGIC);
		ftbpf_close(h);
	}
	unlink(path);
	setenv("FTBPF_AGENT_WAIT", "0.2", 1);
	t0 = mono_ns();
	CU_ASSERT_EQUAL(ftbpf_open(path, "j", 0, &h), -ENOENT); /* waited 0.2 s, then gave up */
	CU_ASSERT_TRUE(mono_ns() - t0 >= 200000000ull);
	t0 = mono_ns();
	CU_ASSERT_EQUAL(ftbpf_open(path, "j", 0, &h), -ENOENT); /* once per process */
	CU_ASSERT_TRUE(mono_ns() - t0 < 100000000ull);
	unsetenv("FTBPF_AGENT_WAIT");
	agent_wait_spent = 0;
	rmdir(dir);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("client_fence", NULL, NULL);
	CU_add_test(s, "a save commits in its generation", test_token_commits_in_its_generation);
	CU_add_test(s, "a stale fencing token is refused (I4)", test_stale_token_is_refused);
	CU_add_test(s, "saved fences with the ticket, none without", test_saved_needs_ticket);
	CU_add_test(s, "a failed save is said (issue 32)", test_save_failed);
	CU_add_test(s, "restart_info waits for the decision (issue 32)",
		    test_restart_info_waits_for_decision);
	CU_add_test(s, "FTBPF_AGENT_WAIT: a restarting agent is waited for", test_agent_wait);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
