//! The worker, engine and PDF sections: the job transport, generation limits, the renderer.
use super::{Checker, JobQueueChoice, PdfChoice, RawConfig, WorkerConfig, problem};
use reporter_ports::ports::RenderLimits;
use std::path::PathBuf;
use std::time::Duration;

impl RawConfig {
    /// The worker section. Every value is read in the order the problems are reported; each
    /// bound and default is its variable's declaration (`allowed.rs`, the clap attribute).
    pub(super) fn worker(&self, rabbitmq: Option<&str>, c: &mut Checker) -> WorkerConfig {
        let queue = self.job_queue(rabbitmq, c);
        let pdf = self.pdf_choice(c);
        let job_timeout = secs(c, "ENGINE_TIMEOUT_SEC", &self.engine_timeout_sec);
        let requeue_after = self.requeue_after(c, job_timeout);
        let max_attempts = c.int::<u32>("WORKER_MAX_ATTEMPTS", &self.worker_max_attempts);
        let concurrency = c.int::<usize>("WORKER_CONCURRENCY", &self.worker_concurrency);
        let section_concurrency =
            c.int::<usize>("ENGINE_MAX_CONCURRENCY", &self.engine_max_concurrency);
        let query_timeout = secs(
            c,
            "ENGINE_QUERY_TIMEOUT_SEC",
            &self.engine_query_timeout_sec,
        );
        let max_rows = c.int::<usize>("ENGINE_MAX_ROWS", &self.engine_max_rows);
        let max_section_bytes =
            c.int::<usize>("ENGINE_MAX_RESULT_BYTES", &self.engine_max_result_bytes);
        let render = self.render_limits(c);
        let drain_timeout = secs(
            c,
            "WORKER_DRAIN_TIMEOUT_SEC",
            &self.worker_drain_timeout_sec,
        );
        WorkerConfig {
            queue,
            max_attempts,
            settings: crate::worker::WorkerSettings {
                max_attempts,
                concurrency,
                // Resolved with the sandbox's pool and the tenancy (`max_jobs_per_tenant`).
                max_jobs_per_tenant: concurrency,
                section_concurrency,
                job_timeout,
                query_timeout,
                max_rows,
                max_section_bytes,
                render,
                drain_timeout,
                requeue_after,
                // Resolved with the object storage (`storage_sweep`).
                storage_sweep: None,
            },
            pdf,
            pdf_pool: c.int::<usize>("PDF_POOL_WORKERS", &self.pdf_pool_workers),
            pdf_timeout: secs(c, "PDF_TIMEOUT_SECONDS", &self.pdf_timeout_seconds),
            pdf_memory_bytes: c.int::<u64>("PDF_MEMORY_MIB", &self.pdf_memory_mib) * 1024 * 1024,
        }
    }

    /// `WORKER_MAX_JOBS_PER_TENANT`: `auto` leaves one render slot (the smaller of
    /// `concurrency` and `pool_size`) to the other tenants in multi-tenant mode, at least 1,
    /// and is `concurrency` in single-tenant mode; else 1 to `concurrency`.
    pub(super) fn max_jobs_per_tenant(
        &self,
        c: &mut Checker,
        multi_tenant: bool,
        concurrency: usize,
        pool_size: usize,
    ) -> usize {
        let raw = self.worker_max_jobs_per_tenant.trim();
        if raw.eq_ignore_ascii_case("auto") {
            return if multi_tenant {
                concurrency.min(pool_size).saturating_sub(1).max(1)
            } else {
                concurrency
            };
        }
        c.number(
            "WORKER_MAX_JOBS_PER_TENANT",
            raw,
            1usize,
            concurrency.max(1),
            concurrency,
        )
    }

    fn prefetch_is_auto(&self) -> bool {
        self.rabbitmq_prefetch.trim().eq_ignore_ascii_case("auto")
    }

