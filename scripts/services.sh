#!/usr/bin/env bash
# Every service the integration and end-to-end tests need, started if it does not answer.
#
#   scripts/services.sh start   # idempotent: check each service, start what does not answer, wait
#                               # (bounded) until it does; progress on stderr, then the export
#                               # lines on stdout. Exits non-zero, naming the service, when one
#                               # never answers.
#   scripts/services.sh env     # the export lines only, for: eval "$(bash scripts/services.sh env)"
#   scripts/services.sh stop    # stop what `start` launched itself (MongoDB stand-in, moto), by PID;
#                               # the machine's own PostgreSQL, MariaDB, RabbitMQ and Redis keep running
#
# Services (see docs/src/contributing/testing.md and /work/.library/env/machines/rust-svc.md):
#   PostgreSQL   127.0.0.1:5432   machine service; started with pg_ctlcluster if it does not answer
#   MariaDB      127.0.0.1:3306   machine service (root, empty password, database test); started
#                                 with start-stop-daemon … /usr/sbin/mariadbd if it does not answer
#   RabbitMQ     127.0.0.1:5672   machine service; `rabbitmqctl start_app` if the node runs with the
#                                 app stopped, `rabbitmq-server -detached` (loopback only) if not
#   Redis        127.0.0.1:6379   machine service (Debian redis-server); started with
#                                 `redis-server --daemonize yes` (loopback only) if it does not answer
#   MongoDB      127.0.0.1:27017  SecantusDB stand-in, scripts/mongo-standin.sh (MONGO_PORT)
#   MongoDB      127.0.0.1:27018  the same, presenting itself as a standalone server
#                                 (MONGO_STANDALONE_PORT): `reporter serve` must refuse it
#   S3           127.0.0.1:5000   moto, scripts/moto.sh (MOTO_HOST, MOTO_PORT)
#   chromium, pdftotext           Debian packages chromium and poppler-utils, installed if missing
#   mdbook                        the book's builder (crates.io, `cargo install --locked`: no Debian
#                                 package), installed if missing; a few minutes the first time
#   Playwright                    the `playwright` Python package in a venv under .cache/services
#                                 (PLAYWRIGHT_PYTHON), for the Console's browser test
#   SDK and contract tools        openapi-python-client and schemathesis (PyPI, pinned in
#                                 tests/sdk/requirements.txt), the TypeScript toolchain (npm ci in
#                                 tests/sdk/typescript, pinned by its package-lock.json), node
#
# SERVICES_TIMEOUT (seconds, default 60) bounds each wait. State lives in .cache/services
# (git-ignored): the export lines, and a marker per service this script launched.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATE="$ROOT/.cache/services"
ENV_FILE="$STATE/env"
TIMEOUT="${SERVICES_TIMEOUT:-60}"
MONGO_PORT="${MONGO_PORT:-27017}"
MONGO_STANDALONE_PORT="${MONGO_STANDALONE_PORT:-27018}"
MOTO_PORT="${MOTO_PORT:-5000}"

POSTGRES_URL_VALUE="postgres://postgres@127.0.0.1:5432/postgres"
MYSQL_URL_VALUE="mysql://root@127.0.0.1:3306/test"
RABBITMQ_URI_VALUE="amqp://guest:guest@127.0.0.1:5672/%2f"
MONGODB_URI_VALUE="mongodb://127.0.0.1:${MONGO_PORT}"
MONGODB_STANDALONE_URI_VALUE="mongodb://127.0.0.1:${MONGO_STANDALONE_PORT}/?directConnection=true"

log() { echo "services: $*" >&2; }

# tcp_open PORT: something accepts a connection on 127.0.0.1:PORT.
tcp_open() {
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# wait_for NAME CHECK...: poll CHECK every 0.5 s for up to $TIMEOUT seconds.
wait_for() {
    local name="$1"
    shift
    local deadline=$((SECONDS + TIMEOUT))
    while ((SECONDS < deadline)); do
        if "$@"; then
            return 0
        fi
        sleep 0.5
    done
    log "ERROR: $name did not answer within ${TIMEOUT} s"
    return 1
}

# ---------------------------------------------------------------- PostgreSQL

pg_answers() {
    if command -v pg_isready >/dev/null; then
        pg_isready -q -h 127.0.0.1 -p 5432 -t 2
    else
        tcp_open 5432
    fi
}

start_postgres() {
    if pg_answers; then
        log "PostgreSQL answers on 127.0.0.1:5432"
        return 0
    fi
    local version
    version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)"
    if [[ -z "$version" ]] || ! command -v pg_ctlcluster >/dev/null; then
        log "ERROR: PostgreSQL does not answer on 127.0.0.1:5432 and no cluster under /etc/postgresql to start"
        return 1
    fi
    log "PostgreSQL does not answer; starting cluster $version/main"
    # Exits 2 when the cluster is already running (e.g. still starting up): then just wait.
    pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || log "pg_ctlcluster exited $?; waiting anyway"
    wait_for "PostgreSQL on 127.0.0.1:5432" pg_answers || return 1
    log "PostgreSQL up on 127.0.0.1:5432"
}

