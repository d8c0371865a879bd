#!/usr/bin/env bash
# The traps that only show with several GPUs (issue 16), on stand-in nodes and the fake NVML: NVML's
# index (PCI order) is not /dev/nvidiaN's minor (probe order); every selector must pick the GPU
# nvidia-smi -i picks; a TP-4 family orphaned across four GPUs; a process that maps a peer GPU's
# node without memory there. The real multi-GPU runs these stand for are listed in
# docs/VALIDATION.md.
. "$(dirname "$0")/lib.sh"
FAKE="$TESTBIN/fake_nvml.so"
MiB=1048576

# mkdevs4: $TMP/dev/nvidia0..3 as stand-ins (virtual terminals 4:40..4:43, which nobody holds) and
# nvidiactl. GPUWHO_DEV_ROOT counts nvidiaN as minor N by its name.
mkdevs4() {
	local g
	need_root
	mkdir -p "$TMP/dev"
	for g in 0 1 2 3; do mknod "$TMP/dev/nvidia$g" c 4 $((40 + g)); done
	mknod "$TMP/dev/nvidiactl" c 1 5
	( exec 9<>"$TMP/dev/nvidia0" ) 2>/dev/null || skip "cannot open a virtual-terminal stand-in (4:40): this kernel has no VTs"
}

