#!/usr/bin/env bash
# A private RabbitMQ node for the chaos tests and the benchmarks: they stop it, alarm it and
# start it again, which they must never do to the shared broker on 5672.
#
#   scripts/chaos-broker.sh start   # starts the node (loopback only, no plugins, its own data
#                                   # and log directories), waits until it accepts AMQP, prints
#                                   # the export lines
#   scripts/chaos-broker.sh stop    # stops the node and removes its directories
#   scripts/chaos-broker.sh ctl ARGS...   # rabbitmqctl against the node
#
# Environment (all optional):
#   CHAOS_RABBITMQ_NODE       node name            (default reporter-chaos@localhost)
#   CHAOS_RABBITMQ_PORT       AMQP port            (default 5673)
#   CHAOS_RABBITMQ_DIST_PORT  Erlang distribution  (default AMQP port + 20000)
#   CHAOS_RABBITMQ_BASE       state directory      (default /tmp/reporter-chaos-rabbit-<port>)
#   CHAOS_TIMEOUT             seconds to wait for the node (default 90)
# The machine's own configuration (/etc/rabbitmq) is not read: a private config file names the
# listener, and an empty plugins file keeps the management and prometheus listeners (whose
# ports would collide with the shared node's) off.
set -euo pipefail

PORT="${CHAOS_RABBITMQ_PORT:-5673}"
NODE="${CHAOS_RABBITMQ_NODE:-reporter-chaos@localhost}"
DIST_PORT="${CHAOS_RABBITMQ_DIST_PORT:-$((PORT + 20000))}"
BASE="${CHAOS_RABBITMQ_BASE:-/tmp/reporter-chaos-rabbit-$PORT}"
TIMEOUT="${CHAOS_TIMEOUT:-90}"

log() { echo "chaos-broker: $*" >&2; }

if ((DIST_PORT < 1 || DIST_PORT > 65535)); then
    log "ERROR: distribution port $DIST_PORT is not a port (set CHAOS_RABBITMQ_DIST_PORT)"
    exit 2
fi

node_env() {
    export RABBITMQ_NODENAME="$NODE"
    export RABBITMQ_DIST_PORT="$DIST_PORT"
    export RABBITMQ_MNESIA_BASE="$BASE/mnesia"
    export RABBITMQ_LOG_BASE="$BASE/log"
    export RABBITMQ_CONFIG_FILE="$BASE/rabbitmq.conf"
    export RABBITMQ_ENABLED_PLUGINS_FILE="$BASE/enabled_plugins"
    export RABBITMQ_CONF_ENV_FILE="$BASE/rabbitmq-env.conf"
    export RABBITMQ_PID_FILE="$BASE/pid"
    export ERL_EPMD_ADDRESS=127.0.0.1
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}

ctl() {
    node_env
    rabbitmqctl -n "$NODE" "$@"
}

tcp_open() {
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

answers() {
    tcp_open "$PORT" && timeout 15 rabbitmqctl -n "$NODE" -q status >/dev/null 2>&1
}

start() {
    if ! command -v rabbitmq-server >/dev/null; then
        log "ERROR: rabbitmq-server not found (Debian package rabbitmq-server)"
        return 1
    fi
    node_env
    if answers; then
        log "node $NODE already answers on 127.0.0.1:$PORT"
    else
        if tcp_open "$PORT"; then
            log "ERROR: something else listens on 127.0.0.1:$PORT"
            return 1
        fi
        mkdir -p "$BASE/mnesia" "$BASE/log"
        printf 'listeners.tcp.local = 127.0.0.1:%s\n' "$PORT" >"$BASE/rabbitmq.conf"
        echo '[].' >"$BASE/enabled_plugins"
        : >"$BASE/rabbitmq-env.conf"
        if ((EUID == 0)) && id rabbitmq >/dev/null 2>&1; then
            chown -R rabbitmq:rabbitmq "$BASE"
        fi
        log "starting $NODE on 127.0.0.1:$PORT (distribution $DIST_PORT, state $BASE)"
        rabbitmq-server -detached >&2 || log "rabbitmq-server -detached exited $?; waiting anyway"
        local deadline=$((SECONDS + TIMEOUT))
        until answers; do
            if ((SECONDS >= deadline)); then
                log "ERROR: $NODE did not answer within ${TIMEOUT} s; last log lines:"
                tail -n 30 "$BASE"/log/*.log >&2 2>/dev/null || true
                return 1
            fi
            sleep 0.5
        done
        log "$NODE up (${SECONDS} s)"
    fi
    echo "export CHAOS_RABBITMQ_URI=amqp://guest:guest@127.0.0.1:${PORT}/%2f"
    echo "export CHAOS_RABBITMQ_NODE=${NODE}"
}

stop() {
    node_env
    if timeout 30 rabbitmqctl -n "$NODE" -q stop >/dev/null 2>&1; then
        log "stopped $NODE"
    else
        log "$NODE was not running"
    fi
    rm -rf "$BASE"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
ctl)
    shift
    ctl "$@"
    ;;
*)
    echo "usage: $0 start|stop|ctl ARGS..." >&2
    exit 2
    ;;
esac
