#!/usr/bin/env bash
# Who owns a holder: real holder processes are moved into real cgroups laid out as Slurm (cgroup v2
# and v1), Kubernetes (systemd and cgroupfs drivers, containerd and cri-o) and docker lay them out,
# under a folder of this test's own in the cgroup trees (removed after); the kubelet's pod log
# folders and docker's container folder are stand-ins (GPUWHO_PODS_DIR, GPUWHO_DOCKER_DIR). ps, why,
# free and check must name the job, the pod or the container, in text and JSON.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"
unset SLURM_JOB_GPUS SLURM_STEP_GPUS CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_SCRIPT_CONTEXT
ID64=3e1c4a5b6d7f80912a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091
POD_UID=3f6b5a1e-9c2d-4b7a-8e1f-0a1b2c3d4e5f
POD_UID_=3f6b5a1e_9c2d_4b7a_8e1f_0a1b2c3d4e5f

# The mount point of the cgroup v2 tree, or of the v1 hierarchy with controller $1.
cg_root() {
	if [ "$1" = v2 ]; then
		awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts
	else
		awk -v c="$1" '$3 == "cgroup" && ("," $4 ",") ~ ("," c ",") { print $2; exit }' /proc/self/mounts
	fi
}

# Moves every cgroup's processes back to the root and removes the folders, deepest first.
cg_cleanup() {
	local d root
	for d in ${CG_MADE:-}; do
		root=${d%%/gpuwho-test-*}
		[ -d "$d" ] || continue
		find "$d" -depth -type d | while read -r sub; do
			for p in $(cat "$sub/cgroup.procs" 2>/dev/null); do echo "$p" >"$root/cgroup.procs" 2>/dev/null; done
			rmdir "$sub" 2>/dev/null
		done
	done
	return 0
}

cg_teardown() {
	teardown   # kills the holders first: an empty cgroup is removable
	cg_cleanup
}

# cg_move TREE REL PID: creates $(cg_root TREE)/gpuwho-test-$$/REL and moves PID into it; skips when
# this host has no such tree or does not let us move a process (a container without cgroup access).
cg_move() {
	local root top dir
	root=$(cg_root "$1")
	[ -n "$root" ] || skip "no cgroup $1 hierarchy mounted here (/proc/self/mounts)"
	top="$root/gpuwho-test-$$"
	dir="$top/$2"
	mkdir -p "$dir" 2>"$TMP/cgerr" || skip "cannot create a cgroup under $root: $(cat "$TMP/cgerr")"
	case " ${CG_MADE:-} " in *" $top "*) ;; *) CG_MADE="${CG_MADE:-} $top" ;; esac
	trap cg_teardown EXIT
	echo "$3" >"$dir/cgroup.procs" 2>"$TMP/cgerr" || skip "cannot move a process into $dir: $(cat "$TMP/cgerr")"
	grep -qF "$2" "/proc/$3/cgroup" || fail "PID $3 is not in $2: $(cat /proc/$3/cgroup)"
}

# A stopped holder of GPU 0 (so that check and why have something to say), PID in $A.
stopped_holder() {
	start_holder a --open "$TMP/dev/nvidia0" --stop; A=$HPID
	wait_state "$A" T
	scenario "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
}

