//! The dependency direction, checked: a failing test when it breaks.
//!
//! - `ports/` (the domain and the port traits) depends on no I/O crate and no other
//!   Reporter crate;
//! - the contract suites depend on the ports only;
//! - the template builder (`builder/`), a pure compiler, depends on no I/O crate and on no
//!   Reporter crate but the ports ([`BUILDER`]);
//! - an adapter depends on no other adapter and not on the application; what two adapters
//!   share lives in a support crate of [`SUPPORT_CRATES`], which depends on no I/O crate and
//!   on no Reporter crate but those its entry allows (the ports at most: never an adapter or
//!   the application);
//! - the application (`src/`) depends on no driver crate and names no driver type: drivers
//!   are reached through the adapters.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Crates that do I/O besides the drivers: HTTP and the runtime.
const RUNTIME_CRATES: &[&str] = &["tokio", "poem", "poem-openapi", "hyper", "reqwest"];

/// True for a crate that does I/O (a driver, HTTP, the runtime).
fn is_io(name: &str) -> bool {
    DRIVERS.contains(&name) || RUNTIME_CRATES.contains(&name)
}

/// Driver crates the application MUST reach only through an adapter.
const DRIVERS: &[&str] = &[
    "mongodb",
    "bson",
    "lapin",
    "tokio-postgres",
    "deadpool-postgres",
    "sqlx",
    "mysql_async",
    "tiberius",
    "object_store",
    "aws-sdk-s3",
];

/// Support crates: code two adapters share (they cannot import each other), each with the
/// Reporter crates it may depend on. An adapter MAY depend on these; each MUST depend on no
/// I/O crate (driver, HTTP, runtime) and on no Reporter crate but the ones listed here.
/// `reporter-sql-support` (the SQL sources' dialect trait, filter builder, schema cache)
/// speaks the ports' language (`TableQuery`, `DataSourceError`): it may use the ports; the
/// parts that need a driver type stay in the adapters, behind its `Dialect` trait.
const SUPPORT_CRATES: &[(&str, &[&str])] = &[
    ("reporter-child-confine", &[]),
    ("reporter-sql-support", &["reporter-ports"]),
];

/// The template builder (`reporter-builder`: blocks → template code) with the Reporter crates
/// it may depend on. A pure compiler like the ports: it MUST depend on no I/O crate (driver,
/// HTTP, runtime) and on no Reporter crate but the ports (whose output formats, template
/// rules and sandbox errors it speaks); never an adapter or the application, which runs its
/// stages with the I/O ones.
const BUILDER: (&str, &[&str]) = ("reporter-builder", &["reporter-ports"]);

/// The dependencies of the template `builder` that break the direction: any I/O crate, any
/// Reporter crate [`BUILDER`] does not allow.
fn wrong_builder_dependencies(builder: &Member) -> Vec<String> {
    wrong_support_dependencies(builder, BUILDER.1)
}

/// True for a support crate of [`SUPPORT_CRATES`].
fn is_support(name: &str) -> bool {
    SUPPORT_CRATES.iter().any(|(support, _)| *support == name)
}

/// The dependencies of `adapter` that break the direction: another adapter, the application,
/// or a Reporter crate that is neither the ports nor a support crate.
fn wrong_adapter_dependencies(adapter: &Member) -> Vec<String> {
    adapter
        .deps
        .iter()
        .filter(|d| d.starts_with("reporter"))
        .filter(|d| d.as_str() != "reporter-ports" && !is_support(d))
        .map(|d| format!("{} -> {d}", adapter.name))
        .collect()
}

/// The dependencies of `support` that break the direction: any I/O crate, any Reporter
/// crate but the `allowed` ones.
fn wrong_support_dependencies(support: &Member, allowed: &[&str]) -> Vec<String> {
    support
        .deps
        .iter()
        .filter(|d| (d.starts_with("reporter") && !allowed.contains(&d.as_str())) || is_io(d))
        .map(|d| format!("{} -> {d}", support.name))
        .collect()
}

/// One workspace member: its name and its normal (not dev) dependencies.
struct Member {
    name: String,
    deps: BTreeSet<String>,
}

fn members() -> Vec<Member> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = meta["packages"].as_array().expect("packages");
    packages
        .iter()
        .map(|p| Member {
            name: p["name"].as_str().unwrap_or_default().to_owned(),
            deps: p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null() || d["kind"] == "build")
                .filter_map(|d| d["name"].as_str().map(str::to_owned))
                .collect(),
        })
        .collect()
}

fn member<'a>(all: &'a [Member], name: &str) -> &'a Member {
    all.iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("workspace member {name}"))
}

#[test]
fn ports_depend_on_no_io_crate_and_no_other_reporter_crate() {
    let all = members();
    let ports = member(&all, "reporter-ports");
    let bad: Vec<&String> = ports
        .deps
        .iter()
        .filter(|d| is_io(d) || d.starts_with("reporter"))
        .collect();
    assert!(bad.is_empty(), "reporter-ports depends on {bad:?}");
}

