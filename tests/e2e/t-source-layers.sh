#!/usr/bin/env bash
# The source tree keeps its layers (docs/ARCHITECTURE.md): collect (sys, proc, nvml) -> snapshot ->
# diagnose -> free -> render -> cmd, with plan beside diagnose. A file may include its own folder,
# the base files (util, escape, json, cli) and the folders its layer is allowed; never one above.
. "$(dirname "$0")/lib.sh"
SRC="$TESTS/../src"

# folder: the folders it may include (besides itself and the base files)
allowed() {
	case "$1" in
	base) echo "" ;;
	sys) echo "" ;;
	proc) echo "sys" ;;
	nvml) echo "" ;;
	snapshot) echo "sys proc nvml" ;;
	diagnose) echo "sys proc nvml snapshot" ;;
	plan) echo "sys proc nvml" ;;
	free) echo "sys proc nvml snapshot diagnose" ;;
	render) echo "sys proc nvml snapshot diagnose plan free" ;;
	cmd) echo "sys proc nvml snapshot diagnose plan free render" ;;
	main) echo "cmd" ;;
	*) echo "UNKNOWN" ;;
	esac
}

# Prints "FILE includes X" for every include that breaks the rule above.
violations() {
	local f rel dir inc top ok
	(cd "$SRC" && find . -name '*.[ch]' | sed 's|^\./||' | sort) | while read -r rel; do
		case "$rel" in
		*/*) dir=${rel%%/*} ;;
		main.c) dir=main ;;
		*) dir=base ;;
		esac
		grep -o '^#include "[^"]*"' "$SRC/$rel" | sed 's/#include "//; s/"$//' | while read -r inc; do
			case "$inc" in
			*/*) top=${inc%%/*} ;;
			*) top=base ;;
			esac
			[ "$top" = base ] && continue
			[ "$top" = "$dir" ] && continue
			ok=no
			for a in $(allowed "$dir"); do [ "$a" = "$top" ] && ok=yes; done
			[ "$ok" = yes ] || echo "$rel includes $inc"
		done
	done
}

test_no_file_includes_a_higher_layer() {
	out=$(violations)
	[ -z "$out" ] || fail "includes against the layers:
$out"
}

test_only_the_snapshot_module_includes_its_internal_header() {
	out=$(grep -rl '#include "snapshot/internal.h"' "$SRC" | grep -v '/src/snapshot/' || true)
	[ -z "$out" ] || fail "snapshot/internal.h included outside src/snapshot/: $out"
	out=$(grep -rl '#include "diagnose/internal.h"' "$SRC" | grep -v '/src/diagnose/' || true)
	[ -z "$out" ] || fail "diagnose/internal.h included outside src/diagnose/: $out"
}

test_the_checker_catches_an_upward_include() {
	# The rule must be able to fail: a copy of the tree with proc/ including render/ breaks it.
	cp -r "$SRC" "$TMP/src"
	echo '#include "render/render.h"' >>"$TMP/src/proc/proc.c"
	out=$(SRC="$TMP/src" violations)
	expect_has "$out" "proc/proc.c includes render/render.h"
}

run_tests
