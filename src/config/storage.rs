//! The object storage section and the example data switch.
use super::{Checker, ObjectStorageChoice, RawConfig, S3Settings, parse_bool, problem};
use crate::worker::StorageSweepSettings;
use std::path::PathBuf;
use std::time::Duration;

impl RawConfig {
    /// `OBJECT_STORAGE_BACKEND` and its backend's variables.
    pub(super) fn object_storage(
        &self,
        c: &mut Checker,
        multi_tenant: bool,
    ) -> ObjectStorageChoice {
        match self
            .object_storage_backend
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "memory" => {
                let max_artifact_bytes = self.memory_max_bytes(c);
                ObjectStorageChoice::Memory {
                    max_artifact_bytes,
                    tenant_max_bytes: self.memory_tenant_max_bytes(
                        c,
                        max_artifact_bytes,
                        multi_tenant,
                    ),
                }
            }
            "fs" | "filesystem" => {
                if self.object_storage_path.trim().is_empty() {
                    c.problems
                        .push(problem("OBJECT_STORAGE_PATH", "empty", "a directory path"));
                }
                ObjectStorageChoice::Filesystem(PathBuf::from(self.object_storage_path.trim()))
            }
            "gridfs" => ObjectStorageChoice::GridFs,
            "s3" => ObjectStorageChoice::S3(Box::new(S3Settings {
                bucket: self.s3_bucket.trim().to_owned(),
                endpoint: self.s3_endpoint.clone().filter(|e| !e.trim().is_empty()),
                region: self.s3_region.trim().to_owned(),
                access_key_id: self.s3_access_key_id.clone().filter(|k| !k.is_blank()),
                secret_key: self.s3_secret_key.clone().filter(|k| !k.is_blank()),
                path_style: c.boolean("OBJECT_STORAGE_USE_PATH_STYLE", &self.s3_path_style),
                allow_http: c.boolean("OBJECT_STORAGE_DISABLE_SSL", &self.s3_disable_ssl),
            })),
            other => {
                c.problems.push(problem(
                    "OBJECT_STORAGE_BACKEND",
                    format!("'{other}' is not a storage backend"),
                    "memory|fs|gridfs|s3",
                ));
                ObjectStorageChoice::Memory {
                    max_artifact_bytes: None,
                    tenant_max_bytes: None,
                }
            }
        }
    }

    /// `OBJECT_STORAGE_ABANDONED_AFTER_SECONDS` (`None` when 0; else at least 60 and above
    /// `job_timeout`, the validated ENGINE_TIMEOUT_SEC that bounds an artifact's write, so
    /// no upload in progress is taken for an abandoned one) and
    /// `OBJECT_STORAGE_SWEEP_INTERVAL_SECONDS` (10 ..= 86400). No sweep for the `memory`
    /// backend: what it loses on exit goes with the process.
    pub(super) fn storage_sweep(
        &self,
        c: &mut Checker,
        job_timeout: Duration,
        backend: &'static str,
    ) -> Option<StorageSweepSettings> {
        let var = "OBJECT_STORAGE_ABANDONED_AFTER_SECONDS";
        let raw = self.object_storage_abandoned_after_seconds.trim();
        let after = c.int::<u64>(var, raw);
        let every = c.int::<u64>(
            "OBJECT_STORAGE_SWEEP_INTERVAL_SECONDS",
            self.object_storage_sweep_interval_seconds.trim(),
        );
        let job = job_timeout.as_secs();
        if after != 0 && (after < 60 || after <= job) {
            c.problems.push(problem(
                var,
                format!("{after} is not above ENGINE_TIMEOUT_SEC ({job}) and 60"),
                "0 (off), or seconds above both ENGINE_TIMEOUT_SEC and 60",
            ));
        }
        if after == 0 || backend == "memory" {
            return None;
        }
        Some(StorageSweepSettings {
            older_than: Duration::from_secs(after),
            every: Duration::from_secs(every),
            backend,
        })
    }

    /// `EXAMPLE_DATA_ENABLED`: `auto` (`None`) or a boolean.
    pub(super) fn example_data(&self, c: &mut Checker) -> Option<bool> {
        match self
            .example_data_enabled
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "auto" => None,
            other => match parse_bool(other) {
                Some(b) => Some(b),
                None => {
                    c.problems.push(problem(
                        "EXAMPLE_DATA_ENABLED",
                        format!("'{other}' is not auto or a boolean"),
                        "auto|true|false",
                    ));
                    None
                }
            },
        }
    }
}
