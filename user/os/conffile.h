/*
 * The agent's own configuration files, read as root: the config file and the cluster key.
 * Each is opened without blocking (a FIFO named as one must not block the start), must be a
 * regular file of root's (or ours) that no other user may write (the key: nor read), and is
 * read whole into memory; the pure parsers (lib/config, proto/mesh_proto) do the rest.
 */
#ifndef FTBPF_CONFFILE_H
#define FTBPF_CONFFILE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/config.h"
#include "proto/mesh_proto.h"

/* The config file at path applied to c (config_parse_buffer). 0, or -errno with a message. */
int conffile_config(struct ftbpf_config *c, const char *path, char *err, size_t errlen);
/* The cluster key from a file: any secret of 16+ bytes (mesh_proto_key_derive). Not a symbolic
 * link; nobody but its owner may read or write it. 0, or -1 with a message in err. */
int conffile_mesh_key(const char *path, uint8_t key[MESH_KEY_BYTES], char *err, size_t errlen);

#endif