gwj() { GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" "$GPUWHO" "$@" --nvml "$FAKE"; }

test_a_holder_is_shown_on_the_gpu_whose_minor_it_opened_and_every_selector_agrees() {
	mkdevs4
	# PCI order (NVML index) 0..3 has minors 2, 0, 3, 1 (the driver probed them in another order).
	start_holder a --open "$TMP/dev/nvidia2" --comm rank_a; A=$HPID
	start_holder b --open "$TMP/dev/nvidia0" --comm rank_b; B=$HPID
	scenario "gpu 0 minor=2 bus=00000000:18:00.0 uuid=GPU-aaaaaaaa-0000-4000-8000-000000000000 used_mib=2100" \
		"gpu 1 minor=0 bus=00000000:2a:00.0 uuid=GPU-bbbbbbbb-0000-4000-8000-000000000000 used_mib=1100" \
		"gpu 2 minor=3 bus=00000000:3a:00.0 uuid=GPU-cccccccc-0000-4000-8000-000000000000" \
		"gpu 3 minor=1 bus=00000000:4a:00.0 uuid=GPU-dddddddd-0000-4000-8000-000000000000" \
		"proc gpu=0 pid=$A mib=2048" "proc gpu=1 pid=$B mib=1024"
	json=$(gwj ps --json) || fail "exit $?"
	expect_jq "$json" "[.gpus[] | {index, minor}] == [{index:0,minor:2},{index:1,minor:0},{index:2,minor:3},{index:3,minor:1}]"
	expect_jq "$json" "[.gpus[0].processes[] | select(.pid == $A) | .holds] == [[\"$TMP/dev/nvidia2\"]]"
	expect_jq "$json" "[.gpus[1].processes[] | select(.pid == $B) | .kind] == [\"attributed\"]"
	expect_jq "$json" "[.gpus[2,3].processes[]] == []"
	# Index (nvidia-smi -i 0), device path, short and full bus id, UUID and its prefix: one GPU.
	for sel in 0 "$TMP/dev/nvidia2" 18:00.0 0000:18:00.0 00000000:18:00.0 GPU-aaaaaaaa-0000-4000-8000-000000000000 GPU-aaaa; do
		got=$(gwj ps --json "$sel" | jq -c '[.gpus[].index]')
		[ "$got" = "[0]" ] || fail "selector $sel picked $got, not GPU 0"
	done
	got=$(gwj ps --json -i 3 | jq -c '[.gpus[] | .minor]')
	[ "$got" = "[1]" ] || fail "-i 3 picked minor $got, not 1"
	out=$(gwj why --no-color 0)
	expect_has "$out" "GPU 0: 2,048 MiB in use by 1 live process"
}

test_a_peer_mapping_of_another_gpu_is_not_its_memory_holder() {
	mkdevs4
	# P computes on GPU 0 and, with peer access, holds GPU 1's node too; NVML lists it on GPU 0 only.
	start_holder p --open "$TMP/dev/nvidia0" --open "$TMP/dev/nvidia1" --comm peer; P=$HPID
	start_holder q --open "$TMP/dev/nvidia1" --comm owner1; Q=$HPID
	scenario "gpu 0 used_mib=2100" "gpu 1 used_mib=1100" "gpu 2" "gpu 3" \
		"proc gpu=0 pid=$P mib=2048" "proc gpu=1 pid=$Q mib=1024"
	json=$(gwj ps --json) || fail "exit $?"
	expect_jq "$json" "[.gpus[1].processes[] | select(.pid == $P) | .kind] == [\"device_only\"]"
	expect_jq "$json" "[.gpus[1].processes[] | select(.pid == $P) | .used_bytes] == [null]"
	expect_jq "$json" ".gpus[1].memory.attributed_bytes == $((1024 * MiB))"
	json=$(gwj why --json 1)
	expect_jq "$json" "[.findings[] | select(.gpu == 1) | .verdict] == [\"in_use\"]"
	expect_jq "$json" "[.findings[] | select(.gpu == 1) | .pids[]] | index($P) | not"
	# free 1 ends GPU 1's own process; the peer is a process of GPU 0, left alone without --spill.
	out=$(gwj free 1 --no-color)
	expect_has "$out" "Would signal 1 process"
	grep -A1 "Would signal" <<<"$out" | grep -q "^  $Q " || fail "Q is not the one signalled: $out"
	signalled=$(awk '/^Would signal/ { on = 1; next } /^Not signalled/ || /^$/ { on = 0 } on' <<<"$out")
	grep -q "^  $P " <<<"$signalled" && fail "the peer P would be signalled: $out"
	notsig=$(sed -n '/^Not signalled/,$p' <<<"$out")
	grep -q "^  $P " <<<"$notsig" || fail "the peer P is not listed as left alone: $out"
}

test_a_tp4_family_orphaned_across_four_gpus_is_one_family_and_free_2_ends_only_gpu_2() {
	mkdevs4
	command -v setsid >/dev/null || skip "no setsid"
	spawn setsid sh -c "for g in 0 1 2 3; do '$HOLD' '$TMP/r'\$g.ready --open '$TMP/dev/nvidia'\$g --comm rank\$g & done; wait"
	L=$!
	for g in 0 1 2 3; do wait_file "$TMP/r$g.ready"; done
	R0=$(cat "$TMP/r0.ready") R1=$(cat "$TMP/r1.ready") R2=$(cat "$TMP/r2.ready") R3=$(cat "$TMP/r3.ready")
	SPAWNED="$SPAWNED $R0 $R1 $R2 $R3"
	[ "$(awk '{print $5}' "/proc/$R2/stat")" = "$L" ] || fail "rank 2 is not in the launcher's group"
	kill -9 "$L"; wait "$L" 2>/dev/null
	scenario "gpu 0 used_mib=2100" "gpu 1 used_mib=2100" "gpu 2 used_mib=2100" "gpu 3 used_mib=2100" \
		"proc gpu=0 pid=$R0 mib=2048" "proc gpu=1 pid=$R1 mib=2048" "proc gpu=2 pid=$R2 mib=2048" \
		"proc gpu=3 pid=$R3 mib=2048"
	out=$(gwj why --no-color); [ $? -eq 1 ] || fail "why: exit $?"
	json=$(gwj why --json)
	expect_jq "$json" "[.findings[] | select(.verdict == \"orphaned_workers\") | .gpu] == [0, 1, 2, 3]"
	# One family: each finding names all four GPUs and one fix for all of them.
	[ "$(grep -c "the same orphaned family on this host: 4 GPU holders, on GPUs 0,1,2,3" <<<"$out")" -eq 4 ] ||
		fail "the family is not named on each GPU: $out"
	fixes=$(grep -o '`gpuwho free [^`]*`' <<<"$out" | sort -u)
	[ "$fixes" = '`gpuwho free 0,1,2,3`' ] || fail "fixes: $fixes"
	# A Slurm epilog for a job that had GPUs 2 and 3 judges those two only: one line each.
	out=$(SLURM_JOB_GPUS=2,3 gwj check); rc=$?
	[ $rc -eq 1 ] || fail "check: exit $rc: $out"
	[ "$(printf '%s\n' "$out" | cut -d: -f1 | tr '\n' ' ')" = "gpu 2 gpu 3 " ] || fail "check judged other GPUs: $out"
	# free 2: only GPU 2's rank, and a note saying what happens to the rest and how to end it all.
	out=$(gwj free 2 --no-color)
	expect_has "$out" "Would signal 1 process"
	grep -q "^  $R2 " <<<"$out" || fail "rank 2 is not the one signalled: $out"
	flat=$(tr -s ' \n' ' ' <<<"$out")
	expect_has "$flat" "3 more processes of process group $L, whose leader has exited (the same orphaned family), hold GPUs 0, 1, 3 and are left alone"
	cmd=$(grep -o '`gpuwho free [^`]*`' <<<"$flat" | tr -d '`')
	[ "$cmd" = "gpuwho free 0,1,2,3" ] || fail "note's command: $cmd"
	# The printed command, as printed (a dry run), plans the whole family.
	out=$(GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" GPUWHO_NVML="$FAKE" "$GPUWHO" ${cmd#gpuwho } --no-color)
	expect_has "$out" "Would signal 4 processes"
	expect_not "$out" "left alone"
}

test_a_mig_device_selects_the_gpu_it_is_part_of() {
	mkdevs4
	# GPU 1 in MIG mode with two MIG devices (as nvidia-smi -L lists them); selectors as CUDA and
	# nvidia-smi take them: the MIG UUID (or a unique prefix) and GPU:GI:CI.
	scenario "gpu 0" "gpu 1 mig=1 used_mib=1000" "gpu 2" "gpu 3" \
		"mig_device gpu=1 uuid=MIG-11111111-2222-3333-4444-555555555555 gi=1 ci=0" \
		"mig_device gpu=1 uuid=MIG-66666666-7777-8888-9999-000000000000 gi=2 ci=0"
	json=$(gwj ps --json) || fail "exit $?"
	expect_jq "$json" '.nvml.gpus[1].mig.devices == [{"uuid":"MIG-11111111-2222-3333-4444-555555555555","gi":1,"ci":0},{"uuid":"MIG-66666666-7777-8888-9999-000000000000","gi":2,"ci":0}]'
	for sel in MIG-66666666-7777-8888-9999-000000000000 MIG-6666 mig-11111111 1:1:0 1:2:0 "MIG-1111,0"; do
		got=$(gwj ps --json "$sel" | jq -c '[.gpus[].index]')
		case $sel in *,0) want="[0,1]" ;; *) want="[1]" ;; esac
		[ "$got" = "$want" ] || fail "selector $sel picked $got, not $want"
	done
	for sel in 1:3:0 0:1:0 MIG-9999; do
		gwj ps "$sel" >/dev/null 2>"$TMP/err"; rc=$?
		[ $rc -eq 2 ] || fail "$sel: exit $rc"
		expect_has "$(cat "$TMP/err")" "no GPU matches '$sel'"
	done
	# A snapshot keeps the MIG devices: the selector works on a replay too.
	gwj snapshot -o "$TMP/s.json" || fail "snapshot: exit $?"
	got=$("$GPUWHO" ps --from "$TMP/s.json" --json MIG-6666 | jq -c '[.gpus[].index]')
	[ "$got" = "[1]" ] || fail "replayed MIG selector picked $got"
}

run_tests
