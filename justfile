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

# Install and start every service the integration tests use, and print the variables to export.
services:
    bash scripts/services.sh start

# Stop what `just services` started.
services-stop:
    bash scripts/services.sh stop

# What CI runs.
ci:
    bash .ci/run
