#!/usr/bin/env bash
# Runs a command (a test run) with TMPDIR pointing to a fresh private folder, and fails when
# the command left anything in it: what a test, or a process it started, wrote to the
# temporary directory and never removed. The folder is removed afterwards either way.
#   bash scripts/tmp-clean.sh cargo test -p reporter --lib
set -uo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
base="${TMPDIR:-/tmp}"
run_tmp="$(mktemp -d "$base/reporter-tmp-clean.XXXXXX")"
TMPDIR="$run_tmp" "$@"
status=$?
left="$(find "$run_tmp" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort)"
rm -rf "$run_tmp"
if [ -n "$left" ]; then
    echo "tmp-clean: the run left these in the temporary directory:" >&2
    echo "$left" | sed 's/^/  /' >&2
    [ "$status" -eq 0 ] && status=1
fi
exit "$status"
