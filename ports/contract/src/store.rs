//! Contract of the record store: [`TemplateRepository`], [`DeadlineRepository`],
//! [`ReportRepository`] and [`UnitOfWorkPort`], implemented by one adapter.
//!
//! Run everything with [`store_contract!`](crate::store_contract) (one test per check), or single checks (each `pub async fn` taking a
//! fresh, empty store) from your own tests. Concurrency checks spawn tasks: run them on a
//! multi-thread Tokio runtime to exercise real parallelism.
use crate::fixtures::{Record, bump, day, deadline, page, report, template, tenant_a, tenant_b};
use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use reporter_ports::deadline::{Deadline, DeadlineStatus, DeadlineType, Frequency};
use reporter_ports::page::{Page, SortOrder};
use reporter_ports::ports::{
    Change, DeadlineQuery, DeadlineRepository, RenderCause, RenderFailure, ReportQuery,
    ReportRepository, TemplateQuery, TemplateRepository, UnitOfWork, UnitOfWorkPort,
};
use reporter_ports::report::{Report, ReportErrorCode, ReportStatus};
use reporter_ports::template::{OutputFormat, Template};
use reporter_ports::{DeadlineId, ReportId, StoreError, TemplateId, TenantId};

/// What the store suite needs: the three repositories and the unit of work on one cloneable
/// value sharing its state.
pub trait StoreUnderTest:
    TemplateRepository + DeadlineRepository + ReportRepository + UnitOfWorkPort + Clone + 'static
{
}
impl<T> StoreUnderTest for T where
    T: TemplateRepository
        + DeadlineRepository
        + ReportRepository
        + UnitOfWorkPort
        + Clone
        + 'static
{
}

/// The store contract: every check of the template, deadline and report repositories and the unit of work.
///
/// `store_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check` on a fresh adapter.
#[macro_export]
macro_rules! store_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            store,
            |$check| $run,
            [
                insert_and_get_every_kind,
                missing_ids_are_none,
                tenant_isolation_on_reads,
                tenant_isolation_on_writes,
                stale_update_is_a_version_conflict,
                double_insert_is_a_version_conflict,
                update_of_a_missing_record_is_not_found,
                unit_of_work_is_atomic,
                changes_apply_in_order_within_a_unit_of_work,
                empty_unit_of_work_succeeds,
                soft_deleted_templates_are_hidden,
                soft_deleted_deadlines_are_hidden,
                template_list_filters,
                deadline_list_filters,
                report_list_filters_and_count,
                stale_processing_reports_span_tenants,
                template_pagination_order_and_total,
                deadline_and_report_pagination_order,
                deadline_duplicate_is_refused,
                deadline_duplicate_within_one_unit_of_work,
                soft_deleted_or_foreign_twin_does_not_block,
                list_by_template_and_undelivered_active,
                concurrent_updates_have_one_winner,
                concurrent_inserts_have_one_winner,
                concurrent_duplicate_deadlines_have_one_winner,
            ]
        );
    };
}

// ---------------------------------------------------------------------------------------------
// helpers

async fn commit<S: UnitOfWorkPort>(
    s: &S,
    tenant: &TenantId,
    changes: Vec<Change>,
) -> Result<(), StoreError> {
    let mut uow = UnitOfWork::new();
    uow.changes = changes;
    s.commit(tenant, uow).await
}

async fn commit_ok<S: UnitOfWorkPort>(s: &S, tenant: &TenantId, changes: Vec<Change>, what: &str) {
    if let Err(e) = commit(s, tenant, changes).await {
        panic!("{what}: commit failed: {e:?}");
    }
}

async fn get_t<S: StoreUnderTest>(
    s: &S,
    tenant: &TenantId,
    id: TemplateId,
    deleted: bool,
) -> Option<Template> {
    let got = TemplateRepository::get(s, tenant, id, deleted)
        .await
        .expect("TemplateRepository::get failed");
    let shared = TemplateRepository::get_shared(s, tenant, id, deleted)
        .await
        .expect("TemplateRepository::get_shared failed");
    assert_eq!(
        shared.as_deref(),
        got.as_ref(),
        "get_shared answers what get answers"
    );
    got
}

async fn get_d<S: StoreUnderTest>(
    s: &S,
    tenant: &TenantId,
    id: DeadlineId,
    deleted: bool,
) -> Option<Deadline> {
    DeadlineRepository::get(s, tenant, id, deleted)
        .await
        .expect("DeadlineRepository::get failed")
}

async fn get_r<S: StoreUnderTest>(s: &S, tenant: &TenantId, id: ReportId) -> Option<Report> {
    ReportRepository::get(s, tenant, id)
        .await
        .expect("ReportRepository::get failed")
}

async fn list_t<S: StoreUnderTest>(
    s: &S,
    tenant: &TenantId,
    q: &TemplateQuery,
    p: u32,
    limit: u32,
    sort: SortOrder,
) -> Page<Template> {
    TemplateRepository::list(s, tenant, q, page(p, limit, sort))
        .await
        .expect("TemplateRepository::list failed")
}

async fn list_d<S: StoreUnderTest>(
    s: &S,
    tenant: &TenantId,
    q: &DeadlineQuery,
    now: DateTime<Utc>,
) -> Vec<DeadlineId> {
    let p = DeadlineRepository::list(s, tenant, q, page(1, 100, SortOrder::Asc), now)
        .await
        .expect("DeadlineRepository::list failed");
    assert_eq!(
        p.total,
        p.items.len() as u64,
        "deadline list: total must count every match"
    );
    p.items.into_iter().map(|d| d.id).collect()
}

