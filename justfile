# Everyday recipes. `just --list` shows them.

# Run the service in memory (no configuration needed).
run:
    cargo run --release

# Run every test (the README's test command).
test:
    cargo test --workspace

# Regenerate the committed OpenAPI documents under openapi/.
openapi:
    cargo run -q -- openapi --write openapi

# Formatting and lints, exactly as CI runs them.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings

# Start the local services the integration tests use (PostgreSQL is the machine's own).
# Then: POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres S3_ENDPOINT=http://127.0.0.1:5000
services:
    bash scripts/moto.sh start

# Stop what `just services` started.
services-stop:
    bash scripts/moto.sh stop

# What CI runs.
ci:
    bash .ci/run
