/* ftbpfd entry point: configuration (defaults < config file < flags), then the agent loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/fifohold.h"
#include "lib/config.h"
#include "os/conffile.h"
#include "lib/nodekeys.h"
#include "os/log.h"
#include "os/safefs.h"
#include "proto/mesh_proto.h"
#include "watch/tracker.h"

#include <sodium.h>

/*
 * --unpin: detach everything a stopped agent left in the kernel (its pinned links and maps
 * under pin_dir: the programs stay attached while their links are pinned). Refused while an
 * agent holds the state dir's lock. Exit 0 done, 1 an agent runs or removal failed.
 */
static int unpin_all(const struct ftbpf_config *cfg)
{
	char p[600];
	int fd, r;

	snprintf(p, sizeof(p), "%s/ftbpfd.lock", cfg->state_dir);
	fd = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		fprintf(stderr, "ftbpfd: an agent is running (%s is locked): stop it first\n", p);
		close(fd);
		return 1;
	}
	fifohold_stop(cfg->state_dir); /* the timer FIFO's holder goes too */
	r = tracker_unpin_all(cfg->pin_dir);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		fprintf(stderr, "ftbpfd: unpin %s: %s\n", cfg->pin_dir, strerror(-r));
		return 1;
	}
	printf("ftbpfd: removed the pins under %s: no ftbpf program stays attached\n",
	       cfg->pin_dir);
	return 0;
}

/* This node's line of node_keys_file: its name (node_name, else the mesh address), its mesh
 * address and the public key of node_key_file's seed. */
