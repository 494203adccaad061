#!/bin/sh
# On a machine with Debian's package archive: fetch bubblewrap's .deb into .deb/
# (git-ignored) so that a GPU machine without it can unpack it (run.sh does).
set -eu
cd "$(dirname "$0")/../.."
mkdir -p .deb
cd .deb && apt-get download bubblewrap 2>/dev/null
ls "$PWD"/*.deb