    /// `RABBITMQ_PREFETCH=auto`: twice the worker's concurrency when one tenant's jobs are
    /// bounded below it, so that the worker can hold back a busy tenant's jobs and still
    /// receive the next tenant's (see `Worker::run`); else 4 (the reference's value).
    pub(super) fn auto_prefetch(&self, worker: &mut WorkerConfig) {
        let settings = &worker.settings;
        let auto = if settings.max_jobs_per_tenant < settings.concurrency {
            u16::try_from(settings.concurrency.saturating_mul(2)).map_or(1000, |p| p.min(1000))
        } else {
            4
        };
        if let JobQueueChoice::Rabbit { prefetch, .. } = &mut worker.queue
            && self.prefetch_is_auto()
        {
            *prefetch = auto;
        }
    }

    /// RabbitMQ when `rabbitmq` is set (its exchange, queue, key, dead letters, prefetch),
    /// else the in-process queue.
    fn job_queue(&self, rabbitmq: Option<&str>, c: &mut Checker) -> JobQueueChoice {
        match rabbitmq {
            None => JobQueueChoice::Memory,
            Some(uri) => JobQueueChoice::Rabbit {
                uri: reporter_ports::Secret::from(uri),
                exchange: self.rabbitmq_exchange.trim().to_owned(),
                queue: self.rabbitmq_queue.trim().to_owned(),
                key: self.rabbitmq_key.trim().to_owned(),
                dlq: self.rabbitmq_dlq.trim().to_owned(),
                dlx: self.rabbitmq_dlx.trim().to_owned(),
                // `auto` is resolved with the per-tenant bound (`auto_prefetch`).
                prefetch: if self.prefetch_is_auto() {
                    4
                } else {
                    c.int_or::<u16>("RABBITMQ_PREFETCH", &self.rabbitmq_prefetch, 4)
                },
            },
        }
    }

    /// `PDF_RENDERER`: `native` or `chromium` (at `PDF_CHROMIUM_PATH`).
    fn pdf_choice(&self, c: &mut Checker) -> PdfChoice {
        match self.pdf_renderer.trim().to_ascii_lowercase().as_str() {
            "native" => PdfChoice::Native,
            "chromium" => PdfChoice::Chromium(PathBuf::from(self.pdf_chromium_path.trim())),
            other => {
                c.problems.push(problem(
                    "PDF_RENDERER",
                    format!("'{other}' is not a PDF renderer"),
                    "native|chromium",
                ));
                PdfChoice::Native
            }
        }
    }

    /// The engine's render bounds: fuel and output size (recursion fixed at 64).
    fn render_limits(&self, c: &mut Checker) -> RenderLimits {
        RenderLimits {
            fuel: c.int::<u64>("ENGINE_RENDER_FUEL", &self.engine_render_fuel),
            max_recursion: 64,
            max_output_bytes: c
                .int::<usize>("ENGINE_MAX_OUTPUT_BYTES", &self.engine_max_output_bytes),
            ..RenderLimits::default()
        }
    }

    /// `REPORT_REQUEUE_AFTER_SEC`: `None` when 0; else at least 60 s and above `job_timeout`
    /// (the validated ENGINE_TIMEOUT_SEC), so a report being generated is never taken for a
    /// stuck one.
    pub(super) fn requeue_after(
        &self,
        c: &mut Checker,
        job_timeout: std::time::Duration,
    ) -> Option<std::time::Duration> {
        let raw = self.report_requeue_after_sec.trim();
        let after = c.int::<u64>("REPORT_REQUEUE_AFTER_SEC", raw);
        if after == 0 {
            return None;
        }
        let job = job_timeout.as_secs();
        if after < 60 || after <= job {
            c.problems.push(problem(
                "REPORT_REQUEUE_AFTER_SEC",
                format!("{after} is not above ENGINE_TIMEOUT_SEC ({job}) and 60"),
                "0 (off), or seconds above both ENGINE_TIMEOUT_SEC and 60",
            ));
        }
        Some(std::time::Duration::from_secs(after))
    }
}

/// A number of seconds within the bounds `var` declares.
fn secs(c: &mut Checker, var: &str, raw: &str) -> Duration {
    Duration::from_secs(c.int::<u64>(var, raw))
}
