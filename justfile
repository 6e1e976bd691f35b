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

# Install what the integration tests use: Chromium (set CHROMIUM_PATH=/usr/bin/chromium)
# and poppler-utils (pdftotext) for the PDF renderer tests.
services:
    command -v chromium >/dev/null && command -v pdftotext >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium poppler-utils)
    @echo "export CHROMIUM_PATH=$(command -v chromium)"

# What CI runs.
ci:
    bash .ci/run
