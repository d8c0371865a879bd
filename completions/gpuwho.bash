# bash completion for gpuwho(1)                                     -*- shell-script -*-
# Install as /usr/share/bash-completion/completions/gpuwho (or source it from ~/.bashrc).
# Works with and without the bash-completion package.

# The commands, as `gpuwho --help` lists them ("help" is `gpuwho help CMD`).
_gpuwho_commands="ps why free holders plan check metrics serve snapshot"

# Each command's options, exactly as its `gpuwho CMD --help` lists them ("top": `gpuwho --help`
# and its common options). tests/e2e/t-completions.sh checks this table against --help both ways,
# so a new command or option fails there until it is added here. To add a command, add a line.
# A word is an option, written one of three ways:
#   --flag            takes no value
#   --opt=KIND        takes a value (the next word, or after "="; -x VALUE for a short one):
#                     KIND is FILE, GPU, WHEN, FMT, PID, or anything else (not completed)
#   --opt[=KIND]      takes an optional value, only as --opt=VALUE (--color[=WHEN])
declare -gA _gpuwho_opts=(
	[top]="--json --nvml=FILE --no-nvml --from=FILE --color[=WHEN] -V --version"
	[ps]="--nvml=FILE --no-nvml --from=FILE --visible -i=GPU --id=GPU --format=FMT --json --color[=WHEN] -h --help"
	[why]="--from=FILE --nvml=FILE --no-nvml -i=GPU --id=GPU --json --color[=WHEN] -h --help"
	[free]="--yes --grace=SECONDS --include=NAME|PID --all-users --spill --shm --reset --from=FILE
		--nvml=FILE --no-nvml -i=GPU --id=GPU --json --color[=WHEN] -h --help"
	[holders]="-v --verbose --timeout=SECONDS --threads=N --from=FILE --format=FMT --json --color[=WHEN] -h --help"
	[plan]="--pid=PID --gpu-mem=SIZE --host-mem=SIZE --model-config=FILE --weights-gb=SIZE
		--overhead=SIZE --avg-tokens=N --log=FILE --engine-version=V --nvml=FILE --no-nvml --json --color[=WHEN] -h --help"
	[check]="--wait=SECONDS --ended-job=JOBID --host --from=FILE --nvml=FILE --no-nvml -i=GPU --id=GPU --json
		--color[=WHEN] -h --help"
	[metrics]="-o=FILE --output=FILE --max-processes=N --from=FILE --nvml=FILE --no-nvml -h --help"
	[serve]="--listen=ADDR:PORT --scrape-timeout=SECONDS --max-processes=N --scan-interval=SECONDS --from=FILE
		--nvml=FILE --no-nvml -h --help"
	[snapshot]="-o=FILE --output=FILE --redact --resample=SECONDS --from=FILE --nvml=FILE --no-nvml -h --help"
)
# What each command's operands are: GPU selectors, FILE paths, a COMMAND line (after --), or none.
declare -gA _gpuwho_operands=([ps]=GPU [why]=GPU [free]=GPU [holders]=FILE [plan]=COMMAND [check]=GPU [metrics]="" [serve]="" [snapshot]="")

# _gpuwho_names CMD: the option names of CMD, one per word (--color, --from, ...).
_gpuwho_names() {
	local w words out=()
	read -rd '' -a words <<<"${_gpuwho_opts[$1]}"
	for w in "${words[@]}"; do
		w=${w%%\[=*}
		out+=("${w%%=*}")
	done
	echo "${out[*]}"
}

# _gpuwho_kind CMD OPT: how OPT of CMD takes a value: "" (a flag or unknown), "=KIND" (required),
# "[=KIND]" (optional, only as OPT=VALUE).
_gpuwho_kind() {
	local w words
	read -rd '' -a words <<<"${_gpuwho_opts[$1]} ${_gpuwho_opts[top]}"
	for w in "${words[@]}"; do
		case $w in
		"$2"=*) echo "=${w#*=}"; return ;;
		"$2"\[=*) echo "[=${w#*\[=}"; return ;;
		esac
	done
}

