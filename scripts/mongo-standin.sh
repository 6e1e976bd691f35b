#!/usr/bin/env bash
# A MongoDB-compatible server for the MongoDB adapter's tests: SecantusDB (PyPI `secantusdb`,
# a single-node replica set with transactions, GridFS and TTL; see
# ../shared/reference/mongo-standin.md). No Docker, no mongod download.
#
#   scripts/mongo-standin.sh start   # idempotent: does nothing when something answers a ping
#   scripts/mongo-standin.sh stop    # stops the server this script started (by its PID)
#   scripts/mongo-standin.sh restart # stops it (SIGKILL with MONGO_RESTART_SIGNAL=KILL) and starts
#                                    # it again on the same port and data directory (chaos tests),
#                                    # after MONGO_RESTART_DOWN_S seconds of outage (default 0)
#
# Environment: MONGO_PORT (default 27017), PYTHON (default python3), MONGO_STANDALONE=1 (the
# server presents itself as a standalone mongod, without transactions: for the test that
# `reporter serve` refuses such a deployment).
# The venv, and per port the PID file, the log and the data directory's name, live in
# .cache/mongo-standin/ (gitignored), so a failed start on one port cannot clobber the state of a
# server on another. Then:  export MONGODB_URI=mongodb://127.0.0.1:${MONGO_PORT}
set -euo pipefail

VERSION="0.7.0b3" # exact pin: a pre-release; earlier 0.6.0b builds were yanked
PORT="${MONGO_PORT:-27017}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/.cache/mongo-standin"
VENV="$DIR/venv"
PIDFILE="$DIR/pid-$PORT"
DATAFILE="$DIR/data-dir-$PORT"
LOG="$DIR/server-$PORT.log"

ping_server() {
    local py="${1:-$VENV/bin/python}"
    [ -x "$py" ] || return 1
    "$py" - "$PORT" <<'PY' >/dev/null 2>&1
import sys
from pymongo import MongoClient
c = MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}", serverSelectionTimeoutMS=500,
                directConnection=True)
c.admin.command("ping")
PY
}

hint() {
    if [ "${MONGO_STANDALONE:-0}" = "1" ]; then
        echo "export MONGODB_STANDALONE_URI=mongodb://127.0.0.1:${PORT}/?directConnection=true"
    else
        echo "export MONGODB_URI=mongodb://127.0.0.1:${PORT}"
    fi
}

ensure_venv() {
    mkdir -p "$DIR"
    if [ ! -x "$VENV/bin/secantusd-py" ]; then
        echo "mongo-standin: installing secantusdb==${VERSION} into $VENV"
        "${PYTHON:-python3}" -m venv "$VENV"
        "$VENV/bin/pip" install -q "secantusdb==${VERSION}"
    fi
}

start() {
    # The venv carries pymongo, which the ping needs, so it comes first (a no-op when present).
    ensure_venv
    if ping_server; then
        echo "mongo-standin: something already answers on 127.0.0.1:${PORT}; leaving it alone"
        hint
        return 0
    fi
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        echo "mongo-standin: pid $(cat "$PIDFILE") from an earlier start does not answer on" \
            "127.0.0.1:${PORT}; run '$0 stop' first (log: $LOG)" >&2
        return 1
    fi
    local data
    data="$(mktemp -d "${TMPDIR:-/tmp}/mongo-standin-data.XXXXXX")"
    echo "$data" >"$DATAFILE"
    launch "$data"
}

# launch DATA: starts the server on DATA and waits for its ping (30 s).
launch() {
    local data="$1"
    local extra=()
    if [ "${MONGO_STANDALONE:-0}" = "1" ]; then
        extra=(--standalone)
    fi
    "$VENV/bin/secantusd-py" --host 127.0.0.1 --port "$PORT" --storage-path "$data" \
        --enable-test-commands --log-level WARNING "${extra[@]}" >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 150); do
        if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
            echo "mongo-standin: the server exited; log:" >&2
            cat "$LOG" >&2
            rm -f "$PIDFILE"
            rm -rf "$data"
            rm -f "$DATAFILE"
            return 1
        fi
        if ping_server; then
            echo "mongo-standin: SecantusDB ${VERSION} up on 127.0.0.1:${PORT} (pid $(cat "$PIDFILE"))"
            hint
            return 0
        fi
        sleep 0.2
    done
    echo "mongo-standin: no ping answer within 30 s; log: $LOG" >&2
    return 1
}

restart() {
    if [ ! -f "$PIDFILE" ] || [ ! -f "$DATAFILE" ]; then
        echo "mongo-standin: nothing started by this script on ${PORT}; starting" >&2
        start
        return
    fi
    local pid data
    pid="$(cat "$PIDFILE")"
    data="$(cat "$DATAFILE")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "-${MONGO_RESTART_SIGNAL:-TERM}" "$pid"
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$PIDFILE"
    sleep "${MONGO_RESTART_DOWN_S:-0}"
    launch "$data"
}

stop() {
    if [ ! -f "$PIDFILE" ]; then
        echo "mongo-standin: no PID file ($PIDFILE); nothing started by this script"
        return 0
    fi
    local pid
    pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        echo "mongo-standin: stopped pid $pid"
    fi
    rm -f "$PIDFILE"
    if [ -f "$DATAFILE" ]; then
        rm -rf "$(cat "$DATAFILE")"
        rm -f "$DATAFILE"
    fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
restart) restart ;;
*)
    echo "usage: $0 start|stop|restart" >&2
    exit 2
    ;;
esac
