/*
 * Which container and Kubernetes pod a process runs in, from its /proc/PID/cgroup (any
 * hierarchy; cgroup v1 or v2; systemd or cgroupfs drivers): the pod UID of a kubepods path,
 * the container id (64 hex digits) of a containerd, CRI-O or Docker path. Pure: fuzzed.
 */
#ifndef FTBPF_CONTAINER_H
#define FTBPF_CONTAINER_H

#include <stddef.h>

struct container_id {
	char pod_uid[40]; /* "" when not in a pod */
	char id[72];	  /* "" when not in a container */
	char runtime[16]; /* "containerd", "cri-o", "docker", "" unknown */
};

/* 0 and *ret when the process is in a pod or a container, -ENOENT when it is in neither. */
int container_parse_cgroup(const char *text, size_t len, struct container_id *ret);

#endif
