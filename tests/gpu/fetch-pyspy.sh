#!/bin/sh
# On a machine with PyPI: fetch py-spy's wheel (a static binary inside) into .whl/ (git-ignored), for
# tests/gpu/calls/10-spy.sh on a GPU machine without network: carry .whl with the call.
set -eu
cd "$(dirname "$0")/../.."
mkdir -p .whl
python3 -m pip download -q py-spy==0.4.3 --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
  --python-version 3.12 -d .whl
ls "$PWD"/.whl/py_spy-*.whl
