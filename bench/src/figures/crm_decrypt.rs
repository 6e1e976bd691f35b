//! Issue 33 CRM decryption cost: rows per second of one pass over a 100,000-row holders table
//! (10,000 with `--quick`) built in memory as the CRM stores it (every encrypted field of
//! `adapters/mongo/src/crm/fields.rs` set, each AES-256-GCM sealed in lib-commons' format:
//! standard base64 of nonce (12) ‖ ciphertext ‖ tag), each row cloned (as the cursor hands
//! extraction an owned document), decrypted with the mongo adapter's own row transform
//! ([`CrmSettings::decrypt_row`]) and converted to JSON field by field
//! ([`reporter_adapter_mongo::bson_to_json`]), against the same pass without the decryption.
//! In process, no services. The ratio is decrypted / plain; informational (no target).
use crate::harness::{Ctx, Figure, Sample};
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use anyhow::Context as _;
use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mongodb::bson::{Bson, DateTime, Document, doc};
use reporter_adapter_mongo::{CrmSettings, bson_to_json};
use serde_json::Value;
use std::hint::black_box;
use std::time::Instant;

/// The fixed AES-256 key the rows are sealed with.
const KEY: [u8; 32] = [0x42; 32];

/// Rows of the table: 100,000 (issue 33), 10,000 with `--quick`.
fn rows(quick: bool) -> usize {
    if quick { 10_000 } else { 100_000 }
}

/// Seals values as the CRM does; the nonce is a counter (distinct per value, fixed per run).
struct Sealer {
    cipher: Aes256Gcm,
    counter: u64,
}

impl Sealer {
    fn new() -> anyhow::Result<Self> {
        Ok(Self {
            cipher: Aes256Gcm::new_from_slice(&KEY).map_err(|e| anyhow::anyhow!("key: {e}"))?,
            counter: 0,
        })
    }

    /// Standard base64 of nonce (12) ‖ ciphertext ‖ tag (16).
    fn seal(&mut self, plain: &str) -> anyhow::Result<Bson> {
        self.counter += 1;
        let mut nonce = [0u8; 12];
        nonce[..8].copy_from_slice(&self.counter.to_le_bytes());
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), plain.as_bytes())
            .map_err(|e| anyhow::anyhow!("encrypt: {e}"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(Bson::String(STANDARD.encode(out)))
    }
}

/// Holder `i` as the CRM stores it: plain fields beside every encrypted one (two related
/// parties), each encrypted value sealed.
fn holder(s: &mut Sealer, i: usize) -> anyhow::Result<Document> {
    let at = DateTime::from_millis(1_700_000_000_000 + i as i64 * 1_000);
    Ok(doc! {
        "_id": format!("0190f6c2-0000-7000-8000-{i:012}"),
        "external_id": format!("EXT-{i}"),
        "type": "NATURAL_PERSON",
        "document": s.seal(&format!("{:011}", 10_000_000_000u64 + i as u64))?,
        "name": s.seal(&format!("Holder Name {i}"))?,
        "contact": {
            "primary_email": s.seal(&format!("holder{i}@example.com"))?,
            "secondary_email": s.seal(&format!("other{i}@example.org"))?,
            "mobile_phone": s.seal(&format!("+55 11 9{:08}", i))?,
            "other_phone": s.seal(&format!("+55 11 3{:07}", i % 10_000_000))?,
        },
        "banking_details": {
            "branch": "0001",
            "account": s.seal(&format!("{:08}-{}", i, i % 10))?,
            "type": "CACC",
            "iban": s.seal(&format!("BR15000000000000{:010}P1", i))?,
            "country_code": "BR",
            "bank_id": "12345",
        },
        "legal_person": {
            "trade_name": format!("Trade {i}"),
            "activity": "Retail",
            "type": "LIMITED",
            "founding_date": "2001-02-03",
            "size": "MEDIUM",
            "status": "ACTIVE",
            "representative": {
                "name": s.seal(&format!("Representative {i}"))?,
                "document": s.seal(&format!("{:011}", 20_000_000_000u64 + i as u64))?,
                "email": s.seal(&format!("rep{i}@example.com"))?,
                "role": "DIRECTOR",
            },
        },
        "natural_person": {
            "favorite_name": format!("Fav {i}"),
            "social_name": "",
            "gender": "FEMALE",
            "birth_date": "1990-01-01",
            "civil_status": "SINGLE",
            "nationality": "BR",
            "mother_name": s.seal(&format!("Mother {i}"))?,
            "father_name": s.seal(&format!("Father {i}"))?,
            "status": "ACTIVE",
        },
        "regulatory_fields": {
            "participant_document": s.seal(&format!("{:014}", i))?,
        },
        "related_parties": [
            { "document": s.seal(&format!("{:011}", 30_000_000_000u64 + i as u64))?, "name": "Party A", "role": "PRIMARY_HOLDER", "start_date": "2020-01-01" },
            { "document": s.seal(&format!("{:011}", 40_000_000_000u64 + i as u64))?, "name": "Party B", "role": "LEGAL_REPRESENTATIVE", "start_date": "2021-06-01" },
        ],
        "metadata": { "segment": "retail", "score": (i % 1000) as i32 },
        "created_at": at,
        "updated_at": at,
        "deleted_at": Bson::Null,
    })
}

