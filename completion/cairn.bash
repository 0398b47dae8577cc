# bash completion for cairn: verbs, options, property names, and dataset,
# snapshot and bookmark names from `cairn list -H -o name`.
# Verbs and options are read from the installed command itself (its verb
# list and each verb's usage line), so they never go stale.

_cairn_props_settable="source compression chunksize exclude exclude_caches cairnignore encryption keyformat keylocation"
_cairn_props_all="$_cairn_props_settable name type guid createtxg creation userrefs defer_destroy used referenced refer logicalreferenced lrefer written objsetid lastverified available avail inconsistent receive_resume_token origin encryptionroot keystatus all"

_cairn_verbs() {
	"$1" --help 2>/dev/null | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'
}

# The options in a verb's usage text.  A store that cannot exist keeps the
# command from touching a real one if it got as far as opening it.
_cairn_verb_opts() {
	local cmd=$1 verb=$2
	[ "$verb" = have ] && return
	"$cmd" -s /nonexistent/cairn-completion "$verb" --cairn-completion-probe </dev/null 2>&1 |
		sed -n '/usage:/,$p' | grep -o -- '[[ |]--\?[A-Za-z][A-Za-z-]*' | sed 's/^[[ |]//' |
		while read -r o; do
			case $o in
			--*) echo "$o" ;;
			*) # -FHht: a cluster of single-letter options
				for ((k = 1; k < ${#o}; k++)); do echo "-${o:k:1}"; done ;;
			esac
		done | sort -u
}

_cairn_names() {
	local type=filesystem,volume
	case $cur in
	*@*) type=snapshot ;;
	*'#'*) type=bookmark ;;
	esac
	"${cmd[@]}" list -H -o name -t "$type" 2>/dev/null
}

_cairn() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local -a cmd=("${COMP_WORDS[0]}")
	local i=1 verb= nargs=0
	while [ $i -lt "$COMP_CWORD" ]; do
		case ${COMP_WORDS[i]} in
		-s)
			cmd+=(-s "${COMP_WORDS[i + 1]}")
			i=$((i + 2))
			continue
			;;
		-s?*) cmd+=("${COMP_WORDS[i]}") ;;
		-*) ;;
		*)
			verb=${COMP_WORDS[i]}
			break
			;;
		esac
		i=$((i + 1))
	done
	COMPREPLY=()
	if [ -z "$verb" ]; then
		if [ "$prev" = -s ]; then
			COMPREPLY=($(compgen -d -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_cairn_verbs "${COMP_WORDS[0]}") -s -h --help -V --version" -- "$cur"))
		fi
		return
	fi
	# Arguments after the verb that are not options (or option values).
	for ((j = i + 1; j < COMP_CWORD; j++)); do
		case ${COMP_WORDS[j]} in
		-o | -t | -d | -s | -S | -i | -I | -x | -L | --order | --threads | --batch | --cache-capacity | --keep-*) j=$((j + 1)) ;;
		-*) ;;
		*) nargs=$((nargs + 1)) ;;
		esac
	done
	case $prev in
	-o)
		case $verb in
		create | recv | receive | change-key)
			compopt -o nospace 2>/dev/null
			COMPREPLY=($(compgen -S = -W "$_cairn_props_settable" -- "$cur"))
			;;
		list | get) COMPREPLY=($(compgen -W "$_cairn_props_all" -- "$cur")) ;;
		mount) COMPREPLY=($(compgen -W "allow_other ro" -- "$cur")) ;;
		esac
		return
		;;
	-t)
		[ "$verb" = list ] || [ "$verb" = get ] &&
			COMPREPLY=($(compgen -W "filesystem volume snapshot bookmark all" -- "$cur"))
		return
		;;
	-s | -S | -x)
		COMPREPLY=($(compgen -W "$_cairn_props_all" -- "$cur"))
		return
		;;
	--order)
		COMPREPLY=($(compgen -W "inode digest none" -- "$cur"))
		return
		;;
	esac
	case $cur in
	-*)
		COMPREPLY=($(compgen -W "$(_cairn_verb_opts "${COMP_WORDS[0]}" "$verb")" -- "$cur"))
		return
		;;
	esac
	case $verb in
	set)
		# PROP=VALUE... then datasets: offer both until a dataset is given.
		[[ $cur == *=* ]] && return
		if [ "$nargs" = 0 ] || [[ ${COMP_WORDS[COMP_CWORD - 1]} == *=* ]]; then
			compopt -o nospace 2>/dev/null
			COMPREPLY=($(compgen -S = -W "$_cairn_props_settable" -- "$cur"))
		fi
		COMPREPLY+=($(compgen -W "$(_cairn_names)" -- "$cur"))
		return
		;;
	get | inherit)
		if [ "$nargs" = 0 ]; then
			COMPREPLY=($(compgen -W "$([ $verb = get ] && echo "$_cairn_props_all" || echo "$_cairn_props_settable")" -- "$cur"))
			return
		fi
		;;
	hold | release)
		[ "$nargs" = 0 ] && return # the tag
		;;
	mount)
		if [ "$nargs" = 0 ]; then
			COMPREPLY=($(compgen -d -- "$cur"))
			return
		fi
		;;
	restore)
		if [ "$nargs" = 1 ]; then
			COMPREPLY=($(compgen -d -- "$cur"))
			return
		fi
		;;
	init | config | gc | have) return ;;
	esac
	COMPREPLY=($(compgen -W "$(_cairn_names)" -- "$cur"))
}
complete -F _cairn cairn
