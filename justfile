# Everyday recipes. `just --list` shows them.

# Run the service in memory (no configuration needed).
run:
    cargo run --release

# Run every test (the README's second command).
test:
    cargo test --workspace

# A test run (default: the service's unit tests) that must leave nothing in the temporary
# directory: TMPDIR is a fresh folder, checked empty afterwards (scripts/tmp-clean.sh).
test-tmp-clean *ARGS='-p reporter --lib':
    bash scripts/tmp-clean.sh cargo test {{ARGS}}

# Regenerate the committed OpenAPI documents under openapi/.
openapi:
    cargo run -q -- openapi --write openapi

# Regenerate the configuration reference from the variables' declarations (src/config).
config-reference:
    cargo run -q -- config reference > docs/src/operations/configuration.md

# Formatting and lints, exactly as CI runs them.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings

# Install and start every service the integration tests use, and print the variables to export.
services:
    bash scripts/services.sh start

# Stop what `just services` started.
services-stop:
    bash scripts/services.sh stop

# The end-to-end suites against a fresh MongoDB stand-in (CI's second pass); starts the services first.
test-mongo:
    #!/usr/bin/env bash
    set -euo pipefail
    services_env="$(bash scripts/services.sh start)"
    eval "$services_env"
    bash scripts/mongo-standin.sh stop || true
    bash scripts/mongo-standin.sh start >/dev/null
    REPORTER_E2E_BACKEND=mongo REPORTER_E2E_KEEP_DATABASES=1 cargo test -p reporter --test suite -- api::

# The chaos scenarios (ignored by `cargo test`: minutes, private RabbitMQ nodes and MongoDB
# stand-ins); needs rabbitmq-server and python3, and the shared RabbitMQ for the events.
test-chaos:
    #!/usr/bin/env bash
    set -euo pipefail
    services_env="$(bash scripts/services.sh start)"
    eval "$services_env"
    cargo test -p reporter --test chaos -- --ignored

# Speed and memory figures, each a ratio to a baseline measured in the same run (release
# build, a private RabbitMQ node, load from wrk, a scratch PostgreSQL database on 127.0.0.1:5432);
# prints the table and writes BENCHMARKS.md.
# Arguments go to reporter-bench: --rounds N, --only NAME[,NAME], --quick.
bench *ARGS:
    #!/usr/bin/env bash
    set -euo pipefail
    if ! command -v wrk >/dev/null; then
        apt-get install -y -qq wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
    fi
    cargo build --release -p reporter -p reporter-bench
    "${CARGO_TARGET_DIR:-target}/release/reporter-bench" --write BENCHMARKS.md {{ARGS}}

# What CI runs.
ci:
    bash .ci/run