async fn list_r<S: StoreUnderTest>(s: &S, tenant: &TenantId, q: &ReportQuery) -> Vec<ReportId> {
    let p = ReportRepository::list(s, tenant, q, page(1, 100, SortOrder::Asc))
        .await
        .expect("ReportRepository::list failed");
    let count = ReportRepository::count(s, tenant, q)
        .await
        .expect("ReportRepository::count failed");
    assert_eq!(p.total, count, "report list total must equal count");
    p.items.into_iter().map(|r| r.id).collect()
}

async fn count_t<S: StoreUnderTest>(s: &S, tenant: &TenantId) -> u64 {
    TemplateRepository::count(s, tenant)
        .await
        .expect("TemplateRepository::count failed")
}

fn soft_deleted<R: Record>(r: &R, now: DateTime<Utc>, set: impl FnOnce(&mut R)) -> (Change, R) {
    let mut next = r.next(now);
    set(&mut next);
    (next.update(r.version()), next)
}

/// Every deadline of the suite is due after [`day`]`(30)`; lists are read at [`day`]`(10)`.
fn now() -> DateTime<Utc> {
    day(10)
}

// ---------------------------------------------------------------------------------------------
// checks

/// A committed template, deadline and report read back equal; counts see them.
pub async fn insert_and_get_every_kind<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, day(0));
    let d = deadline(&a, Some(t.id), day(30), day(0));
    let r = report(&a, t.id, day(0));
    // An errored report keeps why its render failed.
    let mut failed = report(&a, t.id, day(0));
    failed.status = ReportStatus::Error;
    failed.error_code = Some(ReportErrorCode::ReportGenerationFailed);
    failed.render_failure = Some(RenderFailure {
        cause: RenderCause::DivisionByZero,
        line: Some(3),
    });
    commit_ok(
        &s,
        &a,
        vec![t.insert(), d.insert(), r.insert(), failed.insert()],
        "insert",
    )
    .await;
    assert_eq!(
        get_t(&s, &a, t.id, false).await,
        Some(t.clone()),
        "template read back"
    );
    assert_eq!(
        get_d(&s, &a, d.id, false).await,
        Some(d.clone()),
        "deadline read back"
    );
    assert_eq!(
        get_r(&s, &a, r.id).await,
        Some(r.clone()),
        "report read back"
    );
    assert_eq!(
        get_r(&s, &a, failed.id).await,
        Some(failed.clone()),
        "errored report read back with its render failure"
    );
    assert_eq!(count_t(&s, &a).await, 1, "template count after one insert");
    let rc = ReportRepository::count(&s, &a, &ReportQuery::default())
        .await
        .expect("report count");
    assert_eq!(rc, 2, "report count after two inserts");
}

/// Unknown ids answer `Ok(None)`; counts of an empty tenant are 0.
pub async fn missing_ids_are_none<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    assert_eq!(
        get_t(&s, &a, TemplateId::new(), true).await,
        None,
        "template"
    );
    assert_eq!(
        get_d(&s, &a, DeadlineId::new(), true).await,
        None,
        "deadline"
    );
    assert_eq!(get_r(&s, &a, ReportId::new()).await, None, "report");
    assert_eq!(count_t(&s, &a).await, 0, "empty template count");
    let p = list_t(&s, &a, &TemplateQuery::default(), 1, 10, SortOrder::Desc).await;
    assert!(p.items.is_empty() && p.total == 0, "empty template list");
}

/// Another tenant's ids behave like missing ones in every read.
pub async fn tenant_isolation_on_reads<S: StoreUnderTest>(s: S) {
    let (a, b) = (tenant_a(), tenant_b());
    let t = template(&a, day(0));
    let d = deadline(&a, Some(t.id), day(30), day(0));
    let r = report(&a, t.id, day(0));
    commit_ok(
        &s,
        &a,
        vec![t.insert(), d.insert(), r.insert()],
        "insert in A",
    )
    .await;
    assert_eq!(
        get_t(&s, &b, t.id, true).await,
        None,
        "A's template read from B"
    );
    assert_eq!(
        get_d(&s, &b, d.id, true).await,
        None,
        "A's deadline read from B"
    );
    assert_eq!(get_r(&s, &b, r.id).await, None, "A's report read from B");
    assert_eq!(count_t(&s, &b).await, 0, "B's template count");
    let p = list_t(&s, &b, &TemplateQuery::default(), 1, 10, SortOrder::Asc).await;
    assert_eq!(p.total, 0, "B's template list");
    assert!(
        list_d(&s, &b, &DeadlineQuery::default(), now())
            .await
            .is_empty()
    );
    assert!(list_r(&s, &b, &ReportQuery::default()).await.is_empty());
    let by_t = DeadlineRepository::list_by_template(&s, &b, t.id)
        .await
        .expect("list_by_template");
    assert!(by_t.is_empty(), "B sees no deadline of A's template");
    let und = DeadlineRepository::list_undelivered_active(&s, &b, now(), 100)
        .await
        .expect("list_undelivered_active");
    assert!(und.is_empty(), "B sees no undelivered deadline of A");
}

