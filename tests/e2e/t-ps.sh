#!/usr/bin/env bash
# End-to-end tests of `gpuwho ps`: real processes hold mknod'ed stand-ins of /dev/nvidia0, nvidia1 and
# nvidiactl (under GPUWHO_DEV_ROOT, where nvidiaN counts as GPU N by name), and the fake libnvidia-ml
# reports memory for their PIDs (and for PIDs that exist nowhere) from a scenario the test writes.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"
MiB=1048576

test_memory_is_attributed_per_pid_sorted_and_used_is_the_sum_plus_unattributed() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	start_holder b --open "$TMP/dev/nvidia0" --open "$TMP/dev/nvidiactl"; B=$HPID
	start_holder c --open "$TMP/dev/nvidiactl"; C=$HPID          # only nvidiactl, yet NVML lists it on GPU 0
	start_holder d --ro "$TMP/dev/nvidia0" --comm monitor; D=$HPID  # holds the device, no memory
	scenario "gpu 0 used_mib=4000 name=\"NVIDIA H200\"" "gpu 1" \
		"proc gpu=0 pid=$A mib=1000" "proc gpu=0 pid=$B mib=2000" "proc gpu=0 pid=$C mib=500"
	out=$(gw ps --nvml "$FAKE" --json) || fail "exit $?"
	g='.gpus[0]'
	expect_jq "$out" ".schema == \"gpuwho.ps\" and .schema_version == 1 and .pid_namespace == \"host\""
	expect_jq "$out" "[$g.processes[] | select(.kind == \"attributed\") | .pid] == [$B, $A, $C]"
	expect_jq "$out" "$g.processes[] | select(.pid == $D) | .kind == \"device_only\" and .used_bytes == null"
	expect_jq "$out" "$g.processes[] | select(.pid == $C) | .holds == [\"$TMP/dev/nvidiactl\"] and .used_bytes == 500 * $MiB"
	expect_jq "$out" "$g.memory | .used_bytes == 4000 * $MiB and .attributed_bytes == 3500 * $MiB and .unattributed_bytes == 500 * $MiB"
	expect_jq "$out" "$g.memory.used_bytes == $g.memory.attributed_bytes + $g.memory.unattributed_bytes"
	expect_jq "$out" "$g.device == \"$TMP/dev/nvidia0\" and $g.name == \"NVIDIA H200\" and $g.index == 0"
	expect_jq "$out" "[.gpus[1].processes[] | select(.in_nvml)] == [] and .gpus[1].memory.unattributed_bytes == 0"
	txt=$(gw ps --nvml "$FAKE") || fail "exit $?"
	expect_has "$txt" "GPU 0  NVIDIA H200  4,000 / 81,920 MiB used  unattributed 500 MiB"
	expect_has "$txt" "none: holds the device, no GPU memory"
	order=$(grep -oE "^ +($A|$B|$C|$D) " <<<"$txt" | tr -d ' ' | tr '\n' ' ')
	[ "$order" = "$B $A $C $D " ] || fail "rows in order '$order', want '$B $A $C $D '"
	expect_has "$(grep -E "^ +$B " <<<"$txt")" "2,000 MiB"
}

test_a_pid_outside_our_pid_namespace_is_reported_with_its_memory() {
	mkdevs
	command -v unshare >/dev/null || skip "no unshare"
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario "gpu 0 used_mib=4623" "proc gpu=0 pid=$A mib=4096"
	inside() { unshare -p -f --kill-child --mount-proc env GPUWHO_DEV_ROOT="$TMP/dev" \
		FAKE_NVML_SCENARIO="$TMP/scenario" "$GPUWHO" ps --nvml "$FAKE" "$@"; }
	txt=$(inside) || fail "exit $?"
	expect_has "$(tr -s ' \n' '  ' <<<"$txt")" "PID $A not found in this PID namespace: held outside this PID namespace (host PID $A), 4,096 MiB"
	json=$(inside --json) || fail "exit $?"
	expect_jq "$json" ".pid_namespace == \"child\""
	expect_jq "$json" ".gpus[0].processes[0] | .pid == $A and .host_pid == $A and .kind == \"outside_namespace\" and .used_bytes == 4096 * $MiB"
	expect_jq "$json" ".gpus[0].memory.unattributed_bytes == 527 * $MiB"
	# From the host the same process is simply attributed.
	json=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$json" ".gpus[0].processes[0] | .pid == $A and .kind == \"attributed\""
}

