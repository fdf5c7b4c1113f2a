#!/usr/bin/env bash
# Installs the Debian 12 packages nanoprobe needs to build and test, and only
# those that are missing. Idempotent; run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  clang-15 llvm-15-dev llvm-15-tools lld-15
  clang-22 llvm-22-dev llvm-22-tools lld-22 libclang-rt-22-dev
  clang-tools-22 clang-format-14
  hipcc rocm-device-libs libamdhip64-dev libhsa-runtime-dev
  librocrand1
  sqlite3 libsqlite3-dev
  libelf-dev libdw-dev libmsgpack-dev libzstd-dev zstd
  libunwind-dev valgrind
  libjansson-dev
  python3 python3-pip python3-venv python3-pytest
  python3-yaml
  python3-dev
  chromium
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
