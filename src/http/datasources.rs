//! `/v1/data-sources` operations.
use super::auth::{Auth, Scope};
use super::error::{AUTH, ApiResult, NOT_FOUND, UNAVAILABLE};
use super::tags::ApiTags;
use crate::app::App;
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Enum, Object, OpenApi};
use reporter_ports::datasource::{DataSourceDescriptor, DataSourceKind};
use std::sync::Arc;

/// Technology of a data source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "DataSourceKind", rename_all = "lowercase")]
pub enum DataSourceKindDto {
    /// A directory of JSON / CSV tables.
    File,
    /// PostgreSQL.
    Postgresql,
    /// MongoDB.
    Mongodb,
    /// MySQL or MariaDB.
    Mysql,
    /// Microsoft SQL Server.
    Sqlserver,
}

/// A configured data source.
#[derive(Debug, Clone, Object)]
#[oai(rename = "DataSource", rename_all = "camelCase")]
pub struct DataSourceDto {
    /// Id used in templates (`{{ <id>.<table>.<field> }}`) and report filters.
    pub id: String,
    /// Database or directory name.
    pub external_name: String,
    /// Technology.
    #[oai(rename = "type")]
    pub kind: DataSourceKindDto,
}

/// One table and its fields.
#[derive(Debug, Clone, Object)]
#[oai(rename = "DataSourceTable")]
pub struct TableDto {
    /// Table name as templates address it (`schema__table` outside the default schema).
    pub name: String,
    /// Field names, sorted.
    pub fields: Vec<String>,
}

/// A data source with its schema.
#[derive(Debug, Clone, Object)]
#[oai(rename = "DataSourceDetails", rename_all = "camelCase")]
pub struct DataSourceDetailsDto {
    /// Id.
    pub id: String,
    /// Database or directory name.
    pub external_name: String,
    /// Technology.
    #[oai(rename = "type")]
    pub kind: DataSourceKindDto,
    /// Tables, sorted by name.
    pub tables: Vec<TableDto>,
}

fn kind(k: DataSourceKind) -> DataSourceKindDto {
    match k {
        DataSourceKind::File => DataSourceKindDto::File,
        DataSourceKind::Postgresql => DataSourceKindDto::Postgresql,
        DataSourceKind::Mongodb => DataSourceKindDto::Mongodb,
        DataSourceKind::Mysql => DataSourceKindDto::Mysql,
        DataSourceKind::Sqlserver => DataSourceKindDto::Sqlserver,
    }
}

impl From<&DataSourceDescriptor> for DataSourceDto {
    fn from(d: &DataSourceDescriptor) -> Self {
        Self {
            id: d.id.as_str().to_owned(),
            external_name: d.external_name.clone(),
            kind: kind(d.kind),
        }
    }
}

/// Data source operations.
#[derive(Default)]
pub struct DataSourcesApi;

#[OpenApi(tag = "ApiTags::DataSources")]
impl DataSourcesApi {
    /// List data sources
    ///
    /// Every configured data source (a bare array, as in the reference). Scope `data-sources:read`.
    #[oai(
        path = "/v1/data-sources",
        method = "get",
        operation_id = "listDataSources"
    )]
    async fn list(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DataSourcesRead")] auth: Auth,
    ) -> ApiResult<Json<Vec<DataSourceDto>>, AUTH> {
        let caller = auth.caller();
        Ok(Json(
            app.list_data_sources(&caller)
                .iter()
                .map(DataSourceDto::from)
                .collect(),
        ))
    }

    /// Get a data source's schema
    ///
    /// Tables and fields of one data source. The id must match
    /// `^[a-zA-Z][a-zA-Z0-9_-]{0,127}$` (400); an unknown id answers 404 (TPL-0057); a source
    /// that cannot be reached answers 503 (TPL-0058). Scope `data-sources:read`.
    #[oai(
        path = "/v1/data-sources/:dataSourceId",
        method = "get",
        operation_id = "getDataSource"
    )]
    async fn get(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DataSourcesRead")] auth: Auth,
        /// Data source id.
        #[oai(name = "dataSourceId")]
        id: Path<String>,
    ) -> ApiResult<Json<DataSourceDetailsDto>, { AUTH | NOT_FOUND | UNAVAILABLE }> {
        let caller = auth.caller();
        let d = app.get_data_source(&caller, &id.0).await?;
        Ok(Json(DataSourceDetailsDto {
            id: d.descriptor.id.as_str().to_owned(),
            external_name: d.descriptor.external_name,
            kind: kind(d.descriptor.kind),
            tables: d
                .schema
                .tables
                .into_iter()
                .map(|t| TableDto {
                    name: t.name,
                    fields: t.fields,
                })
                .collect(),
        }))
    }
}
