# fish completion for gpuwho(1). Install as
# /usr/share/fish/vendor_completions.d/gpuwho.fish (or ~/.config/fish/completions/gpuwho.fish).
#
# One "complete" line per option, its condition naming the commands whose `gpuwho CMD --help`
# lists it (__fish_use_subcommand: before a command, as `gpuwho --help` lists them);
# tests/e2e/t-completions.sh checks them against --help. To add a command: a line under
# "Commands" and its name in the conditions of the options it takes.

# GPU selectors of this host: the indices of /dev/nvidiaN, and all.
function __gpuwho_gpus
    set -l root /dev
    set -q GPUWHO_DEV_ROOT; and set root $GPUWHO_DEV_ROOT
    for f in $root/nvidia*
        string match -qr '^[0-9]+$' -- (string replace -r '.*/nvidia' '' -- $f)
        and string replace -r '.*/nvidia' '' -- $f
    end
    echo all
end

# True after "--" (plan's launch command line).
function __gpuwho_after_dashdash
    contains -- -- (commandline -opc)
end

complete -c gpuwho -f

# Commands
complete -c gpuwho -n __fish_use_subcommand -a ps -d 'every GPU: memory used/total, each holder, the unattributed MiB'
complete -c gpuwho -n __fish_use_subcommand -a why -d 'verdict per GPU: why its memory is in use, the evidence, the fix'
complete -c gpuwho -n __fish_use_subcommand -a free -d 'safe cleanup of GPUs: the plan (dry run) unless --yes'
complete -c gpuwho -n __fish_use_subcommand -a holders -d 'who holds these files (default: every NVIDIA device node)'
complete -c gpuwho -n __fish_use_subcommand -a plan -d 'pre-flight of an SGLang/vLLM launch: GPU and host memory'
complete -c gpuwho -n __fish_use_subcommand -a check -d 'health check for schedulers (Slurm epilog, NHC): silent and 0 when clean'
complete -c gpuwho -n __fish_use_subcommand -a metrics -d 'Prometheus text: memory used, unattributed and stuck per GPU, findings'
complete -c gpuwho -n __fish_use_subcommand -a serve -d 'the same over HTTP (/metrics, /healthz)'
complete -c gpuwho -n __fish_use_subcommand -a snapshot -d 'everything collected, as one JSON file'
complete -c gpuwho -n __fish_use_subcommand -a help -d 'the help of a command'
complete -c gpuwho -n '__fish_seen_subcommand_from help' -a 'ps why free holders plan check metrics serve snapshot'

# Before the command: the common options and the version
complete -c gpuwho -n __fish_use_subcommand -l json -d 'machine-readable output'
complete -c gpuwho -n __fish_use_subcommand -l nvml -r -F -d 'load this libnvidia-ml instead of libnvidia-ml.so.1'
complete -c gpuwho -n __fish_use_subcommand -l no-nvml -d 'do not ask NVML'
complete -c gpuwho -n __fish_use_subcommand -l from -r -F -d 'read a snapshot instead of this host'
complete -c gpuwho -n __fish_use_subcommand -l color -d 'colour: --color=auto, always or never'
complete -c gpuwho -n __fish_use_subcommand -s V -l version -d 'print the version and exit'

# Options several commands share
complete -c gpuwho -n '__fish_seen_subcommand_from ps why free check metrics serve snapshot' -l nvml -r -F -d 'load this libnvidia-ml instead of libnvidia-ml.so.1'
complete -c gpuwho -n '__fish_seen_subcommand_from ps why free check metrics serve snapshot' -l no-nvml -d 'do not ask NVML'
complete -c gpuwho -n '__fish_seen_subcommand_from ps why free holders check metrics serve snapshot' -l from -r -F -d 'read a snapshot (gpuwho snapshot -o FILE) instead of this host'
complete -c gpuwho -n '__fish_seen_subcommand_from ps why free check' -s i -l id -x -a '(__gpuwho_gpus)' -d 'select a GPU, as nvidia-smi -i does'
complete -c gpuwho -n '__fish_seen_subcommand_from ps why free holders plan check' -l json -d 'machine-readable output'
complete -c gpuwho -n '__fish_seen_subcommand_from ps why free holders plan check' -l color -d 'colour: --color=auto, always or never'
complete -c gpuwho -n '__fish_seen_subcommand_from ps why free holders plan check metrics serve snapshot' -s h -l help -d 'this text'
complete -c gpuwho -n '__fish_seen_subcommand_from ps holders' -l format -x -a 'text json csv' -d 'output format: text, json or csv'
# --color takes its value only as --color=WHEN
complete -c gpuwho -n 'string match -q -- "--color=*" (commandline -ct)' -a '--color=auto --color=always --color=never'

