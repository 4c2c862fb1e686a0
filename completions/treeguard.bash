# bash completion for treeguard(1); installed by `cmake --install` into
# share/bash-completion/completions/treeguard (bash-completion loads it on demand).

_treeguard() {
    local cur prev sub i word duration=""
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}

    # The subcommand, and (for run) where COMMAND starts: the first word that is neither an option
    # nor an option's value, or the word after "--".
    sub=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ -z $sub ]]; then
            [[ $word == -* ]] || sub=$word
            continue
        fi
        if [[ $sub == run ]]; then
            case $word in
                --) i=$((i + 1)); break ;;
                -t | --timeout | -s | --signal | -k | --kill-after | --boundary | --cgroup-parent | \
                    --memory-max | --pids-max | --leftovers | --state-dir | --report | --keep-limit) i=$((i + 1)) ;;
                -*) ;;
                *) break ;;
            esac
        elif [[ $sub == timeout ]]; then
            # timeout's grammar: options, DURATION (after "--" too), then COMMAND
            case $word in
                --)
                    i=$((i + 1))
                    [[ $i -lt $COMP_CWORD ]] && duration=${COMP_WORDS[i]} && i=$((i + 1))
                    break ;;
                -k | --kill-after | -s | --signal) i=$((i + 1)) ;;
                -*) ;;
                *) duration=$word; i=$((i + 1)); break ;;
            esac
        fi
    done
    if [[ $sub == timeout && -n $duration && $i -eq $COMP_CWORD ]]; then
        # COMMAND itself, after DURATION
        COMPREPLY=($(compgen -c -- "$cur"))
        return 0
    fi
    if [[ ($sub == run || ($sub == timeout && -n $duration)) && $i -lt $COMP_CWORD ]]; then
        # Completing COMMAND or its arguments: complete as for that command.
        local offset=$i
        if declare -F _command_offset >/dev/null; then
            _command_offset "$offset"
        else
            COMPREPLY=($(compgen -c -- "$cur"))
        fi
        return 0
    fi

    case $prev in
        -s | --signal)
            COMPREPLY=($(compgen -W "TERM INT HUP QUIT KILL USR1 USR2" -- "$cur"))
            return 0 ;;
        --boundary)
            COMPREPLY=($(compgen -W "auto cgroup process-group pid-namespace" -- "$cur"))
            return 0 ;;
        --leftovers)
            COMPREPLY=($(compgen -W "kill wait outer fail" -- "$cur"))
            return 0 ;;
        --state-dir | --cgroup-parent)
            COMPREPLY=($(compgen -d -- "$cur"))
            return 0 ;;
        --report)
            COMPREPLY=($(compgen -f -- "$cur"))
            return 0 ;;
        -t | --timeout | -k | --kill-after | --why | --keep-limit | --memory-max | --pids-max)
            return 0 ;;
    esac

    case $sub in
        "")
            COMPREPLY=($(compgen -W "run timeout probe status sweep resolve --help --version" -- "$cur")) ;;
        run)
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "--timeout --signal --kill-after --preserve-status --boundary
                    --cgroup-parent --memory-max --pids-max --leftovers --state-dir --keep-records --keep-limit --report
                    --verbose --quiet
                    --help --version --" -- "$cur"))
            else
                COMPREPLY=($(compgen -c -- "$cur"))
            fi ;;
        timeout)
            [[ $cur == -* ]] && COMPREPLY=($(compgen -W "--foreground --kill-after --preserve-status
                --signal --verbose --help --version" -- "$cur")) ;;
        probe) COMPREPLY=($(compgen -W "--json --help" -- "$cur")) ;;
        status) COMPREPLY=($(compgen -W "--json --state-dir --help" -- "$cur")) ;;
        sweep | resolve) COMPREPLY=($(compgen -W "--state-dir --help $([[ $sub == resolve ]] && echo --why)" -- "$cur")) ;;
    esac
    return 0
}
complete -F _treeguard treeguard