static int print_node_key(const struct ftbpf_config *cfg)
{
	char hex[160], err[300];
	uint8_t seed[NODEKEY_BYTES], pk[32], sk[64];

	if (!*cfg->node_key_file || !*cfg->mesh_bind) {
		fprintf(stderr, "ftbpfd: --print-node-key needs node_key_file and bind\n");
		return 2;
	}
	if (sodium_init() < 0 ||
	    safefs_read_secret(cfg->node_key_file, hex, sizeof(hex), err, sizeof(err)) < 0 ||
	    nodekeys_hex(hex, strlen(hex), seed) < 0) {
		fprintf(stderr, "ftbpfd: node_key_file: not 64 hex digits of a root-only file\n");
		return 1;
	}
	crypto_sign_seed_keypair(pk, sk, seed);
	sodium_memzero(seed, sizeof(seed));
	sodium_memzero(sk, sizeof(sk));
	printf("%s %s ", *cfg->node_name ? cfg->node_name : cfg->mesh_bind, cfg->mesh_bind);
	for (int i = 0; i < 32; i++)
		printf("%02x", pk[i]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct ftbpf_config cfg;
	const char *config_path = FTBPF_DEFAULT_CONFIG;
	int explicit_config = 0, reset = 0, print = 0, unpin = 0, r;
	char err[512], soft[48];
	struct agent *a;

	/* the timer FIFO's holder (agent/fifohold.h), started by an agent: nothing else */
	if (argc == 4 && !strcmp(argv[1], "--hold-timer-fifo"))
		return fifohold_main(argv[2], argv[3]);
	config_defaults(&cfg);
	/* First pass: --config and the informational flags. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			config_print_help(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--version")) {
			printf("ftbpfd %s\n", FTBPF_VERSION);
			return 0;
		}
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ftbpfd: --config needs a file\n");
				return 2;
			}
			config_path = argv[++i];
			explicit_config = 1;
		} else if (!strncmp(argv[i], "--config=", 9)) {
			config_path = argv[i] + 9;
			explicit_config = 1;
		}
	}
	r = conffile_config(&cfg, config_path, err, sizeof(err));
	if (r < 0 && !(r == -ENOENT && !explicit_config)) {
		fprintf(stderr, "ftbpfd: config: %s\n", err);
		return 2;
	}
	if (getenv("FTBPF_SOCKET") && *getenv("FTBPF_SOCKET") &&
	    config_set(&cfg, "socket", getenv("FTBPF_SOCKET"), err, sizeof(err)) < 0) {
		fprintf(stderr, "ftbpfd: FTBPF_SOCKET: %s\n", err);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL, *key;
		char flag[64];
		int needs;

		if (!strcmp(arg, "--config")) {
			i++;
			continue;
		}
		if (!strncmp(arg, "--config=", 9))
			continue;
		if (!strcmp(arg, "--reset-state")) {
			reset = 1;
			continue;
		}
		if (!strcmp(arg, "--print-config")) {
			print = 1;
			continue;
		}
		if (!strcmp(arg, "--print-node-key")) {
			print = 2;
			continue;
		}
		if (!strcmp(arg, "--unpin")) {
			unpin = 1;
			continue;
		}
		if (strncmp(arg, "--", 2)) {
			fprintf(stderr, "ftbpfd: unexpected argument '%s' (see --help)\n", arg);
			return 2;
		}
		snprintf(flag, sizeof(flag), "%s", arg + 2);
		if (strchr(flag, '=')) {
			val = strchr(arg, '=') + 1;
			*strchr(flag, '=') = 0;
		}
		key = config_flag_key(flag, &needs);
		if (!key) {
			fprintf(stderr, "ftbpfd: unknown option '%s' (see --help)\n", arg);
			return 2;
		}
		if (!val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ftbpfd: %s needs a value\n", arg);
				return 2;
			}
			val = argv[++i];
		}
		if (config_set(&cfg, key, val, err, sizeof(err)) < 0) {
			fprintf(stderr, "ftbpfd: --%s: %s\n", flag, err);
			return 2;
		}
	}
	if (config_check(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "ftbpfd: %s\n", err);
		return 2;
	}
	if (print == 2)
		return print_node_key(&cfg);
	if (print) {
		config_dump(&cfg, stdout);
		return 0;
	}
	if (unpin)
		return unpin_all(&cfg);
	/* what can be checked before anything is loaded is checked now, as a usage error */
	if (*cfg.mesh_bind) {
		uint8_t key[MESH_KEY_BYTES];
		FILE *f;

		if (sodium_init() < 0 ||
		    conffile_mesh_key(cfg.mesh_key_file, key, err, sizeof(err)) < 0) {
			fprintf(stderr, "ftbpfd: %s\n", err);
			return 2;
		}
		sodium_memzero(key, sizeof(key));
		if (*cfg.mesh_peers_file && !(f = fopen(cfg.mesh_peers_file, "re"))) {
			fprintf(stderr, "ftbpfd: peers file %s: %s\n", cfg.mesh_peers_file,
				strerror(errno));
			return 2;
		} else if (*cfg.mesh_peers_file) {
			fclose(f);
		}
	}
	log_set_level((enum log_level)cfg.verbose);
	{
		/* every rank, timer and connection may hold a descriptor: take what we may, up
		 * to a million (the per-user limits keep any one user far below it) */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max > (1u << 20) ? (1u << 20) : rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				log_warn("cannot raise the open-file limit: %s", strerror(errno));
		}
	}
	if (geteuid() != 0)
		log_warn("not running as root: loading BPF programs will likely fail");
	a = agent_new(&cfg, reset, err, sizeof(err));
	if (!a) {
		log_err("start-up failed: %s", err);
		return 1;
	}
	log_info("ftbpfd %s ready on %s (soft %s, hard %gs, action %s)", FTBPF_VERSION,
		 cfg.socket_path,
		 config_soft_words(cfg.soft_auto, config_soft_ceiling(&cfg), soft, sizeof(soft)),
		 cfg.hard_timeout_s, config_action_name(cfg.action));
	r = agent_run(a);
	agent_free(a);
	if (r < 0) {
		log_err("agent loop: %s", strerror(-r));
		return 1;
	}
	return 0;
}