test_memory_the_driver_hides_from_a_pid_namespace_is_called_held_outside() {
	# Driver 580 lists only the caller's PID namespace's processes: inside a container NVML names
	# nobody while memory is used (seen on the H200, docs/VALIDATION.md). The fake lists none.
	mkdevs
	command -v unshare >/dev/null || skip "no unshare"
	scenario "gpu 0 used_mib=10301"
	txt=$(unshare -p -f --kill-child --mount-proc env GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" \
		"$GPUWHO" ps --nvml "$FAKE") || fail "exit $?"
	expect_has "$(tr -s ' \n' '  ' <<<"$txt")" "10,301 MiB held by processes outside this PID namespace that NVML does not list here"
	json=$(unshare -p -f --kill-child --mount-proc env GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" \
		"$GPUWHO" ps --nvml "$FAKE" --json)
	expect_jq "$json" ".gpus[0].memory.hidden_outside_namespace == true"
	# On the host the same numbers are plain unattributed memory (why decides what it means).
	json=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$json" ".gpus[0].memory.hidden_outside_namespace == false and .gpus[0].memory.unattributed_bytes == 10301 * $MiB"
}

test_holder_inside_a_container_namespace_is_shown_with_both_pids() {
	mkdevs
	command -v unshare >/dev/null || skip "no unshare"
	spawn unshare -p -f --kill-child --mount-proc "$HOLD" "$TMP/ns.ready" --open "$TMP/dev/nvidia0" >/dev/null 2>&1
	wait_file "$TMP/ns.ready"
	host=$(gw holders --json "$TMP/dev/nvidia0" | jq ".holders[] | select(.cmdline[1] == \"$TMP/ns.ready\") | .pid")
	[ -n "$host" ] || fail "holder in the namespace not found"
	scenario "gpu 0 used_mib=100" "proc gpu=0 pid=$host mib=100"
	json=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$json" ".gpus[0].processes[0] | .pid == $host and .nspid == [$host, 1] and .kind == \"attributed\""
	txt=$(gw ps --nvml "$FAKE")
	expect_has "$(grep -E "^ +$host " <<<"$txt")" "ns pid 1"
}

test_on_the_host_an_exited_pid_points_to_the_processes_that_inherited_its_files() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia1" --fork-exit
	for i in $(seq 100); do kill -0 "$LPID" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$LPID" 2>/dev/null && fail "parent $LPID still alive"
	scenario "gpu 0" "gpu 1 used_mib=3590" "proc gpu=1 pid=$LPID mib=3590"
	txt=$(gw ps --nvml "$FAKE" 1) || fail "exit $?"
	flat=$(tr -s ' \n' '  ' <<<"$txt")
	expect_has "$flat" "PID $LPID (exited) — memory now held through processes that inherited its device files: "
	[[ "$flat" =~ "inherited its device files: "([0-9, ]*)"." ]] || fail "no heirs listed"
	[[ ", ${BASH_REMATCH[1]}," == *", $HPID,"* ]] || fail "heirs '${BASH_REMATCH[1]}' lack $HPID"
	expect_has "$flat" "NVML still lists 3,590 MiB for it."
	json=$(gw ps --nvml "$FAKE" --json)
	# Other processes holding /dev/random (the stand-in's device) would be heirs too: containment.
	expect_jq "$json" ".gpus[1].processes[] | select(.pid == $LPID) | .kind == \"exited\" and (.heirs | index($HPID)) and .used_bytes == 3590 * $MiB"
	expect_jq "$json" ".gpus[1].processes[] | select(.pid == $HPID) | .kind == \"inherited\""
}

test_missing_library_explains_and_still_lists_the_holders() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia1"
	txt=$(gw ps --nvml /nonexistent/libnvidia-ml.so.1); rc=$?
	[ $rc -eq 0 ] || fail "exit $rc"
	expect_has "$txt" "NVML: NVML library not found: dlopen(/nonexistent/libnvidia-ml.so.1) failed"
	expect_has "$txt" "memory unknown"
	expect_has "$(grep -E "^ +$HPID " <<<"$txt")" "unknown"
	json=$(gw ps --nvml /nonexistent/libnvidia-ml.so.1 --json)
	expect_jq "$json" ".nvml.loaded == false and .nvml.error_code == \"NO_LIBRARY\" and .nvml_ok == false"
	expect_jq "$json" ".gpus[] | select(.minor == 1) | .index == null and .memory.used_bytes == null and .memory.unattributed_bytes == null"
	expect_jq "$json" ".gpus[] | select(.minor == 1) | .processes[] | select(.pid == $HPID) | .kind == \"memory_unknown\" and .used_bytes == null"
}

test_driver_not_loaded_explains_and_still_lists_the_holders() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"
	scenario "init_error 9"
	txt=$(gw ps --nvml "$FAKE") || fail "exit $?"
	expect_has "$(tr -s ' \n' '  ' <<<"$txt")" "NVML: NVIDIA driver not loaded"
	expect_has "$(grep -E "^ +$HPID " <<<"$txt")" "unknown"
	json=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$json" ".nvml.error_code == \"DRIVER_NOT_LOADED\" and (.gpus | length == 2)"
}