/// A commit cannot write into another tenant: a record of tenant A committed as tenant B is
/// refused, and an update from B naming A's id is `NotFound`. Nothing changes.
pub async fn tenant_isolation_on_writes<S: StoreUnderTest>(s: S) {
    let (a, b) = (tenant_a(), tenant_b());
    let foreign = template(&a, day(0));
    let res = commit(&s, &b, vec![foreign.insert()]).await;
    assert!(
        res.is_err(),
        "committing A's record as B must fail, got {res:?}"
    );
    assert_eq!(get_t(&s, &a, foreign.id, true).await, None, "nothing in A");
    assert_eq!(get_t(&s, &b, foreign.id, true).await, None, "nothing in B");

    let t = template(&a, day(0));
    commit_ok(&s, &a, vec![t.insert()], "insert in A").await;
    let mut hijack = t.next(day(1));
    hijack.tenant = b.clone();
    hijack.description = "hijacked".into();
    let res = commit(&s, &b, vec![hijack.update(1)]).await;
    assert_eq!(res, Err(StoreError::NotFound), "B updating A's id");
    assert_eq!(
        get_t(&s, &a, t.id, true).await,
        Some(t.clone()),
        "A's record unchanged"
    );
    assert_eq!(
        get_t(&s, &b, t.id, true).await,
        None,
        "nothing created in B"
    );
}

/// An update from a stale version is a `VersionConflict` and changes nothing; the winning
/// update is visible with version + 1. Checked for every record kind.
pub async fn stale_update_is_a_version_conflict<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, day(0));
    let d = deadline(&a, None, day(30), day(0));
    let r = report(&a, t.id, day(0));
    commit_ok(&s, &a, vec![t.insert(), d.insert(), r.insert()], "insert").await;

    let mut t2 = t.next(day(1));
    t2.description = "second".into();
    commit_ok(&s, &a, vec![t2.update(1)], "first template update").await;
    let mut stale = t.next(day(2));
    stale.description = "stale".into();
    let res = commit(&s, &a, vec![stale.update(1)]).await;
    assert_eq!(
        res,
        Err(StoreError::VersionConflict),
        "stale template update"
    );
    let got = get_t(&s, &a, t.id, false).await.expect("template present");
    assert_eq!((got.version, got.description.as_str()), (2, "second"));

    let (c, d2) = bump(&d, day(1));
    commit_ok(&s, &a, vec![c], "first deadline update").await;
    let (c, _) = bump(&d, day(2));
    assert_eq!(
        commit(&s, &a, vec![c]).await,
        Err(StoreError::VersionConflict),
        "stale deadline update"
    );
    assert_eq!(get_d(&s, &a, d.id, false).await, Some(d2), "deadline at v2");

    let (c, r2) = bump(&r, day(1));
    commit_ok(&s, &a, vec![c], "first report update").await;
    let (c, _) = bump(&r, day(2));
    assert_eq!(
        commit(&s, &a, vec![c]).await,
        Err(StoreError::VersionConflict),
        "stale report update"
    );
    assert_eq!(get_r(&s, &a, r.id).await, Some(r2), "report at v2");
}

/// Inserting an id that already exists (live or soft-deleted) is a `VersionConflict`.
pub async fn double_insert_is_a_version_conflict<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, day(0));
    let d = deadline(&a, None, day(30), day(0));
    let r = report(&a, t.id, day(0));
    commit_ok(&s, &a, vec![t.insert(), d.insert(), r.insert()], "insert").await;
    for (what, c) in [
        ("template", t.insert()),
        ("deadline", d.insert()),
        ("report", r.insert()),
    ] {
        assert_eq!(
            commit(&s, &a, vec![c]).await,
            Err(StoreError::VersionConflict),
            "second insert of the same {what} id"
        );
    }
    let (c, _) = soft_deleted(&t, day(1), |x| x.deleted_at = Some(day(1)));
    commit_ok(&s, &a, vec![c], "soft delete").await;
    assert_eq!(
        commit(&s, &a, vec![t.insert()]).await,
        Err(StoreError::VersionConflict),
        "insert over a soft-deleted id"
    );
}

/// An update naming an id that does not exist is `NotFound`.
pub async fn update_of_a_missing_record_is_not_found<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, day(0));
    let d = deadline(&a, None, day(30), day(0));
    let r = report(&a, t.id, day(0));
    for (what, c) in [
        ("template", t.next(day(1)).update(1)),
        ("deadline", d.next(day(1)).update(1)),
        ("report", r.next(day(1)).update(1)),
    ] {
        assert_eq!(
            commit(&s, &a, vec![c]).await,
            Err(StoreError::NotFound),
            "update of a missing {what}"
        );
    }
    assert_eq!(get_t(&s, &a, t.id, true).await, None, "no upsert");
}

