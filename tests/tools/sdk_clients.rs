//! Clients generated from the committed spec (`openapi/reporter.json`), driven against the
//! released binary: `openapi-python-client` (with `--fail-on-warning`: zero warnings) and
//! `openapi-typescript` + `openapi-fetch` type-checked with `tsc --strict`. Each runs one smoke
//! flow (upload a template, request a report, poll, download it, create and deliver a deadline,
//! read the event manifest). The generated code is written to a temporary directory, never
//! committed. The tools are installed by `scripts/services.sh`; without them the tests skip,
//! and fail under `REPORTER_REQUIRE_SERVICES=1`.
use crate::common;

use common::served::{Served, repo, require_tool, run};
use std::process::Command;
use std::time::Duration;

const STEP: Duration = Duration::from_secs(300);

#[test]
fn a_generated_python_client_runs_the_smoke_flow() {
    let _alone = super::one_at_a_time();
    if !require_tool("openapi-python-client") {
        return;
    }
    let out = tempfile::tempdir().expect("temp dir");
    let client = out.path().join("client");
    let sdk = repo().join("tests/sdk/python");
    let generated = run(
        "openapi-python-client generate",
        Command::new("openapi-python-client")
            .arg("generate")
            .arg("--path")
            .arg(repo().join("openapi/reporter.json"))
            .arg("--output-path")
            .arg(&client)
            .arg("--config")
            .arg(sdk.join("config.yaml"))
            .arg("--fail-on-warning"),
        out.path(),
        STEP,
    );
    assert!(
        !generated.to_lowercase().contains("warning"),
        "the generator warned:\n{generated}"
    );
    let served = Served::start(&[]);
    let smoke = run(
        "python smoke flow",
        Command::new("python3")
            .arg(sdk.join("smoke.py"))
            .arg(&served.url)
            .arg(common::token())
            .env("PYTHONPATH", &client),
        out.path(),
        STEP,
    );
    eprintln!("{}", smoke.trim());
    assert!(smoke.contains("python smoke:"), "{smoke}");
}

#[test]
fn a_generated_typescript_client_type_checks_strictly_and_runs_the_smoke_flow() {
    let _alone = super::one_at_a_time();
    if !require_tool("node") || !require_tool("npm") {
        return;
    }
    // A copy of the project's sources, with the packages `scripts/services.sh` installed
    // from the lock file (`npm ci` in tests/sdk/typescript), so the generated code stays out
    // of the repository.
    let sdk = repo().join("tests/sdk/typescript");
    let installed = sdk.join("node_modules/.bin/tsc").exists();
    if !common::chaos::require(
        "tests/sdk/typescript/node_modules (npm ci, run by scripts/services.sh)",
        installed,
    ) {
        return;
    }
    let out = tempfile::tempdir().expect("temp dir");
    let dir = out.path();
    for f in ["package.json", "tsconfig.json", "smoke.ts"] {
        std::fs::copy(sdk.join(f), dir.join(f)).expect("copy the TypeScript project");
    }
    std::os::unix::fs::symlink(sdk.join("node_modules"), dir.join("node_modules"))
        .expect("link node_modules");
    run(
        "openapi-typescript",
        Command::new("npx")
            .arg("openapi-typescript")
            .arg(repo().join("openapi/reporter.json"))
            .args(["-o", "generated/schema.d.ts"]),
        dir,
        STEP,
    );
    run(
        "tsc --strict",
        Command::new("npx").args(["tsc", "-p", "tsconfig.json"]),
        dir,
        STEP,
    );
    let served = Served::start(&[]);
    let smoke = run(
        "typescript smoke flow",
        Command::new("node")
            .arg("dist/smoke.js")
            .arg(&served.url)
            .arg(common::token()),
        dir,
        STEP,
    );
    eprintln!("{}", smoke.trim());
    assert!(smoke.contains("typescript smoke:"), "{smoke}");
}
