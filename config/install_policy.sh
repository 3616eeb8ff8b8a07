#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the shipped policy as a configuration file is installed: never
# over a local edit. Run by `meson install` (meson.add_install_script) as
#   install_policy.sh SOURCE DIR
# with DIR the absolute configuration directory; DESTDIR, when set, is put
# in front of it. An absent policy.yaml, or one equal to the shipped file,
# is (re)written; an edited one is kept, and the shipped file is written
# beside it as policy.yaml.new (which the daemon does not read) to compare.
set -eu
source=$1
dir=${DESTDIR:-}$2
target=$dir/policy.yaml
mkdir -p "$dir"
if [ -e "$target" ] && ! cmp -s "$source" "$target"; then
    install -m 644 "$source" "$target.new"
    echo "kept the edited $target; the shipped policy is in $target.new"
else
    install -m 644 "$source" "$target"
    rm -f "$target.new"
fi
