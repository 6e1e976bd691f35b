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

# Start the local services the integration tests use (none are needed yet).
services:
    @echo "No external service is needed by the current test suites."

# What CI runs.
ci:
    bash .ci/run