/// A unit of work whose later change fails leaves none of its earlier changes visible.
pub async fn unit_of_work_is_atomic<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let existing = template(&a, day(0));
    commit_ok(&s, &a, vec![existing.insert()], "seed").await;
    let (c, _) = bump(&existing, day(1));
    commit_ok(&s, &a, vec![c], "move seed to v2").await;

    // 2nd change conflicts (stale version).
    let t1 = template(&a, day(1));
    let d1 = deadline(&a, None, day(30), day(1));
    let (stale, _) = bump(&existing, day(2));
    let res = commit(&s, &a, vec![t1.insert(), d1.insert(), stale]).await;
    assert_eq!(
        res,
        Err(StoreError::VersionConflict),
        "conflicting unit of work"
    );
    assert_eq!(
        get_t(&s, &a, t1.id, true).await,
        None,
        "1st change must not be visible"
    );
    assert_eq!(
        get_d(&s, &a, d1.id, true).await,
        None,
        "2nd change must not be visible"
    );
    assert_eq!(count_t(&s, &a).await, 1, "count unchanged");

    // 2nd change names a missing record.
    let t2 = template(&a, day(1));
    let missing = template(&a, day(1)).next(day(2)).update(1);
    let res = commit(&s, &a, vec![t2.insert(), missing]).await;
    assert_eq!(
        res,
        Err(StoreError::NotFound),
        "unit of work with a missing update"
    );
    assert_eq!(
        get_t(&s, &a, t2.id, true).await,
        None,
        "1st change must not be visible"
    );

    // An update applied before a failing insert is rolled back too.
    let (upd, _) = bump(&existing.next(day(1)), day(3));
    let res = commit(&s, &a, vec![upd, existing.insert()]).await;
    assert_eq!(
        res,
        Err(StoreError::VersionConflict),
        "double insert in unit of work"
    );
    let got = get_t(&s, &a, existing.id, false)
        .await
        .expect("seed present");
    assert_eq!(got.version, 2, "rolled-back update must not be visible");
}

/// Changes apply in order: an insert then an update of the same record in one unit of work
/// leaves the updated record.
pub async fn changes_apply_in_order_within_a_unit_of_work<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, day(0));
    let (upd, t2) = bump(&t, day(1));
    commit_ok(&s, &a, vec![t.insert(), upd], "insert + update").await;
    assert_eq!(
        get_t(&s, &a, t.id, false).await,
        Some(t2),
        "record after both changes"
    );
}

/// An empty unit of work commits and changes nothing.
pub async fn empty_unit_of_work_succeeds<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    commit_ok(&s, &a, Vec::new(), "empty unit of work").await;
    assert_eq!(count_t(&s, &a).await, 0);
}

/// A soft-deleted template is read only with `include_deleted`, and is out of lists and counts.
pub async fn soft_deleted_templates_are_hidden<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let keep = template(&a, day(0));
    let gone = template(&a, day(1));
    commit_ok(&s, &a, vec![keep.insert(), gone.insert()], "insert").await;
    let (c, gone2) = soft_deleted(&gone, day(2), |x| x.deleted_at = Some(day(2)));
    commit_ok(&s, &a, vec![c], "soft delete").await;
    assert_eq!(
        get_t(&s, &a, gone.id, false).await,
        None,
        "hidden without include_deleted"
    );
    assert_eq!(
        get_t(&s, &a, gone.id, true).await,
        Some(gone2),
        "shown with include_deleted"
    );
    assert_eq!(count_t(&s, &a).await, 1, "count excludes soft-deleted");
    let p = list_t(&s, &a, &TemplateQuery::default(), 1, 10, SortOrder::Asc).await;
    let ids: Vec<_> = p.items.iter().map(|t| t.id).collect();
    assert_eq!(
        (ids, p.total),
        (vec![keep.id], 1),
        "list excludes soft-deleted"
    );
}

/// A soft-deleted deadline is read only with `include_deleted`, and is out of every list.
pub async fn soft_deleted_deadlines_are_hidden<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, day(0));
    let keep = deadline(&a, Some(t.id), day(30), day(0));
    let gone = deadline(&a, Some(t.id), day(31), day(1));
    commit_ok(
        &s,
        &a,
        vec![t.insert(), keep.insert(), gone.insert()],
        "insert",
    )
    .await;
    let (c, gone2) = soft_deleted(&gone, day(2), |x| x.deleted_at = Some(day(2)));
    commit_ok(&s, &a, vec![c], "soft delete").await;
    assert_eq!(
        get_d(&s, &a, gone.id, false).await,
        None,
        "hidden without include_deleted"
    );
    assert_eq!(
        get_d(&s, &a, gone.id, true).await,
        Some(gone2),
        "shown with include_deleted"
    );
    assert_eq!(
        list_d(&s, &a, &DeadlineQuery::default(), now()).await,
        vec![keep.id],
        "list excludes soft-deleted"
    );
    let by_t: Vec<_> = DeadlineRepository::list_by_template(&s, &a, t.id)
        .await
        .expect("list_by_template")
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(
        by_t,
        vec![keep.id],
        "list_by_template excludes soft-deleted"
    );
    let und: Vec<_> = DeadlineRepository::list_undelivered_active(&s, &a, now(), 100)
        .await
        .expect("list_undelivered_active")
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(
        und,
        vec![keep.id],
        "list_undelivered_active excludes soft-deleted"
    );
}

