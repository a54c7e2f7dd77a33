#!/bin/sh
# Make the man pages: each man/NAME.in is hand-written roff (DESCRIPTION, FILES, EXAMPLES,
# EXIT STATUS, ...) with markers for the generated parts, which come from one source each:
#   @GEN keys@ @GEN options@ @GEN commands@   ftbpf-mangen (lib/config.c's key table,
#                                             proto/ctl_proto.c's command table)
#   @HELP_OPTIONS TOOL@                       the Options: block of TOOL --help
#   @VERSION@                                 the version
# Usage: man/gen.sh BUILD VERSION  (writes BUILD/man/NAME)
set -eu
BUILD=$1
VERSION=$2
SRC=$(dirname "$0")
mkdir -p "$BUILD/man"

# TOOL --help's "Options:" block as .TP entries: an option line starts with two spaces and a
# dash; its words up to the first that is neither an option nor an argument name (upper
# case) are the tag, the rest and the deeper-indented lines below are the description.
help_options() {
	"$BUILD/$1" --help | awk '
	function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); sub(/^[.\047]/, "\\\\&&", s); return s }
	/^Options:/ { on = 1; next }
	on && /^$/ { on = 0 }
	on && /^  -/ {
		n = split(substr($0, 3), w, / +/); tag = ""; i = 1
		while (i <= n && (w[i] ~ /^-[-a-zA-Z0-9]*,?$/ || w[i] ~ /^[A-Z|]+,?$/)) { tag = tag (tag == "" ? "" : " ") w[i]; i++ }
		desc = ""; for (; i <= n; i++) desc = desc (desc == "" ? "" : " ") w[i]
		print ".TP"; print ".B " esc(tag); if (desc != "") print esc(desc); next
	}
	on && /^   / { s = $0; sub(/^ +/, "", s); print esc(s) }'
}

for in in "$SRC"/*.in; do
	name=$(basename "$in" .in)
	out="$BUILD/man/$name"
	: >"$out.tmp"
	while IFS= read -r line; do
		case "$line" in
		"@GEN "*@) what=${line#@GEN }; "$BUILD/ftbpf-mangen" "${what%@}" >>"$out.tmp" ;;
		"@HELP_OPTIONS "*@) tool=${line#@HELP_OPTIONS }; help_options "${tool%@}" >>"$out.tmp" ;;
		*) printf '%s\n' "$line" >>"$out.tmp" ;;
		esac
	done <"$in"
	sed "s/@VERSION@/$VERSION/g" "$out.tmp" >"$out" && rm -f "$out.tmp"
done
