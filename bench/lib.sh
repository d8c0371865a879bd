# bench/lib.sh: what the benchmarks share. Source it after cd to the repo root, with $TMP set.

# use_fake_nvml_without_driver: on a host with no NVIDIA driver, points gpuwho at the fake NVML (one
# healthy GPU whose memory this shell holds) and sets SMI empty, so nvidia-smi is left out; with a
# driver, SMI=nvidia-smi and the real NVML is used.
use_fake_nvml_without_driver() {
	if ! nvidia-smi -L >/dev/null 2>&1; then
		echo "no NVIDIA driver here: the fake NVML stands in for one GPU with one holder"
		make -s build/tests/fake_nvml.so >/dev/null
		printf 'gpu 0 used_mib=1542\nproc gpu=0 pid=%d mib=1542\n' $$ >"$TMP/scenario"
		export GPUWHO_NVML=$PWD/build/tests/fake_nvml.so FAKE_NVML_SCENARIO=$TMP/scenario
		SMI=
	else
		SMI=nvidia-smi
	fi
}