test_slurm_cgroup_v2_job_and_step_in_ps_why_free_check() {
	mkdevs
	stopped_holder
	cg_move v2 "system.slice/slurmstepd.scope/job_4242/step_0/user/task_0" "$A"
	out=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$out" "[.gpus[0].processes[] | select(.pid == $A) | .owner | .slurm_job, .slurm_step, .slurm_source] == [\"4242\", \"0\", \"cgroup\"]"
	out=$(gw ps --nvml "$FAKE" --no-color)
	expect_has "$out" "OWNER"
	expect_has "$out" "job 4242 step 0"
	out=$(gw why --nvml "$FAKE" --no-color 0)
	expect_has "$out" "held by PID $A (holder, job 4242 of user root)"
	out=$(gw free --nvml "$FAKE" --no-color 0)
	expect_has "$out" "[job 4242 step 0]"
	out=$(gw check --nvml "$FAKE"); [ $? -eq 1 ] || fail "check: expected 1"
	expect_has "$out" "gpu 0: 1,542 MiB held by PID $A (holder, job 4242 of user root), stopped - gpuwho why 0"
	out=$(gw check --nvml "$FAKE" --json)
	expect_jq "$out" "[.gpus[0].owners[] | select(.pid == $A) | .label] == [\"job 4242 step 0\"]"
	# The snapshot keeps it, and replays it.
	gw snapshot --nvml "$FAKE" -o "$TMP/s.json" || fail "snapshot"
	expect_jq "$(cat "$TMP/s.json")" "[.scan.holders[] | select(.pid == $A) | .owner.slurm_job] == [\"4242\"]"
	out=$("$GPUWHO" why --from "$TMP/s.json" --no-color 0)
	expect_has "$out" "job 4242 of user root"
}

test_slurm_cgroup_v1_job_from_the_freezer_tree() {
	mkdevs
	stopped_holder
	cg_move freezer "slurm/uid_0/job_77/step_batch" "$A"
	out=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$out" "[.gpus[0].processes[] | select(.pid == $A) | .owner | .slurm_job, .slurm_step] == [\"77\", \"batch\"]"
}

test_kubernetes_systemd_driver_pod_with_namespace_and_name() {
	mkdevs
	stopped_holder
	mkdir -p "$TMP/pods/ml-team_trainer-0_$POD_UID/trainer"
	export GPUWHO_PODS_DIR="$TMP/pods"
	cg_move v2 "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$POD_UID_.slice/cri-containerd-$ID64.scope" "$A"
	out=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$out" "[.gpus[0].processes[] | select(.pid == $A)][0] | .container.pod_uid == \"$POD_UID\" and .container.id == \"$ID64\" and .owner.pod_namespace == \"ml-team\" and .owner.pod_name == \"trainer-0\""
	expect_has "$(gw ps --nvml "$FAKE" --no-color)" "pod ml-team/trainer-0"
	out=$(gw check --nvml "$FAKE")
	expect_has "$out" "held by PID $A (holder, pod ml-team/trainer-0)"
}

test_kubernetes_cgroupfs_driver_with_cri_o_names_the_pod() {
	mkdevs
	stopped_holder
	mkdir -p "$TMP/pods/default_vllm-7f9c_$POD_UID"
	export GPUWHO_PODS_DIR="$TMP/pods"
	cg_move v2 "kubepods/burstable/pod$POD_UID/crio-$ID64" "$A"
	out=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$out" "[.gpus[0].processes[] | select(.pid == $A)][0] | .container.pod_uid == \"$POD_UID\" and .owner.pod_name == \"vllm-7f9c\" and .owner.label == \"pod default/vllm-7f9c\""
}

test_docker_container_named_from_the_engines_folder() {
	mkdevs
	stopped_holder
	mkdir -p "$TMP/docker/$ID64"
	printf '{"ID":"%s","Name":"/sglang-tp8","State":{"Running":true}}' "$ID64" >"$TMP/docker/$ID64/config.v2.json"
	export GPUWHO_DOCKER_DIR="$TMP/docker"
	cg_move v2 "system.slice/docker-$ID64.scope" "$A"
	out=$(gw ps --nvml "$FAKE" --json)
	expect_jq "$out" "[.gpus[0].processes[] | select(.pid == $A)][0] | .container.runtime == \"docker\" and .owner.container_name == \"sglang-tp8\" and .owner.unit == \"docker-$ID64.scope\""
	expect_has "$(gw why --nvml "$FAKE" --no-color 0)" "(holder, container sglang-tp8)"
}

test_hostile_cgroup_and_pod_names_are_escaped() {
	mkdevs
	stopped_holder
	mkdir -p "$TMP/pods/ns_"$'\e]0;PWN\a'"_$POD_UID"
	export GPUWHO_PODS_DIR="$TMP/pods"
	cg_move v2 "kubepods/burstable/pod$POD_UID/$ID64" "$A"
	for cmd in ps why check free; do
		out=$(gw $cmd --nvml "$FAKE" --no-color 0 2>&1)
		! grep -q $'\e' <<<"$out" || fail "$cmd: raw escape byte in: $(cat -v <<<"$out")"
	done
}

run_tests
