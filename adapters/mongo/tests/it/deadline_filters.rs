//! The deadline status and due-date filters run in the database; they must answer exactly what
//! `DeadlineQuery::matches` answers on the stored records, at instants with and without a
//! sub-millisecond part, on random deadlines of every frequency and delivery state.
use crate::common::with_mongo;
use chrono::{DateTime, Datelike, Duration, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reporter_contract::fixtures::{day, deadline, page, tenant_a};
use reporter_ports::deadline::{Deadline, DeadlineStatus, DeadlineType, Frequency};
use reporter_ports::page::SortOrder;
use reporter_ports::ports::{
    Change, DeadlineQuery, DeadlineRepository, UnitOfWork, UnitOfWorkPort,
};
use std::collections::BTreeSet;

const FREQUENCIES: [Frequency; 6] = [
    Frequency::Once,
    Frequency::Daily,
    Frequency::Weekly,
    Frequency::Monthly,
    Frequency::Semiannual,
    Frequency::Annual,
];

fn random_deadline(rng: &mut StdRng) -> Deadline {
    let a = tenant_a();
    // Due within ±40 days of day(40), with sub-millisecond noise the store drops.
    let due = day(40)
        + Duration::seconds(rng.random_range(-40 * 86_400..40 * 86_400))
        + Duration::nanoseconds(rng.random_range(0..1_000_000));
    let mut d = deadline(
        &a,
        None,
        due,
        day(0) + Duration::seconds(rng.random_range(0..1000)),
    );
    d.frequency = FREQUENCIES[rng.random_range(0..FREQUENCIES.len())];
    d.months_of_year = match d.frequency {
        Frequency::Semiannual => vec![due.month(), (due.month() % 12) + 1],
        Frequency::Annual => vec![due.month()],
        _ => Vec::new(),
    };
    d.months_of_year.sort_unstable();
    d.kind = if rng.random_bool(0.5) {
        DeadlineType::Custom
    } else {
        DeadlineType::Regulatory
    };
    d.active = rng.random_bool(0.8);
    if rng.random_bool(0.5) {
        d.delivered_at = Some(due - Duration::hours(rng.random_range(0..48)));
    }
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_due_filters_equal_matches() {
    with_mongo(|dbs| async move {
        let store = dbs.store().await;
        let a = tenant_a();
        let mut rng = StdRng::seed_from_u64(0x5eed);
        let made: Vec<Deadline> = (0..120).map(|_| random_deadline(&mut rng)).collect();
        let mut uow = UnitOfWork::new();
        for d in &made {
            uow = uow.change(Change::Deadline {
                record: d.clone(),
                expected_version: None,
            });
        }
        store.commit(&a, uow).await.expect("commit");
        // The records as stored (milliseconds): `matches` is evaluated on these.
        let mut stored = Vec::new();
        for d in &made {
            stored.push(
                DeadlineRepository::get(&store, &a, d.id, false)
                    .await
                    .expect("get")
                    .expect("present"),
            );
        }

        // Instants around stored due dates (exactly on, ±1 ms, ±0.5 ms) and a few fixed ones.
        let mut nows: Vec<DateTime<Utc>> = vec![day(10), day(40), day(75)];
        for d in stored.iter().take(12) {
            for offset in [-1_000_000i64, -500_000, 0, 500_000, 1_000_000] {
                nows.push(d.due_date + Duration::nanoseconds(offset));
            }
            if let Some(next) = d.next_due_date() {
                nows.push(next);
                nows.push(next + Duration::nanoseconds(400_000));
            }
        }

        let mut queries: Vec<DeadlineQuery> = Vec::new();
        for status in [
            None,
            Some(DeadlineStatus::Pending),
            Some(DeadlineStatus::Overdue),
            Some(DeadlineStatus::Delivered),
        ] {
            for active in [None, Some(true)] {
                queries.push(DeadlineQuery {
                    status,
                    active,
                    ..Default::default()
                });
            }
        }
        let mut checked = 0;
        for (i, now) in nows.iter().enumerate() {
            let mut qs = queries.clone();
            // Due ranges anchored on a stored due date, with sub-ms bounds.
            let anchor = stored[i % stored.len()].due_date;
            qs.push(DeadlineQuery {
                due_from: Some(anchor),
                ..Default::default()
            });
            qs.push(DeadlineQuery {
                due_to: Some(anchor + Duration::nanoseconds(300_000)),
                status: Some(DeadlineStatus::Pending),
                ..Default::default()
            });
            qs.push(DeadlineQuery {
                due_from: Some(anchor - Duration::days(3) + Duration::nanoseconds(1)),
                due_to: Some(anchor + Duration::days(3)),
                kind: Some(DeadlineType::Regulatory),
                ..Default::default()
            });
            for q in &qs {
                let want: BTreeSet<_> = stored
                    .iter()
                    .filter(|d| q.matches(d, *now))
                    .map(|d| d.id)
                    .collect();
                let p = DeadlineRepository::list(&store, &a, q, page(1, 100, SortOrder::Asc), *now)
                    .await
                    .expect("list");
                let got: BTreeSet<_> = p.items.iter().map(|d| d.id).collect();
                assert_eq!(p.total, want.len() as u64, "total for {q:?} at {now:?}");
                if want.len() <= 100 {
                    assert_eq!(got, want, "items for {q:?} at {now:?}");
                }
                checked += 1;
            }

            // list_undelivered_active: active, not Delivered at `now`, by effective due date.
            let mut want: Vec<&Deadline> = stored
                .iter()
                .filter(|d| d.active && d.view(*now).status != DeadlineStatus::Delivered)
                .collect();
            want.sort_by_key(|d| (d.view(*now).due_date, d.created_at, d.id));
            want.truncate(25);
            let got = DeadlineRepository::list_undelivered_active(&store, &a, *now, 25)
                .await
                .expect("list_undelivered_active");
            assert_eq!(
                got.iter().map(|d| d.id).collect::<Vec<_>>(),
                want.iter().map(|d| d.id).collect::<Vec<_>>(),
                "list_undelivered_active at {now:?}"
            );
        }
        eprintln!("{checked} filtered lists compared with DeadlineQuery::matches");
    })
    .await;
}