/// Template list filters: format, case-insensitive plain-text description, created range
/// (`from` inclusive, `to` exclusive).
pub async fn template_list_filters<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let mut t1 = template(&a, day(1));
    t1.description = "Quarterly Balance".into();
    let mut t2 = template(&a, day(2));
    t2.description = "monthly balance sheet".into();
    t2.output_format = OutputFormat::Csv;
    let mut t3 = template(&a, day(3));
    t3.description = "a.c (regex?)".into();
    commit_ok(
        &s,
        &a,
        vec![t1.insert(), t2.insert(), t3.insert()],
        "insert",
    )
    .await;

    let ids = |p: Page<Template>| p.items.into_iter().map(|t| t.id).collect::<Vec<_>>();
    let q = |f: fn(&mut TemplateQuery)| {
        let mut q = TemplateQuery::default();
        f(&mut q);
        q
    };
    let cases: Vec<(&str, TemplateQuery, Vec<TemplateId>)> = vec![
        (
            "output_format",
            q(|q| q.output_format = Some(OutputFormat::Csv)),
            vec![t2.id],
        ),
        (
            "description, case-insensitive",
            q(|q| q.description_contains = Some("BALANCE".into())),
            vec![t1.id, t2.id],
        ),
        (
            "description is plain text, not a pattern",
            q(|q| q.description_contains = Some("a.c".into())),
            vec![t3.id],
        ),
        (
            "description regex metacharacters",
            q(|q| q.description_contains = Some("(regex?)".into())),
            vec![t3.id],
        ),
        (
            "created_from inclusive",
            q(|q| q.created_from = Some(day(2))),
            vec![t2.id, t3.id],
        ),
        (
            "created_to exclusive",
            q(|q| q.created_to = Some(day(2))),
            vec![t1.id],
        ),
        (
            "all filters",
            q(|q| {
                q.output_format = Some(OutputFormat::Html);
                q.description_contains = Some("balance".into());
                q.created_from = Some(day(1));
                q.created_to = Some(day(3));
            }),
            vec![t1.id],
        ),
    ];
    for (what, query, want) in cases {
        let p = list_t(&s, &a, &query, 1, 10, SortOrder::Asc).await;
        assert_eq!(p.total, want.len() as u64, "template filter {what}: total");
        assert_eq!(ids(p), want, "template filter {what}");
    }
}

/// Deadline list filters on the view at `now`: status, active, type, effective due range.
pub async fn deadline_list_filters<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let now = now();
    let pending = deadline(&a, None, day(30), day(0));
    let overdue = deadline(&a, None, day(5), day(1));
    let mut delivered = deadline(&a, None, day(20), day(2));
    delivered.delivered_at = Some(day(9));
    let mut inactive = deadline(&a, None, day(40), day(3));
    inactive.active = false;
    inactive.kind = DeadlineType::Regulatory;
    commit_ok(
        &s,
        &a,
        vec![
            pending.insert(),
            overdue.insert(),
            delivered.insert(),
            inactive.insert(),
        ],
        "insert",
    )
    .await;
    let q = |f: fn(&mut DeadlineQuery)| {
        let mut q = DeadlineQuery::default();
        f(&mut q);
        q
    };
    let cases: Vec<(&str, DeadlineQuery, Vec<DeadlineId>)> = vec![
        (
            "no filter",
            DeadlineQuery::default(),
            vec![pending.id, overdue.id, delivered.id, inactive.id],
        ),
        (
            "status pending",
            q(|q| q.status = Some(DeadlineStatus::Pending)),
            vec![pending.id, inactive.id],
        ),
        (
            "status overdue",
            q(|q| q.status = Some(DeadlineStatus::Overdue)),
            vec![overdue.id],
        ),
        (
            "status delivered",
            q(|q| q.status = Some(DeadlineStatus::Delivered)),
            vec![delivered.id],
        ),
        (
            "active false",
            q(|q| q.active = Some(false)),
            vec![inactive.id],
        ),
        (
            "type regulatory",
            q(|q| q.kind = Some(DeadlineType::Regulatory)),
            vec![inactive.id],
        ),
        (
            "due range inclusive",
            q(|q| {
                q.due_from = Some(day(20));
                q.due_to = Some(day(30));
            }),
            vec![pending.id, delivered.id],
        ),
    ];
    for (what, query, want) in cases {
        assert_eq!(
            list_d(&s, &a, &query, now).await,
            want,
            "deadline filter {what}"
        );
    }
    // The status filter is evaluated at the `now` given: the pending one is overdue later.
    let later = list_d(
        &s,
        &a,
        &q(|q| q.status = Some(DeadlineStatus::Overdue)),
        day(35),
    )
    .await;
    assert_eq!(
        later,
        vec![pending.id, overdue.id],
        "overdue at a later now"
    );
}

/// Report list filters and `count` with the same query.
/// `list_stale_processing`: every tenant's `Processing` reports changed before the bound,
/// least recently changed first, limited; never a terminal report, never one changed at or
/// after the bound.
pub async fn stale_processing_reports_span_tenants<S: StoreUnderTest>(s: S) {
    let (a, b) = (tenant_a(), tenant_b());
    let t = TemplateId::new();
    let old_a = report(&a, t, day(1));
    let old_b = report(&b, t, day(2));
    let mut done = report(&a, t, day(1));
    done.status = ReportStatus::Finished;
    let mut errored = report(&b, t, day(1));
    errored.status = ReportStatus::Error;
    let fresh = report(&a, t, day(5));
    let at_bound = report(&b, t, day(4));
    commit_ok(
        &s,
        &a,
        vec![old_a.insert(), done.insert(), fresh.insert()],
        "insert a",
    )
    .await;
    commit_ok(
        &s,
        &b,
        vec![old_b.insert(), errored.insert(), at_bound.insert()],
        "insert b",
    )
    .await;
    let ids = |v: Vec<Report>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let got = s
        .list_stale_processing(day(4), 10)
        .await
        .expect("list_stale_processing");
    assert_eq!(ids(got), vec![old_a.id, old_b.id], "stale, oldest first");
    let got = s
        .list_stale_processing(day(4), 1)
        .await
        .expect("list_stale_processing");
    assert_eq!(ids(got), vec![old_a.id], "limited");
    let got = s
        .list_stale_processing(day(1), 10)
        .await
        .expect("list_stale_processing");
    assert!(
        got.is_empty(),
        "nothing changed before the bound: {:?}",
        ids(got)
    );
}

