#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The bash completions load in a plain bash (no bash-completion framework),
# register for their programs (`complete -p`) and offer the expected words;
# cxlpool-io's profile names come from the built program.
#   check_completion.sh COMPLETION_DIR CXLPOOL_IO
set -uo pipefail
dir=$1
PATH=$(cd "$(dirname "$2")" && pwd):$PATH
status=0
fail() { echo "FAIL $*"; status=1; }

# complete_words PROGRAM WORD... : the candidates for the last WORD.
complete_words() {
  bash --norc --noprofile -c '
    source "$1/cxlpoolctl.bash" && source "$1/cxlpool-io.bash" || exit 1
    shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
    fn=$(complete -p "$1" | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
    "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$dir" "$@"
}

for program in cxlpoolctl cxlpool-io; do
  spec=$(bash --norc --noprofile -c 'source "$1/cxlpoolctl.bash"; source "$1/cxlpool-io.bash"; complete -p "$2"' \
         _ "$dir" "$program" 2>&1) || fail "complete -p $program: $spec"
  echo "ok   $spec"
done

got=$(complete_words cxlpoolctl "" | tr '\n' ' ')
for want in status tiers regions clients stats backends region tiering kv weights devices; do
  [[ " $got" == *" $want "* ]] || fail "cxlpoolctl <TAB> lacks $want (got: $got)"
done
[ "$(complete_words cxlpoolctl ti | tr '\n' ' ')" = "tiering tiers " ] || fail "cxlpoolctl ti<TAB>"
[ "$(complete_words cxlpoolctl kv "" | tr '\n' ' ')" = "drop namespaces status " ] || fail "cxlpoolctl kv <TAB>"
[ "$(complete_words cxlpoolctl --so | tr '\n' ' ')" = "--socket " ] || fail "cxlpoolctl --so<TAB>"
[ "$(complete_words cxlpool-io --output-format "" | tr '\n' ' ')" = "json json+ normal " ] ||
  fail "cxlpool-io --output-format <TAB>"
[ "$(complete_words cxlpool-io --ioengine = io_ | tr '\n' ' ')" = "io_uring " ] || fail "cxlpool-io --ioengine=io_<TAB>"
[[ " $(complete_words cxlpool-io --list | tr '\n' ' ')" == *" --list-profiles "* ]] || fail "cxlpool-io --list<TAB>"
[ "$(complete_words cxlpool-io --profile layer-stream | tr '\n' ' ')" = "layer-stream layer-stream-mmap " ] ||
  fail "cxlpool-io --profile layer-stream<TAB>: $(complete_words cxlpool-io --profile layer-stream | tr '\n' ' ')"
[ $status -eq 0 ] && echo "completion check OK"
exit $status
