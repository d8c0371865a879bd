#!/usr/bin/env bash
# The command line's conventions, as nvidia-smi, git and coreutils users expect them (issue 15):
# common options before the command, `help CMD`, a suggestion for a mistyped command, -V, --color.
. "$(dirname "$0")/lib.sh"
SEED="$TESTS/../examples/seed-container.json"
ESC=$'\033'

test_common_options_before_the_command_reach_it() {
	out=$("$GPUWHO" --json why --from "$SEED"); rc=$?
	[ $rc -eq 1 ] || fail "exit $rc (the seed has problems: 1)"
	expect_jq "$out" '.schema == "gpuwho.why"'
	out=$("$GPUWHO" --no-nvml --json holders "$TMP"); rc=$?
	[ $rc -eq 0 ] || fail "holders exit $rc"
	expect_jq "$out" '.holders | length == 0'
	# A common option's value is not taken for the command.
	out=$("$GPUWHO" --from "$SEED" --json ps) || fail "ps exit $?"
	expect_jq "$out" '.schema == "gpuwho.ps"'
}

test_a_gpu_selector_first_goes_to_the_default_command() {
	out=$("$GPUWHO" --from "$SEED" --json 0) || fail "exit $?"
	expect_jq "$out" '.schema == "gpuwho.ps" and (.gpus | length) == 1 and .gpus[0].index == 0'
}

test_help_cmd_shows_that_commands_help() {
	out=$("$GPUWHO" help why) || fail "exit $?"
	expect_has "$out" "Usage: gpuwho why"
	out=$("$GPUWHO" --help free) || fail "exit $?"
	expect_has "$out" "Usage: gpuwho free"
	out=$("$GPUWHO" help) || fail "exit $?"
	expect_has "$out" "Commands:"
	"$GPUWHO" help nosuch >/dev/null 2>&1; [ $? -eq 2 ] || fail "help of an unknown command should exit 2"
}

test_a_mistyped_command_gets_the_nearest_and_exit_2() {
	err=$("$GPUWHO" pss 2>&1 >/dev/null); rc=$?
	[ $rc -eq 2 ] || fail "exit $rc"
	expect_has "$err" "unknown command 'pss'"
	expect_has "$err" "Did you mean 'gpuwho ps'?"
	err=$("$GPUWHO" wyh 2>&1 >/dev/null)
	expect_has "$err" "Did you mean 'gpuwho why'?"
	err=$("$GPUWHO" frobnicate 2>&1 >/dev/null); rc=$?
	[ $rc -eq 2 ] || fail "exit $rc"
	expect_not "$err" "Did you mean"
}

test_dash_capital_v_prints_the_version() {
	out=$("$GPUWHO" -V) || fail "exit $?"
	[ "$out" = "gpuwho $(cat "$TESTS/../VERSION")" ] || fail "got '$out'"
	[ "$("$GPUWHO" --version)" = "$out" ] || fail "--version differs"
}

test_color_when_always_never_auto_and_term_dumb() {
	out=$("$GPUWHO" why --from "$SEED" --color=always)
	[[ "$out" == *"$ESC["* ]] || fail "--color=always gave no colour"
	out=$("$GPUWHO" why --from "$SEED" --color)
	[[ "$out" == *"$ESC["* ]] || fail "--color gave no colour"
	out=$(NO_COLOR=1 "$GPUWHO" why --from "$SEED" --color=always)
	[[ "$out" == *"$ESC["* ]] || fail "--color=always should win over NO_COLOR"
	out=$("$GPUWHO" why --from "$SEED" --color=auto)
	[[ "$out" != *"$ESC"* ]] || fail "auto coloured a pipe"
	command -v script >/dev/null || skip "no script (util-linux) for a terminal"
	tty=$(script -qec "'$GPUWHO' why --from '$SEED'" /dev/null)
	[[ "$tty" == *"$ESC["* ]] || fail "a terminal got no colour"
	tty=$(TERM=dumb script -qec "'$GPUWHO' why --from '$SEED'" /dev/null)
	[[ "$tty" != *"$ESC["* ]] || fail "TERM=dumb got colour"
	tty=$(script -qec "'$GPUWHO' why --from '$SEED' --color=never" /dev/null)
	[[ "$tty" != *"$ESC["* ]] || fail "--color=never got colour"
	"$GPUWHO" why --from "$SEED" --color=bogus >/dev/null 2>"$TMP/err"; rc=$?
	[ $rc -eq 2 ] || fail "bad WHEN: exit $rc"
	expect_has "$(cat "$TMP/err")" "--color wants auto, always or never, not 'bogus'"
}

test_outside_a_utf8_locale_the_text_is_ascii() {
	out=$(LC_ALL=C "$GPUWHO" why --from "$SEED")
	[ -n "$out" ] || fail "no output"
	LC_ALL=C grep -q '[^ -~]' <<<"$out" && fail "non-ASCII bytes with LC_ALL=C: $(LC_ALL=C grep -n '[^ -~]' <<<"$out" | head -3)"
	expect_has "$out" "- not a driver leak"
	out=$(LC_ALL= LC_CTYPE= LANG= "$GPUWHO" --help)
	LC_ALL=C grep -q '[^ -~]' <<<"$out" && fail "non-ASCII --help without a locale"
	expect_has "$out" "gpuwho - who holds each NVIDIA GPU"
	# A UTF-8 locale keeps the signs; so does LANG when LC_ALL is unset.
	out=$(LC_ALL= LANG=en_US.UTF-8 "$GPUWHO" why --from "$SEED")
	expect_has "$out" "— not a driver leak"
	# Errors too.
	err=$(LC_ALL=C "$GPUWHO" plan -- sglang 2>&1 >/dev/null)
	LC_ALL=C grep -q '[^ -~]' <<<"$err" && fail "non-ASCII error: $err"
	return 0
}

run_tests