pub async fn report_list_filters_and_count<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let (ta, tb) = (TemplateId::new(), TemplateId::new());
    let r1 = report(&a, ta, day(1));
    let mut r2 = report(&a, ta, day(2));
    r2.status = ReportStatus::Finished;
    let mut r3 = report(&a, tb, day(3));
    r3.status = ReportStatus::Error;
    r3.output_format = OutputFormat::Pdf;
    r3.template_description = "Quarterly (Q1) ledger.*".into();
    commit_ok(
        &s,
        &a,
        vec![r1.insert(), r2.insert(), r3.insert()],
        "insert",
    )
    .await;
    let q = |f: fn(&mut ReportQuery, TemplateId), t: TemplateId| {
        let mut q = ReportQuery::default();
        f(&mut q, t);
        q
    };
    let cases: Vec<(&str, ReportQuery, Vec<ReportId>)> = vec![
        (
            "no filter",
            ReportQuery::default(),
            vec![r1.id, r2.id, r3.id],
        ),
        (
            "status",
            q(|q, _| q.status = Some(ReportStatus::Finished), ta),
            vec![r2.id],
        ),
        (
            "template",
            q(|q, t| q.template_id = Some(t), ta),
            vec![r1.id, r2.id],
        ),
        (
            "created_from inclusive",
            q(|q, _| q.created_from = Some(day(2)), ta),
            vec![r2.id, r3.id],
        ),
        (
            "created_to exclusive",
            q(|q, _| q.created_to = Some(day(3)), ta),
            vec![r1.id, r2.id],
        ),
        (
            "output format",
            q(|q, _| q.output_format = Some(OutputFormat::Pdf), ta),
            vec![r3.id],
        ),
        (
            "description substring, any case",
            q(
                |q, _| q.description_contains = Some("(q1) LEDGER".into()),
                ta,
            ),
            vec![r3.id],
        ),
        (
            "description is plain text, not a pattern",
            q(|q, _| q.description_contains = Some(".*".into()), ta),
            vec![r3.id],
        ),
        (
            "template and status",
            q(
                |q, t| {
                    q.template_id = Some(t);
                    q.status = Some(ReportStatus::Error);
                },
                ta,
            ),
            vec![],
        ),
    ];
    for (what, query, want) in cases {
        assert_eq!(list_r(&s, &a, &query).await, want, "report filter {what}");
    }
}

/// Pages partition the list in `created_at`-then-id order, ascending and descending, and
/// `total` is the real count on every page.
pub async fn template_pagination_order_and_total<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let mut all = Vec::new();
    for i in 0..23 {
        // Pairs share a creation instant, so the id breaks ties.
        all.push(template(&a, day(i / 2)));
    }
    // Commit in a scrambled order, in several units of work.
    for chunk in all.iter().rev().collect::<Vec<_>>().chunks(5) {
        commit_ok(&s, &a, chunk.iter().map(|t| t.insert()).collect(), "insert").await;
    }
    let mut want: Vec<(DateTime<Utc>, TemplateId)> =
        all.iter().map(|t| (t.created_at, t.id)).collect();
    want.sort();
    let want: Vec<TemplateId> = want.into_iter().map(|(_, id)| id).collect();

    for sort in [SortOrder::Asc, SortOrder::Desc] {
        let mut got = Vec::new();
        for p in 1..=4 {
            let page = list_t(&s, &a, &TemplateQuery::default(), p, 7, sort).await;
            assert_eq!(page.total, 23, "total on page {p} ({sort:?})");
            assert_eq!((page.page, page.limit), (p, 7), "page numbers echoed");
            let expected_len = if p < 4 { 7 } else { 2 };
            assert_eq!(page.items.len(), expected_len, "page {p} length ({sort:?})");
            got.extend(page.items.into_iter().map(|t| t.id));
        }
        let mut expect = want.clone();
        if sort == SortOrder::Desc {
            expect.reverse();
        }
        assert_eq!(got, expect, "pagination order {sort:?}");
        let past = list_t(&s, &a, &TemplateQuery::default(), 5, 7, sort).await;
        assert!(past.items.is_empty(), "page past the end is empty");
        assert_eq!(past.total, 23, "total past the end");
    }
}

