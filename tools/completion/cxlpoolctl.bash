# SPDX-License-Identifier: Apache-2.0
# bash completion for cxlpoolctl: commands, their subcommands and options;
# region, namespace, model and device arguments come from the running daemon.

_cxlpoolctl_ask() {  # words of column 1 of `cxlpoolctl ... LIST`, header dropped
  local -a socket=()
  [[ -n $_cxlpoolctl_socket ]] && socket=(--socket "$_cxlpoolctl_socket")
  cxlpoolctl "${socket[@]}" "$@" 2>/dev/null | awk 'NR > 1 && $1 ~ /^[A-Za-z0-9_.:\/-]+$/ {print $1}'
}

_cxlpoolctl() {
  local cur prev
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  local _cxlpoolctl_socket=""
  local -a words=()
  local i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --socket) _cxlpoolctl_socket=${COMP_WORDS[i+1]}; ((i++)) ;;
      -*) ;;
      *) words+=("${COMP_WORDS[i]}") ;;
    esac
  done
  if [[ $prev == --socket ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
    return
  fi
  if [[ $cur == -* ]]; then
    local opts="--json --help"
    ((${#words[@]} == 0)) && opts="--socket --json --help --version"
    [[ ${words[0]} == tiering && ${words[1]} == hot ]] && opts+=" --top"
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  local candidates=""
  case "${words[*]}" in
    "") candidates="status tiers regions clients stats backends region tiering kv weights devices pod" ;;
    region) candidates="migrate" ;;
    "region migrate") candidates=$(_cxlpoolctl_ask regions) ;;
    "region migrate "*) ((${#words[@]} == 3)) && candidates=$(_cxlpoolctl_ask tiers) ;;
    tiering) candidates="status hot set" ;;
    "tiering set") candidates="enabled= epoch_ms= nominator= sketch_rows= sketch_width= top_k= hwt_capacity=
                     sparse_max_words= promote_sparse= min_accesses= base_frequency_hz= fscale_power=
                     min_period_ms= max_period_ms= high_watermark= low_watermark= rate_limit_mib_s= batch_pages="
                   compopt -o nospace 2>/dev/null ;;
    kv) candidates="status namespaces drop" ;;
    "kv drop") candidates=$(_cxlpoolctl_ask kv namespaces) ;;
    weights) candidates="list unload" ;;
    "weights unload") candidates=$(_cxlpoolctl_ask weights list) ;;
    devices) candidates="failover" ;;
    "devices failover") candidates=$(_cxlpoolctl_ask devices) ;;
    pod) candidates="status" ;;
  esac
  COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -F _cxlpoolctl cxlpoolctl
