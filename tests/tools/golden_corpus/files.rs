//! Writing a case's tables as `<table>.json` files (arrays of row objects, values as in
//! `data.json`) and reading them through the file data source, `FileDataSource`.
use super::{Loader, Table};
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::DataSource;
use serde_json::Value;
use std::sync::Arc;

pub struct Files {
    root: tempfile::TempDir,
    created: usize,
}

impl Files {
    pub fn new() -> Result<Self, String> {
        Ok(Self {
            root: tempfile::tempdir().map_err(|e| e.to_string())?,
            created: 0,
        })
    }
}

impl Loader for Files {
    async fn load(&mut self, ds: &str, tables: &[Table]) -> Result<Arc<dyn DataSource>, String> {
        self.created += 1;
        let dir = self.root.path().join(format!("{}_{ds}", self.created));
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        for t in tables {
            let rows: Vec<Value> = t.rows.iter().cloned().map(Value::Object).collect();
            let text = serde_json::to_string(&rows).map_err(|e| e.to_string())?;
            std::fs::write(dir.join(format!("{}.json", t.name)), text)
                .map_err(|e| e.to_string())?;
        }
        let id = DataSourceId::parse(ds).ok_or("data source id")?;
        let source =
            reporter_adapter_fs::FileDataSource::open(id, dir).map_err(|e| e.to_string())?;
        Ok(Arc::new(source))
    }

    async fn finish(self) {}
}
