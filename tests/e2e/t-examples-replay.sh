#!/usr/bin/env bash
# The bundled incident snapshots (examples/, taken on a real H200 by tests/gpu/make-examples.sh; the
# seed's 8-GPU host reconstructed from a real container view by examples/seed.jq): every read command
# replays them, and why gives each incident its verdict.
. "$(dirname "$0")/lib.sh"
EX="$TESTS/../examples"

# verdicts FILE: the verdict ids why finds in FILE, one line, sorted, unique.
verdicts() { "$GPUWHO" why --from "$1" --json | jq -r '[.findings[].verdict] | unique | join(" ")'; }

test_every_example_replays_through_ps_holders_and_why() {
	local f n=0
	for f in "$EX"/*.json; do
		n=$((n + 1))
		"$GPUWHO" ps --from "$f" >/dev/null || fail "ps --from $f: exit $?"
		"$GPUWHO" holders --from "$f" >/dev/null || fail "holders --from $f: exit $?"
		"$GPUWHO" why --from "$f" >/dev/null; [ $? -le 1 ] || fail "why --from $f"
		expect_jq "$("$GPUWHO" snapshot --from "$f")" '.schema == "gpuwho.snapshot"' || fail "snapshot --from $f"
	done
	[ "$n" -ge 5 ] || fail "expected at least 5 examples, found $n"
}

test_the_seed_is_held_outside_the_container_not_a_driver_leak() {
	local f="$EX/seed-container.json" out v
	out=$("$GPUWHO" why --from "$f" --no-color); [ $? -eq 1 ] || fail "exit should be 1"
	v=$(verdicts "$f")
	expect_has "$v" "outside_pid_namespace"
	expect_has "$v" "bind_mount_not_holder"
	expect_has "$v" "host_memory"
	expect_not "$v" "driver_leak"
	expect_not "$out" "nvidia-smi --gpu-reset"
	expect_has "$out" "GPUs 0, 2: 96,413 MiB held by processes outside this PID namespace"
	json=$("$GPUWHO" ps --from "$f" --json)
	expect_jq "$json" '[.gpus[] | select(.memory.hidden_outside_namespace)] | map(.index) == [0, 2]'
}

test_the_same_verdict_on_several_gpus_is_one_finding_listing_them() {
	local f="$EX/seed-container.json" out json cmd
	out=$("$GPUWHO" why --from "$f" --no-color)
	[ "$(grep -c 'held by processes outside this PID namespace' <<<"$out")" -eq 1 ] || fail "not folded: $out"
	expect_has "$out" "[warning] GPUs 0, 2: 96,413 MiB held"
	expect_has "$out" "[ok] GPUs 1, 3, 4, 5, 6, 7: idle"
	expect_has "$out" "holds /dev/nvidia{0,2}"
	# The folded fix is a command that works as printed: gpuwho takes the comma list.
	cmd=$(grep -o '`sudo gpuwho why [^`]*`' <<<"$out" | tr -d '`')
	[ "$cmd" = "sudo gpuwho why 0,2" ] || fail "fix command: '$cmd'"
	"$GPUWHO" why --from "$f" --json ${cmd#sudo gpuwho why } >"$TMP/j"; [ $? -eq 1 ] || fail "the fix's selector failed"
	expect_jq "$(cat "$TMP/j")" '[.findings[] | select(.gpu != null) | .gpu] | unique == [0, 2]'
	# The 13 bind mounts are one line, not 13.
	grep -q '^  - /dev/nvidia[0-9]*: mount point' <<<"$out" && fail "a mount line per node: $out"
	expect_has "$(tr -s ' \n' ' ' <<<"$out")" "13 mount points, each of its own node (devtmpfs, source devtmpfs, root /NAME)"
	# JSON keeps one finding per GPU, for scripts.
	json=$("$GPUWHO" why --from "$f" --json)
	expect_jq "$json" '[.findings[] | select(.verdict == "outside_pid_namespace") | .gpu] == [0, 2]'
	expect_jq "$json" '[.findings[] | select(.verdict == "idle")] | length == 6'
	# Findings that differ in more than the GPU stay apart.
	out=$("$GPUWHO" why --from "$EX/orphaned-tp-workers.json" --no-color)
	expect_not "$out" "GPUs "
}

test_orphaned_tp_workers_are_named_with_the_fix() {
	local f="$EX/orphaned-tp-workers.json"
	expect_has "$(verdicts "$f")" "orphaned_workers"
	out=$("$GPUWHO" why --from "$f" --no-color)
	expect_has "$out" "gpuwho free 0"
	expect_has "$out" "sglang::"
}

test_zombie_leader_example_is_found_and_explained() {
	local f="$EX/zombie-leader.json"
	expect_has "$(verdicts "$f")" "zombie_leader"
	expect_jq "$("$GPUWHO" holders --from "$f" --json)" '[.holders[] | select(.state == "Z") | .holds[].how | index("thread")] | length > 0'
}

test_leaked_shm_segments_are_found() {
	local f="$EX/shm-leak.json"
	expect_has "$(verdicts "$f")" "shm_orphans"
	out=$("$GPUWHO" why --from "$f" --no-color)
	expect_has "$out" "/dev/shm/torch_"
	expect_has "$out" "psm_"
	expect_not "$out" "held_by_live_process'"
}

test_hostile_strings_in_a_snapshot_never_reach_the_terminal_raw() {
	# A snapshot is untrusted input: escape sequences in every string a renderer prints.
	local e='\u001b[2J\u001b]0;pwn\u0007'
	jq --arg e "$(printf '\033[2J\033]0;pwn\007')" '
		.scan.holders[0].container = {"runtime": "lxc", "id": ("c" + $e), "pod_uid": null}
		| .scan.holders[0].user = ("u" + $e) | .scan.holders[0].thread_states = ("t" + $e)
		| .scan.holders[0].missing = ("m" + $e) | .scan.notes += [("n" + $e)] | .notes += [("n2" + $e)]
		| .scan.targets[0].path = ("/dev/nvidia0" + $e) | .nvml.gpus[0].name = ("H200" + $e)' \
		"$EX/orphaned-tp-workers.json" >"$TMP/evil.json" || fail "jq"
	local out
	for cmd in "ps" "holders -v" "why" "free 0"; do
		out=$("$GPUWHO" $cmd --from "$TMP/evil.json" 2>&1)
		[[ "$out" != *$'\e'* && "$out" != *$'\a'* ]] || fail "$cmd printed a raw escape sequence"
	done
	expect_has "$("$GPUWHO" holders -v --from "$TMP/evil.json")" 'u\e[2J\e]0;pwn\x07'
}

run_tests
