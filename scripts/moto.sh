#!/usr/bin/env bash
# A local S3-compatible server (moto) for the S3 adapter tests.
#
#   scripts/moto.sh start   # install moto into .cache/moto/venv if needed, start it in the
#                           # background, wait until it answers; idempotent
#   scripts/moto.sh stop    # stop the server this script started
#   scripts/moto.sh url     # print the endpoint (what S3_ENDPOINT should be)
#
# MOTO_HOST (127.0.0.1) and MOTO_PORT (5000) choose the address. State lives in .cache/moto
# (git-ignored): venv/, and per port moto-PORT.pid and moto-PORT.log. `start` prints the
# endpoint on stdout (progress goes to stderr) and exits non-zero when the server never answers.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.cache/moto"
venv="$dir/venv"
host="${MOTO_HOST:-127.0.0.1}"
port="${MOTO_PORT:-5000}"
pidfile="$dir/moto-$port.pid"
log="$dir/moto-$port.log"
url="http://$host:$port"
moto_spec='moto[server]>=5.1,<6'

answers() {
    # moto answers GET / with a ListBuckets document.
    python3 - "$url" <<'PY' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/", timeout=2).read()
PY
}

running_pid() {
    [[ -f "$pidfile" ]] || return 1
    local pid
    pid="$(cat "$pidfile")"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

install() {
    if [[ -x "$venv/bin/moto_server" ]]; then
        return 0
    fi
    echo "moto: installing $moto_spec into $venv" >&2
    mkdir -p "$dir"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$moto_spec"
}

start() {
    if answers; then
        echo "moto: already answering at $url" >&2
        echo "$url"
        return 0
    fi
    install
    if pid="$(running_pid)"; then
        echo "moto: process $pid exists but does not answer; restarting" >&2
        stop
    fi
    mkdir -p "$dir"
    nohup "$venv/bin/moto_server" -H "$host" -p "$port" >"$log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 60); do
        if answers; then
            echo "moto: started (pid $(cat "$pidfile")) at $url" >&2
            echo "$url"
            return 0
        fi
        if ! running_pid >/dev/null; then
            break
        fi
        sleep 0.5
    done
    echo "moto: did not answer at $url; log follows" >&2
    tail -n 30 "$log" >&2 || true
    stop
    return 1
}

stop() {
    local pid
    if pid="$(running_pid)"; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 20); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        kill -9 "$pid" 2>/dev/null || true
        echo "moto: stopped (pid $pid)" >&2
    fi
    rm -f "$pidfile"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) echo "$url" ;;
    *)
        echo "usage: $0 start|stop|url" >&2
        exit 2
        ;;
esac