# GPU selectors as operands
complete -c gpuwho -n '__fish_seen_subcommand_from ps why free check' -a '(__gpuwho_gpus)'

# free
complete -c gpuwho -n '__fish_seen_subcommand_from free' -l yes -d 'act (default: dry run)'
complete -c gpuwho -n '__fish_seen_subcommand_from free' -l grace -x -d 'seconds from SIGTERM to SIGKILL (default 10)'
complete -c gpuwho -n '__fish_seen_subcommand_from free' -l include -x -a '(__fish_complete_pids)' -d 'signal a protected process NAME, or a spared PID'
complete -c gpuwho -n '__fish_seen_subcommand_from free' -l all-users -d "signal other users' processes too (root only)"
complete -c gpuwho -n '__fish_seen_subcommand_from free' -l spill -d 'signal processes that also use GPUs not selected'
complete -c gpuwho -n '__fish_seen_subcommand_from free' -l shm -d 'also remove /dev/shm segments whose creator has exited'
complete -c gpuwho -n '__fish_seen_subcommand_from free' -l reset -d 'with --yes, as root: reset the GPU once nothing holds it'

# check
complete -c gpuwho -n '__fish_seen_subcommand_from check' -l wait -x -d 'poll until clean or this many seconds have passed'
complete -c gpuwho -n '__fish_seen_subcommand_from check' -l ended-job -x -d 'the Slurm job that just ended'
complete -c gpuwho -n '__fish_seen_subcommand_from check' -l host -d 'also report host-wide problems (never failed on)'

# holders
complete -c gpuwho -n '__fish_seen_subcommand_from holders' -s v -l verbose -d 'a block per holder'
complete -c gpuwho -n '__fish_seen_subcommand_from holders' -l timeout -x -d 'end the scan after this long (default 2)'
complete -c gpuwho -n '__fish_seen_subcommand_from holders' -l threads -x -d 'scan with N threads'
complete -c gpuwho -n '__fish_seen_subcommand_from holders' -F

# plan
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l pid -x -a '(__fish_complete_pids)' -d 'plan the server running as PID'
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l gpu-mem -x -d "one GPU's total memory (SIZE)"
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l host-mem -x -d 'host memory available (SIZE)'
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l model-config -r -F -d "the model's config.json"
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l weights-gb -x -d "the whole checkpoint's size"
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l overhead -x -d 'per-GPU memory besides weights and KV (default 0.5 GiB)'
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l avg-tokens -x -d 'tokens per request for concurrency (default 4000)'
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l log -r -F -d 'an engine log of this launch: predicted against printed'
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l engine-version -x -d "the engine's release (e.g. 0.11)"
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l nvml -r -F -d 'read the GPUs live through this libnvidia-ml'
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and not __gpuwho_after_dashdash' -l no-nvml -d 'do not read the GPUs live'
complete -c gpuwho -n '__fish_seen_subcommand_from plan; and __gpuwho_after_dashdash' -F -a '(__fish_complete_command)'

# ps
complete -c gpuwho -n '__fish_seen_subcommand_from ps' -l visible -d 'only the GPUs CUDA_VISIBLE_DEVICES names'
# metrics
complete -c gpuwho -n '__fish_seen_subcommand_from metrics' -s o -l output -r -F -d 'write to FILE instead of stdout'
complete -c gpuwho -n '__fish_seen_subcommand_from metrics serve' -l max-processes -x -d 'at most N process series per GPU'
# serve
complete -c gpuwho -n '__fish_seen_subcommand_from serve' -l listen -x -d 'where to listen (default 127.0.0.1:9835)'
complete -c gpuwho -n '__fish_seen_subcommand_from serve' -l scrape-timeout -x -d 'seconds a scrape waits for its collection'
complete -c gpuwho -n '__fish_seen_subcommand_from serve' -l scan-interval -x -d 'at most one full fd walk per S seconds'
# snapshot
complete -c gpuwho -n '__fish_seen_subcommand_from snapshot' -s o -l output -r -F -d 'write to FILE (-: standard output)'
complete -c gpuwho -n '__fish_seen_subcommand_from snapshot' -l redact -d 'replace command lines, user names, cgroups and the host name'
complete -c gpuwho -n '__fish_seen_subcommand_from snapshot' -l resample -x -d 'sample GPU memory again after this long (default 0.5)'