# ---------------------------------------------------------------- Redis

REDIS_URL_VALUE="redis://127.0.0.1:6379"

redis_answers() {
    if command -v redis-cli >/dev/null; then
        [[ "$(timeout 3 redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" == "PONG" ]]
    else
        tcp_open 6379
    fi
}

start_redis() {
    if redis_answers; then
        log "Redis answers on 127.0.0.1:6379"
        return 0
    fi
    if ! command -v redis-server >/dev/null; then
        log "ERROR: Redis does not answer on 127.0.0.1:6379 and redis-server is not installed (apt-get install redis-server)"
        return 1
    fi
    log "Redis does not answer; starting redis-server on 127.0.0.1:6379"
    redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --save '' --appendonly no >&2 ||
        log "redis-server exited $?; waiting anyway"
    wait_for "Redis on 127.0.0.1:6379" redis_answers || return 1
    log "Redis up on 127.0.0.1:6379"
}

# ---------------------------------------------------------------- MariaDB

# The server answers a query as root over TCP (the URL the tests use).
maria_answers() {
    if command -v mariadb >/dev/null; then
        timeout 5 mariadb --no-defaults -h 127.0.0.1 -P 3306 -uroot -e 'SELECT 1' test >/dev/null 2>&1
    else
        tcp_open 3306
    fi
}

start_mariadb() {
    if maria_answers; then
        log "MariaDB answers on 127.0.0.1:3306"
        return 0
    fi
    if [[ ! -x /usr/sbin/mariadbd ]]; then
        log "ERROR: MariaDB does not answer on 127.0.0.1:3306 and /usr/sbin/mariadbd is missing (Debian package mariadb-server)"
        return 1
    fi
    log "MariaDB does not answer; starting /usr/sbin/mariadbd"
    # The machine's own command (rust-svc.md); --oknodo: fine if it is already starting.
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd >&2 ||
        log "start-stop-daemon exited $?; waiting anyway"
    wait_for "MariaDB on 127.0.0.1:3306" maria_answers || {
        log "last lines of the MariaDB log:"
        tail -n 20 /var/log/mysql/error.log 2>/dev/null >&2 || true
        return 1
    }
    log "MariaDB up on 127.0.0.1:3306"
}

# ---------------------------------------------------------------- RabbitMQ

# The broker answers: the AMQP port accepts connections and the rabbit app is fully booted.
rabbit_answers() {
    tcp_open 5672 && timeout 15 rabbitmq-diagnostics -q check_running >/dev/null 2>&1
}

# The Erlang node runs (its app may be stopped, e.g. after `rabbitmqctl stop_app`).
rabbit_node_up() {
    timeout 15 rabbitmqctl -q ping >/dev/null 2>&1
}

