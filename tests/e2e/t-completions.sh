#!/usr/bin/env bash
# Shell completions (completions/, issue 15) against the binary. The bash one is sourced in a bare
# `bash --norc` (no bash-completion package needed): its function is called with COMP_WORDS and
# COMP_CWORD set as bash sets them, and COMPREPLY is checked. Its table of commands and options must
# list exactly what `gpuwho --help` and `gpuwho CMD --help` list, so a new command or option without
# completion fails here; the zsh and fish files must name every command and option too, and parse
# where zsh and fish are installed.
#
# An option of --help is a line indented by exactly two spaces that starts with "-x, --long",
# "--long" or "-x"; the top-level --help also names the common options in its "Common options (...)".
. "$(dirname "$0")/lib.sh"
COMP="$TESTS/../completions"

# complete WORD...: what the bash completion offers for the command line WORD... (the last word is
# the one being completed), one per line, sorted. ENV=... before it passes variables.
complete_bash() {
	bash --norc --noprofile -c '
		. "$1" || exit 9
		shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_gpuwho gpuwho "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" || exit 8
		printf "%s\n" "${COMPREPLY[@]}"
	' bash "$COMP/gpuwho.bash" "$@" | sort
}

# expect_completion "WORDS" EXPECTED...: the completion of WORDS is exactly EXPECTED (any order).
expect_completion() {
	local words=$1 got want
	shift
	# shellcheck disable=SC2086
	got=$(complete_bash $words "${CUR-}")
	want=$(printf '%s\n' "$@" | sort)
	[ "$got" = "$want" ] || fail "completing '$words ${CUR-}': got [$(echo $got)], want [$(echo $want)]"
}

test_bash_completion_loads_in_a_bare_bash_and_registers_gpuwho() {
	out=$(bash --norc --noprofile -c '. "$1" && complete -p gpuwho' bash "$COMP/gpuwho.bash" 2>&1) || fail "sourcing failed: $out"
	expect_has "$out" "complete -F _gpuwho gpuwho"
}

test_bash_completes_a_command_from_its_prefix() {
	CUR=w expect_completion "gpuwho" why
	CUR=h expect_completion "gpuwho" holders help
	CUR=sn expect_completion "gpuwho" snapshot
	CUR=f expect_completion "gpuwho help" free
	# Common options before the command do not hide it.
	CUR=wh expect_completion "gpuwho --json --from $TMP/x" why
}

test_bash_completes_the_options_of_the_command_given() {
	CUR=--y expect_completion "gpuwho free" --yes
	CUR=--re expect_completion "gpuwho snapshot" --redact --resample
	CUR=--ve expect_completion "gpuwho holders" --verbose
	CUR=--ve expect_completion "gpuwho free 0"
	# A GPU selector first is ps's operand: ps's options follow.
	CUR=--no-n expect_completion "gpuwho 0" --no-nvml
	CUR=-V expect_completion "gpuwho" -V
}

test_bash_completes_color_values_in_both_spellings() {
	CUR=--color= expect_completion "gpuwho why" --color=auto --color=always --color=never
	# bash splits "--color=al" at "=" into three words (COMP_WORDBREAKS).
	CUR=al expect_completion "gpuwho why --color =" always
	CUR='' expect_completion "gpuwho ps --color =" auto always never
}

test_bash_completes_gpu_selectors_from_dev_nvidia_and_all() {
	mkdir -p "$TMP/dev"
	touch "$TMP/dev/nvidia0" "$TMP/dev/nvidia3" "$TMP/dev/nvidiactl" "$TMP/dev/nvidia-uvm"
	got=$(GPUWHO_DEV_ROOT="$TMP/dev" complete_bash gpuwho why "" | tr '\n' ' ')
	[ "$got" = "0 3 all " ] || fail "gpuwho why <TAB>: got '$got', want '0 3 all '"
	got=$(GPUWHO_DEV_ROOT="$TMP/dev" complete_bash gpuwho free -i "" | tr '\n' ' ')
	[ "$got" = "0 3 all " ] || fail "gpuwho free -i <TAB>: got '$got'"
	got=$(GPUWHO_DEV_ROOT="$TMP/dev" complete_bash gpuwho ps --id=a | tr '\n' ' ')
	[ "$got" = "--id=all " ] || fail "gpuwho ps --id=a<TAB>: got '$got'"
}

test_bash_completes_files_for_from_nvml_and_output() {
	touch "$TMP/snap.json" "$TMP/libnvidia-ml.so.1"
	CUR="$TMP/sn" expect_completion "gpuwho why --from" "$TMP/snap.json"
	CUR="$TMP/libn" expect_completion "gpuwho --nvml" "$TMP/libnvidia-ml.so.1"
	CUR="$TMP/sn" expect_completion "gpuwho snapshot -o" "$TMP/snap.json"
	CUR="--from=$TMP/sn" expect_completion "gpuwho ps" "--from=$TMP/snap.json"
	CUR="$TMP/sn" expect_completion "gpuwho holders" "$TMP/snap.json"
}