# _gpuwho_gpus: GPU selectors of this host: the indices of /dev/nvidiaN, and all.
_gpuwho_gpus() {
	local f n out=()
	for f in "${GPUWHO_DEV_ROOT:-/dev}"/nvidia[0-9]*; do
		n=${f##*/nvidia}
		[[ $n =~ ^[0-9]+$ ]] && out+=("$n")
	done
	echo "${out[*]} all"
}

# _gpuwho_value KIND CUR: sets COMPREPLY to the values of an option of KIND that start with CUR.
_gpuwho_value() {
	case $1 in
	FILE) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$2") ;;
	GPU) mapfile -t COMPREPLY < <(compgen -W "$(_gpuwho_gpus)" -- "$2") ;;
	WHEN) mapfile -t COMPREPLY < <(compgen -W "auto always never" -- "$2") ;;
	FMT) mapfile -t COMPREPLY < <(compgen -W "text json csv" -- "$2") ;;
	PID) mapfile -t COMPREPLY < <(compgen -W "$(cd /proc 2>/dev/null && echo [0-9]*)" -- "$2") ;;
	*) COMPREPLY=() ;;
	esac
}

_gpuwho() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=""
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	# Find the command: the first word that is neither an option nor an option's value.
	local i w cmd="" kind dashdash=0 first_after_dd=0
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [ "$dashdash" = 1 ]; then first_after_dd=$((first_after_dd + 1)); continue; fi
		case $w in
		--) dashdash=1 ;;
		=) i=$((i + 1)) ;;   # "--opt = value", as bash splits at "="
		-*=*) ;;
		-*)
			kind=$(_gpuwho_kind "${cmd:-top}" "$w")
			# a value in the next word, unless bash split off an "=" there
			[[ $kind == =* && ${COMP_WORDS[i + 1]:-} != "=" ]] && i=$((i + 1))
			;;
		*)
			if [ -z "$cmd" ]; then
				if [[ " $_gpuwho_commands help " == *" $w "* ]]; then cmd="$w"; else cmd="ps"; fi
			fi
			;;
		esac
	done

	# A value of an option: "--opt VALUE", "--opt=VALUE", or "--opt = VALUE" split by bash.
	local opt="" val="" prefix=""
	if [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then
		opt=${COMP_WORDS[COMP_CWORD - 2]} val=$cur
	elif [ "$cur" = "=" ]; then
		opt=$prev val=""
	elif [[ $cur == -*=* ]]; then
		opt=${cur%%=*} val=${cur#*=} prefix="$opt="
	elif [[ $prev == -* ]] && [ "$dashdash" = 0 ]; then
		kind=$(_gpuwho_kind "${cmd:-top}" "$prev")
		if [[ $kind == =* ]]; then
			_gpuwho_value "${kind#=}" "$cur"
			return 0
		fi
	fi
	if [ -n "$opt" ] && [ "$dashdash" = 0 ]; then
		kind=$(_gpuwho_kind "${cmd:-top}" "$opt")
		kind=${kind#\[}; kind=${kind%]}
		_gpuwho_value "${kind#=}" "$val"
		[ -n "$prefix" ] && COMPREPLY=("${COMPREPLY[@]/#/$prefix}")
		return 0
	fi

	# After "--" (plan): the launch command, then files.
	if [ "$dashdash" = 1 ]; then
		if [ "$first_after_dd" = 0 ]; then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur")
		else
			compopt -o filenames 2>/dev/null
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		fi
		return 0
	fi

	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_gpuwho_names "${cmd:-top}")" -- "$cur")
		return 0
	fi
	case $cmd in
	"") mapfile -t COMPREPLY < <(compgen -W "$_gpuwho_commands help" -- "$cur") ;;
	help) mapfile -t COMPREPLY < <(compgen -W "$_gpuwho_commands" -- "$cur") ;;
	*)
		case ${_gpuwho_operands[$cmd]:-} in
		GPU) _gpuwho_value GPU "$cur" ;;
		FILE) _gpuwho_value FILE "$cur" ;;
		COMMAND) mapfile -t COMPREPLY < <(compgen -W "--" -- "$cur") ;;
		esac
		;;
	esac
	return 0
}
complete -F _gpuwho gpuwho