test_a_process_list_that_grows_between_the_two_calls_is_read_whole() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"
	scenario "gpu 0 used_mib=1000" "proc gpu=0 pid=$HPID mib=900" "grow_between_calls 3"
	json=$(gw ps --nvml "$FAKE" --json) || fail "exit $?"
	expect_jq "$json" "[.gpus[0].processes[] | select(.in_nvml)] | length == 4"
	expect_jq "$json" ".gpus[0].processes[0].pid == $HPID"
	expect_jq "$json" ".gpus[0].memory | .attributed_bytes == 903 * $MiB and .unattributed_bytes == 97 * $MiB"
}

test_unknown_memory_is_shown_as_unknown_never_zero() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	start_holder b --open "$TMP/dev/nvidia0"; B=$HPID
	scenario "gpu 0 used_mib=1000" "proc gpu=0 pid=$A mib=unknown" "proc gpu=0 pid=$B mib=200"
	json=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$json" "[.gpus[0].processes[] | select(.in_nvml) | .pid] == [$B, $A]"
	expect_jq "$json" ".gpus[0].processes[1] | .used_bytes == null and .kind == \"attributed\""
	expect_jq "$json" ".gpus[0].memory | .unknown_processes == 1 and .unattributed_bytes == 800 * $MiB"
	txt=$(gw ps --nvml "$FAKE")
	expect_has "$(grep -E "^ +$A " <<<"$txt")" "unknown"
	expect_has "$txt" "unattributed 800 MiB (includes 1 process of unknown size)"
}

test_no_gpus_and_no_nodes_say_so() {
	mkdir -p "$TMP/dev"
	scenario "driver 580.159.04"
	txt=$(gw ps --nvml "$FAKE"); rc=$?
	[ $rc -eq 0 ] || fail "exit $rc"
	expect_has "$txt" "No NVIDIA GPUs found."
	json=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$json" ".gpus == [] and .nvml.loaded == true"
	json=$(gw ps --no-nvml --json)
	expect_jq "$json" ".gpus == [] and (has(\"nvml\") | not)"
}

test_no_nvml_lists_the_holders_with_memory_unknown() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"
	scenario "init_error 999"   # would fail loudly if it were loaded
	txt=$(gw ps --no-nvml --nvml "$FAKE") || fail "exit $?"
	expect_has "$txt" "NVML not asked (--no-nvml)"
	expect_has "$(grep -E "^ +$HPID " <<<"$txt")" "unknown"
	json=$(gw ps --no-nvml --json)
	expect_jq "$json" "(has(\"nvml\") | not) and (.gpus[0].processes[] | select(.pid == $HPID) | .kind == \"memory_unknown\")"
}

test_nothing_readable_exits_3() {
	mkdir -p "$TMP/dev" "$TMP/noproc"
	GPUWHO_PROC_ROOT="$TMP/noproc" GPUWHO_DEV_ROOT="$TMP/dev" "$GPUWHO" ps --nvml /nonexistent >/dev/null; rc=$?
	[ $rc -eq 3 ] || fail "exit $rc, want 3"
}

test_gpu_selectors_pick_gpus_and_a_bad_one_is_a_usage_error() {
	mkdevs
	scenario "gpu 0" "gpu 1 uuid=GPU-8c8e6e0c-1111-2222-3333-444455556666 bus=00000000:65:00.0" "gpu 2"
	sel() { gw ps --nvml "$FAKE" --json "$@" | jq -c '[.gpus[].index]'; }
	[ "$(sel 1)" = "[1]" ] || fail "index: $(sel 1)"
	[ "$(sel GPU-8c8e6e0c)" = "[1]" ] || fail "uuid prefix"
	[ "$(sel gpu-8C8E6E0C-1111-2222-3333-444455556666)" = "[1]" ] || fail "uuid, any case"
	[ "$(sel 0000:65:00.0)" = "[1]" ] || fail "bus id"
	[ "$(sel 00000000:65:00.0)" = "[1]" ] || fail "bus id, NVML's form"
	[ "$(sel 0000:65:00.0 | tr a-f A-F)" = "[1]" ] || fail "bus id upper"
	[ "$(sel 00000000:65:00.0)" = "[1]" ] || fail "bus id"
	[ "$(sel /dev/nvidia0 2)" = "[0,2]" ] || fail "path and index: $(sel /dev/nvidia0 2)"
	[ "$(sel)" = "[0,1,2]" ] || fail "all"
	out=$(gw ps --nvml "$FAKE" 7 2>"$TMP/err"); rc=$?
	[ $rc -eq 2 ] || fail "unknown selector: exit $rc"
	[ -z "$out" ] || fail "printed on a usage error: $out"
	expect_has "$(cat "$TMP/err")" "gpuwho ps: no GPU matches '7'"
	gw ps --nvml "$FAKE" banana 2>"$TMP/err"; [ $? -eq 2 ] || fail "banana accepted"
	gw ps --nvml "$FAKE" 0000:66:00.0 2>/dev/null; [ $? -eq 2 ] || fail "unknown bus id accepted"
	gw ps --no-such-option 2>/dev/null; [ $? -eq 2 ] || fail "bad option accepted"
}

