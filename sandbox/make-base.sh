#!/bin/sh
# Build the sandbox's base image without any registry: a minimal Debian made
# with debootstrap, imported into Docker. The judge's images start from it.
#
#   sandbox/make-base.sh [TAG] [MIRROR]     (default tag judge-base:bookworm)
#
# Needs root, debootstrap and a running Docker engine. About a minute.
set -eu
tag="${1:-judge-base:bookworm}"
mirror="${2:-http://deb.debian.org/debian}"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,libstdc++6,ca-certificates \
  bookworm "$root" "$mirror" >/dev/null
# Smaller and quieter: no package caches, no apt lists.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import --change 'ENV LANG=C.UTF-8' - "$tag" >/dev/null
echo "$tag"