#[test]
fn contract_suites_depend_on_the_ports_only() {
    let all = members();
    let contract = member(&all, "reporter-contract");
    let bad: Vec<&String> = contract
        .deps
        .iter()
        .filter(|d| d.starts_with("reporter") && d.as_str() != "reporter-ports")
        .collect();
    assert!(bad.is_empty(), "reporter-contract depends on {bad:?}");
}

#[test]
fn the_builder_depends_on_no_io_crate_and_only_the_ports() {
    let all = members();
    let bad = wrong_builder_dependencies(member(&all, BUILDER.0));
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn the_builder_rule_refuses_io_an_adapter_and_the_application() {
    let crate_with = |deps: &[&str]| Member {
        name: BUILDER.0.to_owned(),
        deps: deps.iter().map(|d| (*d).to_owned()).collect(),
    };
    let pure = crate_with(&["reporter-ports", "serde", "serde_json"]);
    assert!(wrong_builder_dependencies(&pure).is_empty());
    let leaning = crate_with(&[
        "reporter-ports",
        "tokio",
        "poem-openapi",
        "reporter-adapter-pongo2",
        "reporter",
    ]);
    assert_eq!(
        wrong_builder_dependencies(&leaning),
        vec![
            "reporter-builder -> poem-openapi".to_owned(),
            "reporter-builder -> reporter".to_owned(),
            "reporter-builder -> reporter-adapter-pongo2".to_owned(),
            "reporter-builder -> tokio".to_owned(),
        ]
    );
}

#[test]
fn no_adapter_depends_on_another_adapter_or_on_the_application() {
    let all = members();
    let adapters: Vec<&Member> = all
        .iter()
        .filter(|m| m.name.starts_with("reporter-adapter-"))
        .collect();
    assert!(adapters.len() >= 10, "the adapters are found");
    let bad: Vec<String> = adapters
        .into_iter()
        .flat_map(wrong_adapter_dependencies)
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn support_crates_depend_on_no_io_crate_and_only_the_reporter_crates_they_list() {
    let all = members();
    let mut bad = Vec::new();
    for (name, allowed) in SUPPORT_CRATES {
        bad.extend(wrong_support_dependencies(member(&all, name), allowed));
    }
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn the_rules_refuse_an_adapter_on_an_adapter_and_a_support_crate_on_io() {
    let crate_with = |name: &str, deps: &[&str]| Member {
        name: name.to_owned(),
        deps: deps.iter().map(|d| (*d).to_owned()).collect(),
    };
    let pdf = crate_with(
        "reporter-adapter-pdf",
        &["reporter-ports", "reporter-child-confine", "tokio"],
    );
    assert!(wrong_adapter_dependencies(&pdf).is_empty());
    let importing = crate_with(
        "reporter-adapter-pdf",
        &[
            "reporter-child-confine",
            "reporter-adapter-sandbox",
            "reporter",
        ],
    );
    assert_eq!(
        wrong_adapter_dependencies(&importing),
        vec![
            "reporter-adapter-pdf -> reporter".to_owned(),
            "reporter-adapter-pdf -> reporter-adapter-sandbox".to_owned(),
        ]
    );
    let support = crate_with("reporter-child-confine", &["libc", "landlock"]);
    assert!(wrong_support_dependencies(&support, &[]).is_empty());
    let leaning = crate_with(
        "reporter-child-confine",
        &["tokio", "reporter-ports", "reporter-adapter-sandbox"],
    );
    assert_eq!(wrong_support_dependencies(&leaning, &[]).len(), 3);
    let sql = crate_with("reporter-sql-support", &["reporter-ports", "serde_json"]);
    assert!(wrong_support_dependencies(&sql, &["reporter-ports"]).is_empty());
    let driving = crate_with(
        "reporter-sql-support",
        &["reporter-ports", "tokio-postgres", "reporter-adapter-mysql"],
    );
    assert_eq!(
        wrong_support_dependencies(&driving, &["reporter-ports"]),
        vec![
            "reporter-sql-support -> reporter-adapter-mysql".to_owned(),
            "reporter-sql-support -> tokio-postgres".to_owned(),
        ]
    );
    let sql_user = crate_with(
        "reporter-adapter-mysql",
        &["reporter-ports", "reporter-sql-support", "mysql_async"],
    );
    assert!(wrong_adapter_dependencies(&sql_user).is_empty());
}

#[test]
fn the_application_depends_on_no_driver() {
    let all = members();
    let app = member(&all, "reporter");
    let bad: Vec<&String> = app
        .deps
        .iter()
        .filter(|d| DRIVERS.contains(&d.as_str()))
        .collect();
    assert!(bad.is_empty(), "the root crate depends on {bad:?}");
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_application_names_no_driver_type() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 20, "the sources are found");
    let paths: Vec<String> = DRIVERS
        .iter()
        .map(|d| format!("{}::", d.replace('-', "_")))
        .collect();
    let mut bad = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            // A string literal (a log filter directive, a message) is not a type.
            let outside_strings: String = code.split('"').step_by(2).collect();
            if let Some(p) = paths.iter().find(|p| outside_strings.contains(p.as_str())) {
                bad.push(format!("{}:{}: {p}", file.display(), n + 1));
            }
        }
    }
    assert!(bad.is_empty(), "driver types named in src/: {bad:#?}");
}