test_text_fits_80_columns_when_asked_and_is_not_cut_when_piped() {
	mkdevs
	long=$(printf 'x%.0s' $(seq 150))
	spawn bash -c "exec 3<>'$TMP/dev/nvidia0'; exec -a '/opt/$long' sleep 1000"
	P=$!
	wait_exec "$P" sleep 3
	scenario "gpu 0 used_mib=5000 name=\"NVIDIA RTX PRO 6000 Blackwell Server Edition\"" "proc gpu=0 pid=$P mib=4000" \
		"proc gpu=0 pid=999999 mib=10"
	txt=$(COLUMNS=80 gw ps --nvml "$FAKE") || fail "exit $?"
	while IFS= read -r l; do [ ${#l} -le 80 ] || fail "line of ${#l} columns: $l"; done <<<"$txt"
	expect_has "$txt" "…"
	txt=$(gw ps --nvml "$FAKE")
	expect_has "$txt" "/opt/$long"
	# A terminal gets colour; NO_COLOR and --no-color turn it off.
	command -v script >/dev/null || return 0
	tty=$(GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" script -qec "stty cols 80; '$GPUWHO' ps --nvml '$FAKE'" /dev/null)
	[[ "$tty" == *$'\e[1m'* ]] || fail "no colour on a terminal"
	tty=$(NO_COLOR=1 GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" script -qec "'$GPUWHO' ps --nvml '$FAKE'" /dev/null)
	[[ "$tty" != *$'\e['* ]] || fail "colour despite NO_COLOR"
}

test_hostile_command_lines_are_escaped() {
	mkdevs
	spawn bash -c "exec 3<>'$TMP/dev/nvidia0'; exec -a \$'evil\\e[31m\\nx' sleep 1000"
	P=$!
	wait_exec "$P" sleep 3
	start_holder c --open "$TMP/dev/nvidiactl" --comm $'ctl\e[2J'
	scenario "gpu 0 used_mib=10" "proc gpu=0 pid=$P mib=10"
	txt=$(gw ps --nvml "$FAKE")
	[[ "$txt" != *$'\e'* ]] || fail "raw escape reached the output"
	expect_has "$txt" 'evil\e[31m\nx'
	expect_has "$txt" "$HPID (ctl\\e[2J)"
	json=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$json" ".gpus[0].processes[0].cmdline[0] == \"evil\\u001b[31m\\nx\""
	expect_jq "$json" ".control_only_holders[] | select(.pid == $HPID) | .holds == [\"$TMP/dev/nvidiactl\"]"
}

test_bare_gpuwho_runs_ps() {
	mkdevs
	scenario "gpu 0 used_mib=10"
	out=$(gw --nvml "$FAKE") || fail "exit $?"
	expect_has "$out" "GPU 0  NVIDIA Fake GPU  10 / 81,920 MiB used  unattributed 10 MiB"
	expect_jq "$(gw --json --nvml "$FAKE")" '.schema == "gpuwho.ps"' || fail "bare --json"
	"$GPUWHO" --help | grep -q "ps .*(default)" || fail "--help does not name ps the default"
	"$GPUWHO" ps --help | grep -q "GPU selectors" || fail "ps --help"
}

test_plan_takes_gpu_memory_from_nvml() {
	scenario "gpu 0 total_mib=97887" "gpu 1 total_mib=97000"
	out=$(FAKE_NVML_SCENARIO="$TMP/scenario" "$GPUWHO" plan --json --nvml "$FAKE" --host-mem 408GB \
		--weights-gb 10 --model-config "$TESTS/fixtures/models/llama-3.1-70b/config.json" -- \
		python3 -m sglang.launch_server --model-path x --tp 2)
	expect_jq "$out" ".gpu_memory.total_source == \"NVML\" and .gpu_memory.total_bytes == 97000 * $MiB"
	out=$("$GPUWHO" plan --json --nvml /nonexistent --host-mem 408GB --weights-gb 10 \
		--model-config "$TESTS/fixtures/models/llama-3.1-70b/config.json" -- \
		python3 -m sglang.launch_server --model-path x --tp 2)
	expect_jq "$out" ".gpu_memory.total_bytes == null"
}

run_tests
