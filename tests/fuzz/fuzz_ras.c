/*
 * libFuzzer target: what an NCCL RAS server sends the agent (proto/ras_proto.c): the JSON STATUS
 * reply (with and without the pids of a job; 2.28.9's repair), the protocol's lines, and a
 * rank's environment. No input may crash or leak; what is kept stays within its bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ras_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ras_report r;
	static const int pids[] = {100, 101, 200, 201, 900};
	char why[256], line[256], host[128], port[16];
	struct ras_env e;

	if (ras_json_parse((const char *)data, size, pids, 5, &r, why, sizeof(why)) == 0) {
		if (r.ncomms < 0 || r.ncomms > RAS_COMMS_MAX)
			abort();
		for (int i = 0; i < r.ncomms; i++)
			if (r.comms[i].nmissing > RAS_LIST_MAX ||
			    r.comms[i].nbehind > RAS_LIST_MAX || r.comms[i].nerror > RAS_LIST_MAX ||
			    r.comms[i].local < 1 ||
			    strlen(r.comms[i].hash) >= sizeof(r.comms[i].hash))
				abort();
	}
	(void)ras_json_parse((const char *)data, size, NULL, 0, &r, why, sizeof(why));
	(void)ras_env_parse((const char *)data, size, &e);
	if (strlen(e.addr) >= sizeof(e.addr))
		abort();
	(void)ras_addr_split(e.addr, host, sizeof(host), port, sizeof(port));
	memcpy(line, data, size < sizeof(line) - 1 ? size : sizeof(line) - 1);
	line[size < sizeof(line) - 1 ? size : sizeof(line) - 1] = '\0';
	(void)ras_is_server_hello(line);
	(void)ras_json_accepted(line);
	return 0;
}