start_rabbitmq() {
    if ! command -v rabbitmqctl >/dev/null; then
        log "ERROR: rabbitmqctl not found (Debian package rabbitmq-server)"
        return 1
    fi
    if rabbit_answers; then
        log "RabbitMQ answers on 127.0.0.1:5672"
        return 0
    fi
    if rabbit_node_up; then
        log "RabbitMQ node runs but the app does not answer; rabbitmqctl start_app"
        timeout "$TIMEOUT" rabbitmqctl -q start_app >&2 || log "rabbitmqctl start_app exited $?; waiting anyway"
    else
        log "RabbitMQ does not run; rabbitmq-server -detached (loopback only)"
        # Keep it on loopback (../shared/reference/stack-probe.md section 4), unless the machine's
        # own configuration already does: a second listener definition would clash with it.
        local -a vars=()
        if ! grep -qs '^ *listeners\.tcp' /etc/rabbitmq/rabbitmq.conf; then
            vars+=(RABBITMQ_NODE_IP_ADDRESS=127.0.0.1)
        fi
        if ! grep -qs 'ERL_EPMD_ADDRESS' /etc/rabbitmq/rabbitmq-env.conf; then
            vars+=(ERL_EPMD_ADDRESS=127.0.0.1)
        fi
        if ! grep -qs 'inet_dist_use_interface' /etc/rabbitmq/rabbitmq-env.conf; then
            vars+=("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}")
        fi
        env "${vars[@]}" rabbitmq-server -detached >&2 || log "rabbitmq-server -detached exited $?; waiting anyway"
    fi
    # `await_startup` returns at once before the node exists, so poll (stack-probe.md section 4).
    wait_for "RabbitMQ on 127.0.0.1:5672" rabbit_answers || {
        log "last lines of the RabbitMQ log:"
        tail -n 20 /var/log/rabbitmq/*.log 2>/dev/null >&2 || true
        return 1
    }
    log "RabbitMQ up on 127.0.0.1:5672"
}

# ---------------------------------------------------------------- MongoDB stand-in, moto

# start_mongo PORT MARKER [STANDALONE]: the stand-in on PORT (STANDALONE=1: presenting itself as a
# standalone server); MARKER records that this script launched it. Idempotent: leaves alone
# whatever answers a ping; progress to stderr.
start_mongo() {
    local port="$1" marker="$2" standalone="${3:-0}" was_open=0
    tcp_open "$port" && was_open=1
    if ! MONGO_STANDALONE="$standalone" MONGO_PORT="$port" \
        bash "$ROOT/scripts/mongo-standin.sh" start >&2; then
        log "ERROR: the MongoDB stand-in did not start on 127.0.0.1:$port (log: .cache/mongo-standin/server-$port.log)"
        return 1
    fi
    if ((was_open == 0)); then
        touch "$STATE/$marker"
    fi
}

# stop_mongo PORT MARKER: stops the stand-in on PORT if MARKER says this script launched it.
stop_mongo() {
    if [[ -f "$STATE/$2" ]]; then
        MONGO_PORT="$1" bash "$ROOT/scripts/mongo-standin.sh" stop >&2 || true
        rm -f "$STATE/$2"
    fi
}

MOTO_URL=""
start_moto() {
    local was_open=0
    tcp_open "$MOTO_PORT" && was_open=1
    if ! MOTO_URL="$(MOTO_PORT="$MOTO_PORT" bash "$ROOT/scripts/moto.sh" start)"; then
        log "ERROR: moto (S3) did not start on 127.0.0.1:$MOTO_PORT (log: .cache/moto/moto-$MOTO_PORT.log)"
        return 1
    fi
    if ((was_open == 0)); then
        touch "$STATE/started-moto"
    fi
}

# ---------------------------------------------------------------- Chromium, pdftotext

CHROMIUM_PATH_VALUE=""
ensure_pdf_tools() {
    if ! command -v chromium >/dev/null || ! command -v pdftotext >/dev/null; then
        log "installing chromium and poppler-utils (apt-get)"
        local sudo=()
        if ((EUID != 0)); then
            sudo=(sudo -n)
        fi
        if ! { "${sudo[@]}" apt-get update -qq &&
            "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium poppler-utils >/dev/null; }; then
            log "ERROR: apt-get install chromium poppler-utils failed"
            return 1
        fi
    fi
    CHROMIUM_PATH_VALUE="${CHROMIUM_PATH:-$(command -v chromium)}"
    log "chromium at $CHROMIUM_PATH_VALUE, pdftotext at $(command -v pdftotext)"
}

# ---------------------------------------------------------------- SDK and contract tools

# The pinned versions of tests/sdk/requirements.txt are installed (pip is a no-op when they
# already are); the TypeScript packages are installed from tests/sdk/typescript's lock file.
ensure_sdk_tools() {
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        log "ERROR: node and npm are needed for the TypeScript client test"
        return 1
    fi
    if ! python3 -m pip install -q --disable-pip-version-check -r "$ROOT/tests/sdk/requirements.txt" >&2; then
        log "ERROR: pip install -r tests/sdk/requirements.txt failed"
        return 1
    fi
    if ! (cd "$ROOT/tests/sdk/typescript" && npm ci --no-audit --no-fund --silent >&2); then
        log "ERROR: npm ci in tests/sdk/typescript failed"
        return 1
    fi
    log "openapi-python-client $(openapi-python-client --version | awk '{print $NF}'), schemathesis $(st --version | awk '{print $NF}'), node $(node --version)"
}

# ---------------------------------------------------------------- mdbook (the book in docs/)

# CI builds the book (`mdbook build docs`); Debian has no package, so it comes from crates.io,
# pinned, once per machine.
MDBOOK_VERSION=0.5.4
ensure_mdbook() {
    if command -v mdbook >/dev/null && mdbook --version | grep -q "v$MDBOOK_VERSION"; then
        log "mdbook $(mdbook --version | awk '{print $NF}')"
        return 0
    fi
    log "installing mdbook $MDBOOK_VERSION (cargo install --locked; a few minutes, once)"
    if ! cargo install --locked --quiet mdbook --version "=$MDBOOK_VERSION" >&2; then
        log "ERROR: cargo install mdbook failed"
        return 1
    fi
}

# ---------------------------------------------------------------- Playwright (Console tests)

# The Console's browser journey (tests/processes/console.rs) runs tests/console/journey.py with
# a python3 that has the `playwright` package, driving the Debian chromium above (no browser
# download: `playwright install` is never run). A venv under .cache keeps it off the system's
# Python; pip is a no-op when the pinned version is already there.
PLAYWRIGHT_VERSION="1.65.3"
PLAYWRIGHT_PYTHON_VALUE=""
ensure_playwright() {
    local venv="$STATE/playwright-venv"
    if [[ ! -x "$venv/bin/python3" ]] && ! python3 -m venv "$venv" >&2; then
        log "ERROR: python3 -m venv $venv failed (Debian: apt-get install python3-venv)"
        return 1
    fi
    if ! "$venv/bin/python3" -c "import playwright, importlib.metadata as m, sys; sys.exit(m.version('playwright') != '$PLAYWRIGHT_VERSION')" 2>/dev/null; then
        log "installing playwright==$PLAYWRIGHT_VERSION (pip, into $venv)"
        if ! "$venv/bin/python3" -m pip install -q --disable-pip-version-check "playwright==$PLAYWRIGHT_VERSION" >&2; then
            log "ERROR: pip install playwright failed"
            return 1
        fi
    fi
    PLAYWRIGHT_PYTHON_VALUE="$venv/bin/python3"
    log "playwright $PLAYWRIGHT_VERSION at $PLAYWRIGHT_PYTHON_VALUE"
}

# ---------------------------------------------------------------- subcommands

export_line() { printf 'export %s=%q\n' "$1" "$2"; }

cmd_start() {
    mkdir -p "$STATE"
    local failed=()
    start_postgres || failed+=(PostgreSQL)
    start_mariadb || failed+=(MariaDB)
    start_rabbitmq || failed+=(RabbitMQ)
    start_redis || failed+=(Redis)
    start_mongo "$MONGO_PORT" started-mongo || failed+=("MongoDB stand-in")
    start_mongo "$MONGO_STANDALONE_PORT" started-mongo-standalone 1 ||
        failed+=("standalone MongoDB stand-in")
    start_moto || failed+=("moto (S3)")
    ensure_pdf_tools || failed+=("chromium/pdftotext")
    ensure_sdk_tools || failed+=("SDK and contract tools")
    ensure_playwright || failed+=("Playwright (Python)")
    ensure_mdbook || failed+=(mdbook)
    if ((${#failed[@]})); then
        rm -f "$ENV_FILE"
        log "FAILED: $(IFS=,; echo "${failed[*]}" | sed 's/,/, /g') (see the messages above)"
        return 1
    fi
    {
        export_line POSTGRES_URL "$POSTGRES_URL_VALUE"
        export_line MYSQL_URL "$MYSQL_URL_VALUE"
        export_line RABBITMQ_URI "$RABBITMQ_URI_VALUE"
        export_line MONGODB_URI "$MONGODB_URI_VALUE"
        export_line MONGODB_STANDALONE_URI "$MONGODB_STANDALONE_URI_VALUE"
        export_line S3_ENDPOINT "$MOTO_URL"
        export_line CHROMIUM_PATH "$CHROMIUM_PATH_VALUE"
        export_line PLAYWRIGHT_PYTHON "$PLAYWRIGHT_PYTHON_VALUE"
        export_line REDIS_URL "$REDIS_URL_VALUE"
    } >"$ENV_FILE.tmp"
    mv "$ENV_FILE.tmp" "$ENV_FILE"
    log "all services answer (${SECONDS} s)"
    cat "$ENV_FILE"
}

cmd_env() {
    if [[ ! -f "$ENV_FILE" ]]; then
        log "ERROR: no $ENV_FILE; run 'bash scripts/services.sh start' first"
        return 1
    fi
    cat "$ENV_FILE"
}

cmd_stop() {
    stop_mongo "$MONGO_PORT" started-mongo
    stop_mongo "$MONGO_STANDALONE_PORT" started-mongo-standalone
    if [[ -f "$STATE/started-moto" ]]; then
        MOTO_PORT="$MOTO_PORT" bash "$ROOT/scripts/moto.sh" stop || true
        rm -f "$STATE/started-moto"
    fi
    rm -f "$ENV_FILE"
    log "stopped what this script started; PostgreSQL, MariaDB and RabbitMQ left running"
}

case "${1:-}" in
start) cmd_start ;;
env) cmd_env ;;
stop) cmd_stop ;;
*)
    echo "usage: $0 start|env|stop" >&2
    exit 2
    ;;
esac
