//! Records what `/version` reports (see `src/build_info.rs`, shared with its tests).
#[path = "src/build_info.rs"]
mod build_info;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/build_info.rs");
    for var in build_info::ENV_VARS {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let root = std::path::PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()),
    );
    let info = build_info::collect(&root, &|name| std::env::var(name).ok());
    for path in &info.watch {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rustc-env=REPORTER_BUILD_COMMIT={}", info.commit);
    println!("cargo:rustc-env=REPORTER_BUILD_DIRTY={}", info.dirty);
    println!("cargo:rustc-env=REPORTER_BUILD_TIME={}", info.build_time);
    println!("cargo:rustc-env=REPORTER_BUILD_RUSTC={}", info.rustc);
}
