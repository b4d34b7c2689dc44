# SPDX-License-Identifier: Apache-2.0
# bash completion for cxlpool-io: its own options, fio's job options as
# --KEY=, the engines, the built-in profiles (from --list-profiles) and job
# files.

_cxlpool_io() {
  local cur prev
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  # bash splits "--key=value" at '=' (COMP_WORDBREAKS): "--key" "=" "value".
  if [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
    prev=${COMP_WORDS[COMP_CWORD-2]}
  elif [[ $cur == = ]]; then
    cur=""
  fi
  case $prev in
    --output-format) COMPREPLY=($(compgen -W "normal json json+" -- "$cur")); return ;;
    --output|--filename) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --plot) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --profile)
      COMPREPLY=($(compgen -W "$(cxlpool-io --list-profiles 2>/dev/null |
                                 awk '/^[a-z0-9][a-z0-9-]*([ \t]|$)/ {print $1}')" -- "$cur"))
      return ;;
    --ioengine) COMPREPLY=($(compgen -W "psync libaio io_uring mmap cuda kvstore devpool" -- "$cur")); return ;;
    --rw|--readwrite)
      COMPREPLY=($(compgen -W "read write randread randwrite rw readwrite randrw trim randtrim" -- "$cur"))
      return ;;
    --direct|--time_based|--group_reporting|--stonewall) COMPREPLY=($(compgen -W "0 1" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    local opts="--output-format --output --plot --profile --set --list-profiles --help --version
                --name --filename --size --offset --rw --bs --bsrange --bssplit --rwmixread --iodepth
                --numjobs --direct --ioengine --runtime --time_based --ramp_time --rate --rate_iops
                --thinktime --verify --stonewall --new_group --group_reporting"
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _cxlpool_io -o filenames cxlpool-io
