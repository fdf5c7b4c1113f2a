#!/usr/bin/env bash
# Runs the "; RUN:" lines of an IR test (a minimal lit): substitutes %opt,
# %FileCheck (the tools of one LLVM), %plugin (that LLVM's libNanoPass.so),
# %major (its version) and %s (the test file); every line must succeed.
# usage: run.sh LLVM_TOOLS_DIR PLUGIN MAJOR TEST.ll
set -euo pipefail
tools=$1 plugin=$2 major=$3 test=$4
n=0
while IFS= read -r line; do
  cmd=${line#*RUN: }
  cmd=${cmd//%opt/$tools/opt}
  cmd=${cmd//%FileCheck/$tools/FileCheck}
  cmd=${cmd//%plugin/$plugin}
  cmd=${cmd//%major/$major}
  cmd=${cmd//%s/$test}
  echo "RUN: $cmd"
  bash -o pipefail -c "$cmd"
  n=$((n + 1))
done < <(grep '^; RUN: ' "$test")
if [ "$n" -eq 0 ]; then
  echo "run.sh: no RUN lines in $test" >&2
  exit 1
fi
echo "ok: $n RUN lines"
