#!/usr/bin/env bash
# Formats nanoprobe's C and C++ sources with clang-format-14 and the
# .clang-format files (tests/ is left as it is: its sources are matched by
# line number). --check changes nothing and exits 1 naming the files that
# differ (the code_format test).
set -euo pipefail
cd "$(dirname "$0")/.."
tool=clang-format-14
command -v "$tool" >/dev/null || { echo "format: $tool is not installed (scripts/deps.sh installs it)" >&2; exit 2; }
# every source folder but tests/ (a build folder may sit at the top)
mapfile -t files < <(find bench common dh_comms examples kerneldb llvm-pass prelude python runtime \
  tools -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.hip' \) | sort)
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    "$tool" --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: ${#bad[@]} file(s) differ from .clang-format (run scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files match .clang-format"
else
  "$tool" --style=file -i "${files[@]}"
fi