/// Deadline and report lists use the same order rule.
pub async fn deadline_and_report_pagination_order<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = TemplateId::new();
    let ds: Vec<Deadline> = (0..9)
        .map(|i| deadline(&a, None, day(30 + i), day(i / 3)))
        .collect();
    let rs: Vec<Report> = (0..9).map(|i| report(&a, t, day(i / 3))).collect();
    let mut changes: Vec<Change> = ds.iter().rev().map(|d| d.insert()).collect();
    changes.extend(rs.iter().rev().map(|r| r.insert()));
    commit_ok(&s, &a, changes, "insert").await;

    let mut dwant: Vec<_> = ds.iter().map(|d| (d.created_at, d.id)).collect();
    dwant.sort();
    let mut rwant: Vec<_> = rs.iter().map(|r| (r.created_at, r.id)).collect();
    rwant.sort();
    for sort in [SortOrder::Asc, SortOrder::Desc] {
        let (mut dgot, mut rgot) = (Vec::new(), Vec::new());
        for p in 1..=3 {
            let dp = DeadlineRepository::list(
                &s,
                &a,
                &DeadlineQuery::default(),
                page(p, 4, sort),
                now(),
            )
            .await
            .expect("deadline list");
            assert_eq!(dp.total, 9, "deadline total on page {p}");
            dgot.extend(dp.items.into_iter().map(|d| d.id));
            let rp = ReportRepository::list(&s, &a, &ReportQuery::default(), page(p, 4, sort))
                .await
                .expect("report list");
            assert_eq!(rp.total, 9, "report total on page {p}");
            rgot.extend(rp.items.into_iter().map(|r| r.id));
        }
        let mut de: Vec<_> = dwant.iter().map(|(_, id)| *id).collect();
        let mut re: Vec<_> = rwant.iter().map(|(_, id)| *id).collect();
        if sort == SortOrder::Desc {
            de.reverse();
            re.reverse();
        }
        assert_eq!(dgot, de, "deadline order {sort:?}");
        assert_eq!(rgot, re, "report order {sort:?}");
    }
}

/// Two live deadlines of a tenant sharing (type, template, due date, frequency) are refused
/// with `Duplicate`, on insert and on update; differing in any part is fine; deadlines without
/// a template never clash.
pub async fn deadline_duplicate_is_refused<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = TemplateId::new();
    let d1 = deadline(&a, Some(t), day(30), day(0));
    commit_ok(&s, &a, vec![d1.insert()], "first").await;

    let twin = deadline(&a, Some(t), day(30), day(1));
    let res = commit(&s, &a, vec![twin.insert()]).await;
    assert!(
        matches!(res, Err(StoreError::Duplicate(_))),
        "twin insert must be Duplicate, got {res:?}"
    );
    assert_eq!(
        get_d(&s, &a, twin.id, true).await,
        None,
        "refused twin not stored"
    );

    let mut other_freq = deadline(&a, Some(t), day(30), day(1));
    other_freq.frequency = Frequency::Daily;
    let mut other_kind = deadline(&a, Some(t), day(30), day(1));
    other_kind.kind = DeadlineType::Regulatory;
    let other_due = deadline(&a, Some(t), day(31), day(1));
    let other_template = deadline(&a, Some(TemplateId::new()), day(30), day(1));
    let no_template_1 = deadline(&a, None, day(30), day(1));
    let no_template_2 = deadline(&a, None, day(30), day(1));
    commit_ok(
        &s,
        &a,
        vec![
            other_freq.insert(),
            other_kind.insert(),
            other_due.insert(),
            other_template.insert(),
            no_template_1.insert(),
            no_template_2.insert(),
        ],
        "non-clashing deadlines",
    )
    .await;

    // Updating a deadline into the key of another is refused too.
    let mut moved = other_due.next(day(2));
    moved.due_date = day(30);
    let res = commit(&s, &a, vec![moved.update(1)]).await;
    assert!(
        matches!(res, Err(StoreError::Duplicate(_))),
        "update into a twin must be Duplicate, got {res:?}"
    );
    assert_eq!(get_d(&s, &a, other_due.id, false).await, Some(other_due));

    // Updating a deadline without changing its key is not a clash with itself.
    let (c, _) = bump(&d1, day(2));
    commit_ok(&s, &a, vec![c], "self update").await;
}

/// Two twins in one unit of work clash with each other; nothing of the unit is stored.
pub async fn deadline_duplicate_within_one_unit_of_work<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, day(0));
    let d1 = deadline(&a, Some(t.id), day(30), day(0));
    let d2 = deadline(&a, Some(t.id), day(30), day(0));
    let res = commit(&s, &a, vec![t.insert(), d1.insert(), d2.insert()]).await;
    assert!(
        matches!(res, Err(StoreError::Duplicate(_))),
        "twins in one unit of work must be Duplicate, got {res:?}"
    );
    assert_eq!(
        get_t(&s, &a, t.id, true).await,
        None,
        "template of the failed unit"
    );
    assert_eq!(get_d(&s, &a, d1.id, true).await, None, "first twin");
    assert_eq!(get_d(&s, &a, d2.id, true).await, None, "second twin");

    // Deleting one and inserting its twin in the same unit of work is fine.
    commit_ok(&s, &a, vec![t.insert(), d1.insert()], "insert").await;
    let (del, _) = soft_deleted(&d1, day(1), |x| x.deleted_at = Some(day(1)));
    commit_ok(&s, &a, vec![del, d2.insert()], "replace twin in one unit").await;
    assert!(
        get_d(&s, &a, d2.id, false).await.is_some(),
        "replacement stored"
    );
}

/// A soft-deleted twin and another tenant's twin do not block a deadline.
pub async fn soft_deleted_or_foreign_twin_does_not_block<S: StoreUnderTest>(s: S) {
    let (a, b) = (tenant_a(), tenant_b());
    let t = TemplateId::new();
    let d1 = deadline(&a, Some(t), day(30), day(0));
    commit_ok(&s, &a, vec![d1.insert()], "first").await;
    let foreign = deadline(&b, Some(t), day(30), day(0));
    commit_ok(&s, &b, vec![foreign.insert()], "twin in another tenant").await;
    let (del, _) = soft_deleted(&d1, day(1), |x| x.deleted_at = Some(day(1)));
    commit_ok(&s, &a, vec![del], "soft delete").await;
    let twin = deadline(&a, Some(t), day(30), day(2));
    commit_ok(
        &s,
        &a,
        vec![twin.insert()],
        "twin of a soft-deleted deadline",
    )
    .await;
}

