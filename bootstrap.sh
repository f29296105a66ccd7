#!/usr/bin/env bash
# One-step set-up for a fresh Debian 12 machine.
#   ./bootstrap.sh run    install what is missing, build, open the dashboard on the
#                         Fashion-MNIST MLP example (headless runner without a display)
#   ./bootstrap.sh test   install what is missing, build, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
mode="${1:-run}"

packages=(build-essential cmake ninja-build pkg-config
          qt6-base-dev libqcustomplot-dev libeigen3-dev nlohmann-json3-dev zlib1g-dev
          libdnnl-dev  # oneDNN: the CPU backend's convolutions
          libopenmpi-dev openmpi-bin
          dataset-fashion-mnist xvfb xauth python3-numpy
          iproute2)  # ip netns: the network-fault tests (tests/netns)

# The differential tests against PyTorch (tests/torch, label torch) need it;
# only the test command installs it.
[ "$mode" = test ] && packages+=(python3-torch)
scripts/install-packages.sh "${packages[@]}"

cmake --preset release
cmake --build --preset release

case "$mode" in
  run)
    example=resources/examples/fashion-mlp.strata
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x build/app/strata ]; then
      exec build/app/strata "$example"
    fi
    echo "bootstrap: no display; running the headless runner"
    exec build/app/strata-run "$example"
    ;;
  test)
    exec ctest --preset release -j2
    ;;
  *)
    echo "usage: $0 run|test" >&2
    exit 2
    ;;
esac
