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
	out=$("$GPUWHO" --color=never --json holders "$TMP"); rc=$?
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

test_gpu_selectors_as_nvidia_smi_takes_them() {
	sel() { "$GPUWHO" ps --from "$SEED" --json "$@" | jq -c '[.gpus[].index]'; }
	[ "$(sel 0,2)" = "[0,2]" ] || fail "comma list: $(sel 0,2)"
	[ "$(sel all)" = "[0,1,2,3,4,5,6,7]" ] || fail "all: $(sel all)"
	[ "$(sel -i 3 -i 5)" = "[3,5]" ] || fail "-i: $(sel -i 3 -i 5)"
	[ "$(sel --id 1)" = "[1]" ] || fail "--id: $(sel --id 1)"
	bus=$(jq -r '.nvml.gpus[1].bus_id' "$SEED")   # 0000:2a:00.0
	[ "$(sel "${bus#0000:}")" = "[1]" ] || fail "short bus id ${bus#0000:}: $(sel "${bus#0000:}")"
	uuid=$(jq -r '.nvml.gpus[4].uuid' "$SEED")
	[ "$(sel "${uuid:0:40},0")" = "[0,4]" ] || fail "UUID prefix in a list"
	"$GPUWHO" ps --from "$SEED" 0,,1 >/dev/null 2>"$TMP/err"; [ $? -eq 2 ] || fail "empty item accepted"
	expect_has "$(cat "$TMP/err")" "'0,,1' has an empty item"
	"$GPUWHO" why --from "$SEED" 0,9 >/dev/null 2>"$TMP/err"; [ $? -eq 2 ] || fail "unknown GPU in a list accepted"
	expect_has "$(cat "$TMP/err")" "no GPU matches '9'"
	"$GPUWHO" holders -i 0 >/dev/null 2>"$TMP/err"; [ $? -eq 2 ] || fail "holders took -i"
	out=$("$GPUWHO" free --from "$SEED" -i 0,1 --no-color); [ $? -le 1 ] || fail "free -i: exit $?"
	expect_has "$out" "GPU 0"
	expect_has "$out" "GPU 1"
}

test_with_json_errors_are_json_on_stdout_with_the_exit_status() {
	out=$("$GPUWHO" ps --json --from "$SEED" 9 2>/dev/null); rc=$?
	[ $rc -eq 2 ] || fail "exit $rc"
	expect_jq "$out" '.schema == "gpuwho.error" and .exit_status == 2 and (.errors[0] | startswith("no GPU matches '"'"'9'"'"'"))'
	out=$("$GPUWHO" --json pss 2>/dev/null); rc=$?
	[ $rc -eq 2 ] || fail "unknown command: exit $rc"
	expect_jq "$out" '.errors == ["unknown command '"'"'pss'"'"'"]'
	out=$("$GPUWHO" why --json --from "$TMP/none" 2>/dev/null); rc=$?
	[ $rc -eq 3 ] || fail "missing snapshot: exit $rc"
	expect_jq "$out" '.exit_status == 3'
	out=$("$GPUWHO" holders --json --threads 0 2>/dev/null); rc=$?
	expect_jq "$out" '.schema == "gpuwho.error" and .exit_status == 2'
	# Without --json, stdout stays empty.
	out=$("$GPUWHO" ps --from "$SEED" 9 2>/dev/null)
	[ -z "$out" ] || fail "text mode printed on stdout: $out"
}

test_every_json_output_names_its_schema() {
	for c in ps why "free 0" holders; do
		out=$("$GPUWHO" $c --json --from "$SEED" 2>/dev/null)
		expect_jq "$out" '(.schema | type) == "string" and (.schema | startswith("gpuwho.")) and .schema_version == 1'
	done
	out=$("$GPUWHO" holders --json "$TMP") || fail "holders exit $?"
	expect_jq "$out" '.schema == "gpuwho.holders"'
}

test_a_common_option_a_command_has_no_use_for_is_refused_not_ignored() {
	"$GPUWHO" holders --nvml /nonexistent "$TMP" >/dev/null 2>"$TMP/err"; rc=$?
	[ $rc -eq 2 ] || fail "holders --nvml: exit $rc"
	expect_has "$(cat "$TMP/err")" "option '--nvml' does not apply to holders"
	"$GPUWHO" holders --no-nvml "$TMP" >/dev/null 2>&1; [ $? -eq 2 ] || fail "holders --no-nvml accepted"
}

test_format_csv_is_one_quoted_row_per_process_even_for_hostile_names() {
	: >"$TMP/target"
	spawn bash -c 'exec -a "evil,\"name
x" sleep 300 3<"$0"' "$TMP/target"
	pid=$!
	wait_exec "$pid" sleep 3
	out=$("$GPUWHO" holders --format csv "$TMP/target") || fail "exit $?"
	[ "$(printf '%s\n' "$out" | wc -l)" -eq 2 ] || fail "want a header and one row: $out"
	[ "$(printf '%s\n' "$out" | head -1)" = $'pid,ppid,user,state,target,how,fds,maps,map_bytes,command\r' ] || fail "header: $out"
	expect_has "$out" "$pid,"
	expect_has "$out" ",fd,1,0,0,\"evil,\"\"name\\nx 300\""
	LC_ALL=C grep -q $'[\x01-\x08\x0b\x0c\x0e-\x1f]' <<<"$out" && fail "a raw control byte in the CSV"
	out=$("$GPUWHO" ps --from "$SEED" --format csv) || fail "ps exit $?"
	expect_has "$out" $'gpu,uuid,bus_id,pid,host_pid,kind,user,state,gpu_memory_bytes,host_rss_bytes,command\r'
	expect_has "$out" ",,unattributed,,,$((96413 * 1048576)),,"
	out=$("$GPUWHO" ps --from "$SEED" --format json) || fail "--format json: exit $?"
	expect_jq "$out" '.schema == "gpuwho.ps"'
	"$GPUWHO" why --format csv --from "$SEED" >/dev/null 2>&1; [ $? -eq 2 ] || fail "why took --format"
	"$GPUWHO" ps --format xml >/dev/null 2>&1; [ $? -eq 2 ] || fail "--format xml accepted"
}

test_ps_honours_cuda_visible_devices_only_when_asked() {
	sel() { "$GPUWHO" ps --from "$SEED" --json "$@" | jq -c '[.gpus[].index]'; }
	[ "$(CUDA_VISIBLE_DEVICES=2,5 sel)" = "[0,1,2,3,4,5,6,7]" ] || fail "the variable alone narrowed ps"
	[ "$(CUDA_VISIBLE_DEVICES=2,5 sel --visible)" = "[2,5]" ] || fail "--visible: $(CUDA_VISIBLE_DEVICES=2,5 sel --visible)"
	uuid=$(jq -r '.nvml.gpus[6].uuid' "$SEED")
	[ "$(CUDA_VISIBLE_DEVICES=$uuid sel --visible)" = "[6]" ] || fail "--visible with a UUID"
	[ "$(CUDA_VISIBLE_DEVICES=2,5 sel --visible 0)" = "[0]" ] || fail "a GPU given beats the variable"
	[ "$(CUDA_VISIBLE_DEVICES=NoDevFiles sel --visible)" = "[0,1,2,3,4,5,6,7]" ] || fail "NoDevFiles"
	[ "$(env -u CUDA_VISIBLE_DEVICES "$GPUWHO" ps --from "$SEED" --json --visible | jq -c '[.gpus[].index]')" = "[0,1,2,3,4,5,6,7]" ] ||
		fail "unset"
	CUDA_VISIBLE_DEVICES=9 "$GPUWHO" ps --from "$SEED" --visible >/dev/null 2>"$TMP/err"; [ $? -eq 2 ] || fail "a GPU the variable names that is not here"
	expect_has "$(cat "$TMP/err")" "no GPU matches '9'"
}

run_tests