/// `list_by_template` answers the live deadlines of the template; `list_undelivered_active`
/// the live, active, not delivered ones by effective due date, at most `cap`.
pub async fn list_by_template_and_undelivered_active<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let (t1, t2) = (TemplateId::new(), TemplateId::new());
    let due_late = deadline(&a, Some(t1), day(50), day(0));
    let due_soon = deadline(&a, Some(t1), day(20), day(1));
    let other = deadline(&a, Some(t2), day(25), day(2));
    let overdue = deadline(&a, None, day(5), day(3));
    let mut delivered = deadline(&a, Some(t1), day(15), day(4));
    delivered.delivered_at = Some(day(9));
    let mut inactive = deadline(&a, Some(t1), day(16), day(5));
    inactive.active = false;
    // Delivered recurring occurrence already past: rolls to the next one, undelivered.
    let mut rolled = deadline(&a, None, day(8), day(6));
    rolled.frequency = Frequency::Weekly;
    rolled.delivered_at = Some(day(7));
    commit_ok(
        &s,
        &a,
        [
            &due_late, &due_soon, &other, &overdue, &delivered, &inactive, &rolled,
        ]
        .iter()
        .map(|d| d.insert())
        .collect(),
        "insert",
    )
    .await;

    let mut by_t: Vec<_> = DeadlineRepository::list_by_template(&s, &a, t1)
        .await
        .expect("list_by_template")
        .into_iter()
        .map(|d| d.id)
        .collect();
    by_t.sort();
    let mut want = vec![due_late.id, due_soon.id, delivered.id, inactive.id];
    want.sort();
    assert_eq!(by_t, want, "list_by_template");

    let und: Vec<_> = DeadlineRepository::list_undelivered_active(&s, &a, now(), 100)
        .await
        .expect("list_undelivered_active")
        .into_iter()
        .map(|d| d.id)
        .collect();
    // Effective due dates: overdue 5, rolled 8+7=15, due_soon 20, other 25, due_late 50.
    assert_eq!(
        und,
        vec![overdue.id, rolled.id, due_soon.id, other.id, due_late.id],
        "list_undelivered_active order by effective due date"
    );
    let capped = DeadlineRepository::list_undelivered_active(&s, &a, now(), 2)
        .await
        .expect("list_undelivered_active capped");
    let capped: Vec<_> = capped.into_iter().map(|d| d.id).collect();
    assert_eq!(
        capped,
        vec![overdue.id, rolled.id],
        "cap keeps the earliest"
    );
}

const RACERS: usize = 20;

/// 20 tasks update the same record from the same version: exactly one wins, the others get
/// `VersionConflict`, and the winner's state is stored.
pub async fn concurrent_updates_have_one_winner<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, day(0));
    commit_ok(&s, &a, vec![t.insert()], "insert").await;
    let tasks = (0..RACERS).map(|i| {
        let (s, a) = (s.clone(), a.clone());
        let mut next = t.next(day(1));
        next.description = format!("racer {i}");
        tokio::spawn(async move { (i, commit(&s, &a, vec![next.update(1)]).await) })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("racer task panicked"))
        .collect();
    let winners: Vec<usize> = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one winner, got {results:?}");
    for (i, r) in &results {
        if r.is_err() {
            assert_eq!(r, &Err(StoreError::VersionConflict), "loser {i}");
        }
    }
    let got = get_t(&s, &a, t.id, false).await.expect("present");
    assert_eq!(got.version, 2);
    assert_eq!(
        got.description,
        format!("racer {}", winners[0]),
        "winner's write stored"
    );
}

/// 20 tasks insert the same id: exactly one wins, the others get `VersionConflict`.
pub async fn concurrent_inserts_have_one_winner<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let r = report(&a, TemplateId::new(), day(0));
    let tasks = (0..RACERS).map(|_| {
        let (s, a, r) = (s.clone(), a.clone(), r.clone());
        tokio::spawn(async move { commit(&s, &a, vec![r.insert()]).await })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("racer task panicked"))
        .collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 1, "exactly one insert wins, got {results:?}");
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || r == &Err(StoreError::VersionConflict)),
        "losers get VersionConflict, got {results:?}"
    );
}

/// 20 tasks insert distinct twin deadlines: exactly one is stored, the others get `Duplicate`.
pub async fn concurrent_duplicate_deadlines_have_one_winner<S: StoreUnderTest>(s: S) {
    let a = tenant_a();
    let t = TemplateId::new();
    let tasks = (0..RACERS).map(|_| {
        let (s, a) = (s.clone(), a.clone());
        let d = deadline(&a, Some(t), day(30), day(0));
        tokio::spawn(async move { commit(&s, &a, vec![d.insert()]).await })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("racer task panicked"))
        .collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 1, "exactly one twin stored, got {results:?}");
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(StoreError::Duplicate(_)))),
        "losers get Duplicate, got {results:?}"
    );
    let live = DeadlineRepository::list_by_template(&s, &a, t)
        .await
        .expect("list_by_template");
    assert_eq!(live.len(), 1, "one live deadline");
}
