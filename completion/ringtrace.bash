# bash completion for ringtrace (installed as
# share/bash-completion/completions/ringtrace).
#
# Commands and each command's options are read from `ringtrace --help` and
# `ringtrace COMMAND --help` of the ringtrace being completed, so they always
# match it; an option's values when its help lists them (--format=text|json).
# Session names come from `ringtrace list`, which answers at once and never
# starts the daemon (nothing is offered when none runs). Trace directories,
# output files and, after `record --`, the command to run are completed from
# the file system.

# Lines of `ringtrace [COMMAND] --help`, cached per command for the shell.
declare -gA _ringtrace_help_cache
_ringtrace_help()
{
	local key="$1|$2"
	if [[ -z ${_ringtrace_help_cache[$key]+set} ]]; then
		_ringtrace_help_cache[$key]=$("$1" ${2:+"$2"} --help 2>/dev/null)
	fi
	printf '%s\n' "${_ringtrace_help_cache[$key]}"
}

_ringtrace_commands()
{
	_ringtrace_help "$1" "" | awk '/^  [a-z][a-z-]*  /{print $1}'
}

# The options of a command: every -x and --long-name its help shows.
_ringtrace_options()
{
	_ringtrace_help "$1" "$2" |
		grep -oE -- '(^|[ ,[(])--?[a-zA-Z][a-zA-Z0-9-]*' | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' |
		sort -u
}

# The argument an option takes, as its help shows it: an upper-case name
# (DIR, SIZE) or a list of values (text|json); nothing for a flag.
_ringtrace_option_arg()
{
	_ringtrace_help "$1" "$2" |
		grep -oE -- "(^|[ ,])$3[ =]([A-Z][A-Z_,.]*|[a-z0-9]+(\|[a-z0-9]+)+)" | head -n 1 |
		sed -E "s/^[ ,]?$3[ =]//"
}

_ringtrace_sessions()
{
	"$1" list 2>/dev/null | sed -nE 's/^ *[0-9]+\) ([^ ]+).*/\1/p'
}

_ringtrace()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local rt=${COMP_WORDS[0]} cmd= i
	COMPREPLY=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} != -* ]]; then
			cmd=${COMP_WORDS[i]}
			break
		fi
	done
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "--help --version" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_ringtrace_commands "$rt")" -- "$cur")
		fi
		return
	fi

	# record ... -- CMD ARGS: complete the command, then its arguments.
	if [[ $cmd == record ]]; then
		for ((i = 2; i < COMP_CWORD; i++)); do
			if [[ ${COMP_WORDS[i]} == -- ]]; then
				if ((COMP_CWORD == i + 1)); then
					mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
				else
					mapfile -t COMPREPLY < <(compgen -f -- "$cur")
				fi
				return
			fi
		done
	fi

	if [[ $prev == -* && $prev != *=* ]]; then
		case $prev in
		-s | --session)
			mapfile -t COMPREPLY < <(compgen -W "$(_ringtrace_sessions "$rt")" -- "$cur")
			return ;;
		-o | --output)
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			return ;;
		esac
		local arg
		arg=$(_ringtrace_option_arg "$rt" "$cmd" "$prev")
		if [[ $arg == *'|'* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "${arg//|/ }" -- "$cur")
			return
		elif [[ -n $arg ]]; then
			return	# a value to type: nothing to offer
		fi
	fi

	if [[ $cur == --*=* ]]; then
		local opt=${cur%%=*} arg
		arg=$(_ringtrace_option_arg "$rt" "$cmd" "$opt")
		[[ $arg == *'|'* ]] &&
			mapfile -t COMPREPLY < <(compgen -P "$opt=" -W "${arg//|/ }" -- "${cur#*=}")
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_ringtrace_options "$rt" "$cmd")" -- "$cur")
		return
	fi

	case $cmd in
	destroy | start | stop | set-session | list | status | save | rotate)
		mapfile -t COMPREPLY < <(compgen -W "$(_ringtrace_sessions "$rt")" -- "$cur") ;;
	snapshot)
		mapfile -t COMPREPLY < <(compgen -W "record" -- "$cur") ;;
	summary | view | analyze | export | report)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	load)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	esac
}
complete -o filenames -F _ringtrace ringtrace
