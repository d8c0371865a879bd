# seed.jq: turns a real snapshot taken inside a container on a one-GPU host (tests/gpu/make-examples.sh,
# example-container-view.json: own PID namespace, /dev/nvidia* bind-mounted, CUDA holders outside)
# into the seed's host (../shared/seed): 8 GPUs of 97,887 MiB, GPUs 0 and 2 at 96,413 MiB used,
# NVML listing no process (the driver hides other PID namespaces' processes), every /dev/nvidiaN a
# bind mount, 449 GB of RAM with 9 GB available. Everything else stays as the real host showed it.
#   jq -f examples/seed.jq example-container-view.json > examples/seed-container.json
def mib: . * 1048576;
def used(i): if i == 0 or i == 2 then 96413 | mib else 0 end;
.hostname = "gpu-node (seed incident, reconstructed)"
| .nvml.gpus[0] as $g
| .nvml.gpus = [range(0; 8) as $i | $g
    | .index = $i | .minor = $i
    | .uuid = ("GPU-5eed0000-0000-4000-8000-00000000000" + ($i | tostring))
    | .name = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    | .bus_id = ("0000:" + (["18","2a","3a","5d","9a","ab","ba","db"][$i]) + ":00.0")
    | .mem_total = (97887 | mib) | .mem_reserved = (506 | mib)
    | .mem_used = used($i) | .mem_free = (.mem_total - .mem_used)
    | .procs = []]
| .resample = (if .resample then .resample | .used_bytes = [range(0; 8) | used(.)] else null end)
| (.scan.targets | to_entries) as $te
| ($te | map(select(.value.kind == "gpu"))[0].key) as $gi
| ($te | map(select(.value.kind != "gpu")) | map(.key)) as $restidx
| .scan.targets[$gi] as $t
| (.scan.mounts | map(select(.target == $gi))[0]) as $m
| .scan.mounts = ([range(0; 8) as $i | $m | .target = $i
    | .mount_point = "/dev/nvidia\($i)" | .root = "/nvidia\($i)"]
    + [.scan.mounts[] | select(.target != $gi) | .target as $x | .target = (8 + ($restidx | index($x)))])
| .scan.targets = ([range(0; 8) as $i | $t | .path = "/dev/nvidia\($i)" | .gpu_minor = $i
    | .bus_id = ("0000:" + (["18","2a","3a","5d","9a","ab","ba","db"][$i]) + ":00.0")
    | .rdev = "195:\($i)" | .ino = (.ino + $i)] + [$restidx[] as $k | .scan.targets[$k]])
| .scan.holders = []
| .memory.total_bytes = 449000001536 | .memory.available_bytes = 9000009728
| .memory.free_bytes = 7000006656
