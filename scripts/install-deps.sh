#!/usr/bin/env bash
# Installs the Debian 12 packages attnscope needs, and only those dpkg reports missing.
# Idempotent: when everything is present it installs nothing and touches no package list.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqt6svg6 qt6-qpa-plugins
  libqcustomplot-dev
  libtorch-dev libopenblas0-openmp
  nlohmann-json3-dev
  libonig-dev libicu-dev libsentencepiece-dev
  libgtest-dev libbenchmark-dev
  xvfb xauth imagemagick poppler-utils xdotool
  python3-torch python3-numpy
  fonts-dejavu-core
  clang-format
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# libopenblas0-openmp conflicts with the pthread variant; apt resolves that by replacing it.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
