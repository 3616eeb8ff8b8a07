#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# config/install_policy.sh, as `meson install` runs it: a fresh install
# writes the shipped policy; reinstalling keeps a local edit and writes the
# shipped file beside it; an unedited file is replaced and the side copy
# goes.
# Usage: install_policy_test.sh INSTALL_POLICY SHIPPED_POLICY
set -euo pipefail
script=$1
shipped=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
target=$work/etc/cppcgov/policy.yaml

DESTDIR=$work "$script" "$shipped" /etc/cppcgov >/dev/null
cmp -s "$shipped" "$target" || fail "a fresh install did not write the policy"
[ ! -e "$target.new" ] || fail "a fresh install wrote policy.yaml.new"

echo "schedutil: {headroom: 1.5}" >>"$target"
edited=$(cat "$target")
out=$(DESTDIR=$work "$script" "$shipped" /etc/cppcgov)
[ "$(cat "$target")" = "$edited" ] || fail "reinstalling overwrote a local edit"
cmp -s "$shipped" "$target.new" || fail "the shipped policy is not in policy.yaml.new"
[[ $out == *"kept the edited"* ]] || fail "reinstalling said nothing of the kept edit: '$out'"

cp "$shipped" "$target"
DESTDIR=$work "$script" "$shipped" /etc/cppcgov >/dev/null
cmp -s "$shipped" "$target" || fail "an unedited policy was not rewritten"
[ ! -e "$target.new" ] || fail "policy.yaml.new stayed beside an unedited policy"
echo "ok: fresh install, a kept edit, an unedited file rewritten"
