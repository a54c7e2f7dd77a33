/*
 * Events into the systemd journal as structured entries: MESSAGE is the event's short line
 * (lib/evline.h), PRIORITY its priority, FTBPF_EVENT / FTBPF_JOB / FTBPF_RANK / FTBPF_PID /
 * FTBPF_UID / FTBPF_SEQ its keys, and FTBPF_EVENT_JSON the whole event as the log file has it
 * (`journalctl -o json`, `journalctl FTBPF_EVENT=hang`). libsystemd's native protocol: no
 * line length limit, nothing cut. ftbpfd only.
 */
#ifndef FTBPF_JOURNAL_H
#define FTBPF_JOURNAL_H

struct json_object;

/* Send the event (its JSON line json, its object ev). 0 or -errno (journald gone). */
int journal_event(int prio, const char *message, const char *json, struct json_object *ev);

#endif