test_bash_table_lists_exactly_the_commands_of_help() {
	want=$(help_commands | sort)
	[ -n "$want" ] || fail "no command found in gpuwho --help"
	got=$(bash --norc -c '. "$1"; printf "%s\n" $_gpuwho_commands' bash "$COMP/gpuwho.bash" | sort)
	[ "$got" = "$want" ] || fail "_gpuwho_commands [$(echo $got)] is not gpuwho --help's [$(echo $want)]"
	got=$(bash --norc -c '. "$1"; printf "%s\n" "${!_gpuwho_opts[@]}"' bash "$COMP/gpuwho.bash" | grep -vx top | sort)
	[ "$got" = "$want" ] || fail "_gpuwho_opts has tables for [$(echo $got)], gpuwho --help lists [$(echo $want)]"
}

test_bash_table_lists_exactly_the_options_of_each_commands_help() {
	local c bad="" h b
	for c in top $(help_commands); do
		h=$(help_options "$([ "$c" = top ] || echo "$c")")
		[ -n "$h" ] || fail "gpuwho $c --help: no option extracted"
		b=$(bash --norc -c '. "$1"; printf "%s\n" $(_gpuwho_names "$2")' bash "$COMP/gpuwho.bash" "$c" | sort -u)
		missing=$(comm -23 <(echo "$h") <(echo "$b"))
		extra=$(comm -13 <(echo "$h") <(echo "$b"))
		[ -z "$missing" ] || bad="$bad\n  _gpuwho_opts[$c] lacks, from --help: $(echo $missing)"
		[ -z "$extra" ] || bad="$bad\n  _gpuwho_opts[$c] has, not in --help: $(echo $extra)"
	done
	[ -z "$bad" ] || fail "completions/gpuwho.bash and --help differ:$(printf "$bad")"
}

# The zsh file gives each command's options in a case arm "CMD)" up to ";;", one _arguments spec a
# line ('--long...', '-x...', optionally after an exclusion list '(...)'); the top level's in "top)".
zsh_options() {
	awk -v c="$1" '$0 ~ "^[[:space:]]*" c "\\)" { on = 1; next } on && /;;/ { exit } on' "$COMP/_gpuwho" |
		grep -oE "^[[:space:]]*'(\([^)]*\))?\*?-{1,2}[A-Za-z0-9][A-Za-z0-9-]*" | sed -E "s/^[[:space:]]*'(\([^)]*\))?\*?//" | sort -u
}

# The fish file: "complete -c gpuwho -n '__fish_seen_subcommand_from CMD...' -s x -l long ..."
# lines; the top level's are those conditioned on __fish_use_subcommand.
fish_options() {
	local sel
	if [ "$1" = top ]; then sel="__fish_use_subcommand"; else sel="__fish_seen_subcommand_from( [a-z]+)* $1( |'|;)"; fi
	grep -E "^complete -c gpuwho .*$sel" "$COMP/gpuwho.fish" |
		grep -oE -- ' -[sl] [A-Za-z0-9][A-Za-z0-9-]*' | sed -E 's/^ -s /-/; s/^ -l /--/' | sort -u
}

# compare_options NAME FUNC: FUNC CMD gives the options that file lists for CMD; each must equal --help's.
compare_options() {
	local name=$1 fn=$2 c h got bad=""
	for c in top $(help_commands); do
		h=$(help_options "$([ "$c" = top ] || echo "$c")")
		got=$("$fn" "$c")
		missing=$(comm -23 <(echo "$h") <(echo "$got"))
		extra=$(comm -13 <(echo "$h") <(echo "$got"))
		[ -z "$missing" ] || bad="$bad\n  $name: $c lacks, from --help: $(echo $missing)"
		[ -z "$extra" ] || bad="$bad\n  $name: $c has, not in --help: $(echo $extra)"
	done
	[ -z "$bad" ] || fail "$name and --help differ:$(printf "$bad")"
}

test_zsh_completion_names_every_command_and_option_and_parses() {
	f="$COMP/_gpuwho"
	[ -f "$f" ] || fail "no $f"
	[ "$(head -1 "$f")" = "#compdef gpuwho" ] || fail "$f does not start with '#compdef gpuwho'"
	for c in $(help_commands); do
		grep -qE "^[[:space:]]*'$c:" "$f" || fail "_gpuwho: no '$c:description' entry for command $c"
	done
	compare_options _gpuwho zsh_options
	command -v zsh >/dev/null || skip "no zsh: _gpuwho's syntax not checked (its commands and options were)"
	err=$(zsh -n "$f" 2>&1) || fail "zsh -n _gpuwho: $err"
}

test_fish_completion_names_every_command_and_option_and_parses() {
	f="$COMP/gpuwho.fish"
	[ -f "$f" ] || fail "no $f"
	for c in $(help_commands); do
		grep -qE "^complete -c gpuwho -n __fish_use_subcommand .*-a $c( |$)" "$f" || fail "gpuwho.fish: command $c not offered"
	done
	compare_options gpuwho.fish fish_options
	command -v fish >/dev/null || skip "no fish: gpuwho.fish's syntax not checked (its commands and options were)"
	err=$(fish -n "$f" 2>&1) || fail "fish -n gpuwho.fish: $err"
	# And it loads: the completions fish offers for a command's options.
	out=$(fish --no-config -c "source '$f'; complete -C 'gpuwho free --y'" 2>&1) || fail "fish: $out"
	expect_has "$out" "--yes"
	out=$(fish --no-config -c "source '$f'; complete -C 'gpuwho wh'" 2>&1)
	expect_has "$out" "why"
}

run_tests
