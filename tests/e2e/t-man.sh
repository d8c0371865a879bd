#!/usr/bin/env bash
# The man pages (man/*.1, issue 15) against the binary: a page per command that `gpuwho --help` lists
# (gpuwho.1 for the top), each renders with man(1) without a groff warning, and each page's OPTIONS
# section lists exactly the options of that command's --help, both ways. A command or an option
# added to the code without its page (or a page left behind by a removed option) fails here.
#
# An option of --help is a line indented by exactly two spaces that starts with "-x, --long",
# "--long" or "-x" (continuation lines are indented further; examples do not start with "-").
# The top-level --help also names the common options in its "Common options (...)" sentence.
# An option of a page is one named in a .TP tag (the line after .TP) of its OPTIONS section,
# written as roff writes options: \-x, \-\-long, bold or not.
. "$(dirname "$0")/lib.sh"
MAN="$TESTS/../man"

# page_options FILE: the options named in the .TP tags of FILE's OPTIONS section, sorted.
page_options() {
	awk '/^\.SH/ { on = ($0 ~ /^\.SH "?OPTIONS"?$/); next } on && tag { print; tag = 0; next } on && /^\.TP/ { tag = 1 }' "$1" |
		grep -oE '(^|[[:space:]"]|\\f[BRIP])(\\-)+[A-Za-z0-9]+(\\-[A-Za-z0-9]+)*' |
		sed -E 's/^[^\\]*(\\f[BRIP])?//; s/\\-/-/g' | sort -u
}

# page_of CMD: the page of a command ("" for the top).
page_of() { echo "$MAN/gpuwho${1:+-$1}.1"; }

all_commands() { echo ""; help_commands; }

test_help_lists_the_commands_this_test_reads() {
	cmds=$(help_commands)
	for c in ps why free holders plan snapshot; do
		grep -qx "$c" <<<"$cmds" || fail "'$c' not found in the Commands: list of gpuwho --help (got: $(echo $cmds)); the parser here needs updating"
	done
	# The option parser too: ps's --help has "-i, --id GPU" and "--json".
	opts=$(help_options ps)
	for o in -i --id --json --nvml -h --help; do grep -qx -- "$o" <<<"$opts" || fail "ps --help: $o not extracted (got: $(echo $opts))"; done
}

test_every_command_has_a_man_page_that_renders_without_warnings() {
	local missing="" c page out err
	while read -r c; do
		[ -f "$(page_of "$c")" ] || missing="$missing $(basename "$(page_of "$c")")"
	done < <(all_commands)
	[ -z "$missing" ] || fail "no man page for a command of gpuwho --help: man/${missing# }"
	command -v man >/dev/null || skip "no man"
	while read -r c; do
		page=$(page_of "$c")
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=w -l "$page" 2>"$TMP/err") || fail "man -l $page: exit $?: $(cat "$TMP/err")"
		err=$(cat "$TMP/err")
		[ -z "$err" ] || fail "man -l $page warns: $err"
		grep -qE "^ +gpuwho${c:+-$c} +- " <<<"$out" || fail "man -l $page: no 'gpuwho${c:+-$c} - ...' line under NAME"
		for s in NAME SYNOPSIS OPTIONS; do grep -qx "$s" <<<"$out" || fail "man -l $page: no $s heading"; done
		if command -v groff >/dev/null; then
			err=$(groff -man -ww -z "$page" 2>&1)
			[ -z "$err" ] || fail "groff -ww $page warns: $err"
		fi
	done < <(all_commands)
}

test_each_man_page_header_names_its_command_and_the_version() {
	local c page th want
	version=$(cat "$TESTS/../VERSION")
	while read -r c; do
		page=$(page_of "$c")
		[ -f "$page" ] || fail "no $page"
		th=$(grep -m1 '^\.TH ' "$page")
		want=$(tr a-z A-Z <<<"gpuwho${c:+\\-$c}")
		[[ "$th" == ".TH $want 1 "* ]] || fail "$page: .TH should name $want, section 1: $th"
		expect_has "$th" "\"gpuwho $version\""
		for s in NAME SYNOPSIS DESCRIPTION OPTIONS '"EXIT STATUS"' '"SEE ALSO"'; do
			grep -qx "\.SH $s" "$page" || fail "$page has no .SH $s section"
		done
	done < <(all_commands)
}

test_each_man_page_lists_exactly_the_options_of_its_help() {
	local c page bad="" h p extra missing
	while read -r c; do
		page=$(page_of "$c")
		[ -f "$page" ] || { bad="$bad\n  no $page"; continue; }
		h=$(help_options "$c")
		p=$(page_options "$page")
		[ -n "$h" ] || fail "gpuwho ${c:+$c }--help: no option extracted"
		missing=$(comm -23 <(echo "$h") <(echo "$p"))
		extra=$(comm -13 <(echo "$h") <(echo "$p"))
		[ -z "$missing" ] || bad="$bad\n  $(basename "$page") lacks, from gpuwho ${c:+$c }--help: $(echo $missing)"
		[ -z "$extra" ] || bad="$bad\n  $(basename "$page") lists, not in gpuwho ${c:+$c }--help: $(echo $extra)"
	done < <(all_commands)
	[ -z "$bad" ] || fail "man pages and --help differ:$(printf "$bad")"
}

test_the_overview_page_names_every_command_and_its_page() {
	local c top listed
	top=$(page_of "")
	[ -f "$top" ] || fail "no $top"
	listed=$(awk '/^\.SH/ { on = ($0 ~ /^\.SH "?COMMANDS"?$/); next } on && tag { print $2; tag = 0; next } on && /^\.TP/ { tag = 1 }' "$top" | sort -u)
	while read -r c; do
		grep -qx "$c" <<<"$listed" || fail "gpuwho.1 COMMANDS has no .TP entry for '$c'"
		grep -qF ".BR gpuwho\\-$c (1)" "$top" || fail "gpuwho.1 does not refer to gpuwho-$c(1)"
	done < <(help_commands)
}

test_no_man_page_is_left_for_a_command_gpuwho_does_not_have() {
	local f c cmds
	cmds=$(help_commands)
	for f in "$MAN"/gpuwho-*.1; do
		[ -e "$f" ] || continue
		c=$(basename "$f" .1); c=${c#gpuwho-}
		grep -qx "$c" <<<"$cmds" || fail "man/$(basename "$f"): gpuwho --help lists no command '$c'"
	done
}

run_tests