/// The table: `n` sealed holders.
fn table(n: usize) -> anyhow::Result<Vec<Document>> {
    let mut s = Sealer::new()?;
    (0..n).map(|i| holder(&mut s, i)).collect()
}

/// One extraction pass over `docs`: clone each, decrypt it when `crm` is given, convert every
/// top-level field to JSON. Seconds.
fn pass(docs: &[Document], crm: Option<&CrmSettings>) -> anyhow::Result<f64> {
    let started = Instant::now();
    for d in docs {
        let mut d = d.clone();
        if let Some(crm) = crm {
            crm.decrypt_row(&mut d).context("decrypting a row")?;
        }
        let row: Vec<(String, Value)> = d
            .iter()
            .map(|(k, v)| (k.clone(), bson_to_json(v)))
            .collect();
        black_box(row);
    }
    Ok(started.elapsed().as_secs_f64())
}

/// The figure; the table is built in the first round and kept.
#[derive(Default)]
pub struct CrmDecrypt {
    docs: Vec<Document>,
}

impl CrmDecrypt {
    /// One round (decrypted, then plain, or the reverse): in process, so it needs no [`Ctx`].
    pub fn measure(&mut self, quick: bool, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let n = rows(quick);
        if self.docs.len() != n {
            self.docs = table(n)?;
        }
        let crm = CrmSettings::new(Some(&KEY), None, None)?;
        let (decrypted, plain) = if reporter_first {
            let d = pass(&self.docs, Some(&crm))?;
            (d, pass(&self.docs, None)?)
        } else {
            let p = pass(&self.docs, None)?;
            (pass(&self.docs, Some(&crm))?, p)
        };
        Ok(vec![Sample {
            row: format!("CRM decryption, {n}-row holders table"),
            unit: "rows/s",
            reporter: n as f64 / decrypted,
            baseline: n as f64 / plain,
            baseline_name: "same rows, not decrypted",
            target: None,
        }])
    }
}

#[async_trait]
impl Figure for CrmDecrypt {
    fn name(&self) -> &'static str {
        "crm-decrypt"
    }

    fn in_process(&self) -> bool {
        true
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        tokio::task::block_in_place(|| self.measure(ctx.quick, reporter_first))
    }

    async fn round_in_process(
        &mut self,
        quick: bool,
        reporter_first: bool,
    ) -> anyhow::Result<Vec<Sample>> {
        tokio::task::block_in_place(|| self.measure(quick, reporter_first))
    }

    async fn finish(&mut self, _ctx: &Ctx) {
        self.docs = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_adapter_decrypts_what_the_bench_seals() {
        let docs = table(3).unwrap();
        let crm = CrmSettings::new(Some(&KEY), None, None).unwrap();
        let mut d = docs[2].clone();
        assert_ne!(d.get_str("name").unwrap(), "Holder Name 2");
        crm.decrypt_row(&mut d).unwrap();
        assert_eq!(d.get_str("name").unwrap(), "Holder Name 2");
        assert_eq!(
            d.get_document("contact")
                .unwrap()
                .get_str("primary_email")
                .unwrap(),
            "holder2@example.com"
        );
        let parties = d.get_array("related_parties").unwrap();
        let second = parties[1].as_document().unwrap();
        assert_eq!(second.get_str("document").unwrap(), "40000000002");
        assert_eq!(d.get_str("type").unwrap(), "NATURAL_PERSON");
        // A wrong key fails the row, as extraction does.
        let wrong = CrmSettings::new(Some(&[1u8; 32]), None, None).unwrap();
        assert!(wrong.decrypt_row(&mut docs[0].clone()).is_err());
    }

    #[test]
    fn a_pass_decrypts_every_row() {
        let docs = table(10).unwrap();
        let crm = CrmSettings::new(Some(&KEY), None, None).unwrap();
        assert!(pass(&docs, Some(&crm)).unwrap() >= 0.0);
        assert!(pass(&docs, None).unwrap() >= 0.0);
    }
}
