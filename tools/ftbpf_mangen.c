/*
 * Build-time helper for the man pages: prints the generated parts of ftbpfd(8), ftbpfd.conf(5)
 * and ftbpf(1) as roff, from the tables the programs themselves use (the config key table of
 * lib/config.c, the command table of proto/ctl_proto.c), so that a page cannot drift from the
 * code. man/gen.sh merges the output with the hand-written sections in man/NAME.in.
 */
#include <stdio.h>
#include <string.h>

#include "lib/config.h"
#include "proto/ctl_proto.h"

/* Text into roff: backslashes and dashes escaped, a leading dot or quote protected. */
static void roff(const char *s)
{
	int bol = 1;

	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", stdout);
		bol = *s == '\n';
		if (*s == '\\')
			fputs("\\e", stdout);
		else if (*s == '-')
			fputs("\\-", stdout);
		else if (*s == '\n')
			fputc(' ', stdout); /* the tables wrap help for --help's 80 columns */
		else
			putchar(*s);
	}
}

/* ftbpfd.conf(5): every key with its kind, default, flag and meaning. */
static void keys(void)
{
	struct config_key_info k;

	for (size_t i = 0; config_key_info(i, &k) == 0; i++) {
		fputs(".TP\n\\fB", stdout);
		roff(k.key);
		fputs("\\fR = \\fI", stdout);
		roff(k.arg);
		fputs("\\fR\n", stdout);
		roff(k.help);
		fputs(".\n.br\nDefault: ", stdout);
		if (*k.def) {
			fputs("\\fB", stdout);
			roff(k.def);
			fputs("\\fR", stdout);
		} else {
			fputs("empty", stdout);
		}
		if (k.flag) {
			fputs("; flag \\fB\\-\\-", stdout);
			roff(k.flag);
			fputs("\\fR", stdout);
		}
		fputs(".\n", stdout);
	}
}

/* ftbpfd(8): every flag of the key table. */
static void options(void)
{
	struct config_key_info k;

	for (size_t i = 0; config_key_info(i, &k) == 0; i++) {
		if (!k.flag)
			continue;
		fputs(".TP\n.BI \"\\-\\-", stdout);
		roff(k.flag);
		fputs(" \" ", stdout);
		roff(k.arg);
		fputs("\n", stdout);
		roff(k.help);
		fputs(" (key \\fB", stdout);
		roff(k.key);
		fputs("\\fR, default ", stdout);
		if (*k.def) {
			fputs("\\fB", stdout);
			roff(k.def);
			fputs("\\fR", stdout);
		} else {
			fputs("empty", stdout);
		}
		fputs(")\n", stdout);
	}
}

/* ftbpf(1): the CLI's commands. */
static void commands(void)
{
	for (int i = 0; i < ctl_ncmds; i++) {
		if (!ctl_cmds[i].synopsis)
			continue;
		fputs(".TP\n.B ", stdout);
		roff(ctl_cmds[i].synopsis);
		fputs("\n", stdout);
		roff(ctl_cmds[i].help);
		fputs(".\n", stdout);
	}
}

/* Plain lists for the reference test: every config key, every command of the protocol. */
static void names(int cmds)
{
	struct config_key_info k;

	if (cmds) {
		for (int i = 0; i < ctl_ncmds; i++)
			printf("%s\n", ctl_cmds[i].name);
		return;
	}
	for (size_t i = 0; config_key_info(i, &k) == 0; i++)
		printf("%s\n", k.key);
}

int main(int argc, char **argv)
{
	const char *what = argc == 2 ? argv[1] : "";

	if (!strcmp(what, "keys"))
		keys();
	else if (!strcmp(what, "options"))
		options();
	else if (!strcmp(what, "commands"))
		commands();
	else if (!strcmp(what, "command-names"))
		names(1);
	else if (!strcmp(what, "key-names"))
		names(0);
	else {
		fprintf(stderr,
			"usage: ftbpf-mangen keys|options|commands|command-names|key-names\n");
		return 2;
	}
	return fflush(stdout) ? 1 : 0;
}
