//! [`ChromiumPdfRenderer`]: headless Chromium `Page.printToPDF` over the DevTools protocol.
use crate::cdp::Browser;
use crate::page::{PageSetup, validate};
use async_trait::async_trait;
use base64::Engine as _;
use reporter_ports::ports::{PdfError, PdfRenderer};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, Semaphore};

/// URL patterns the page may not load: documents are self-contained, so nothing leaves the
/// machine and no local file is read (inline `data:` URLs still work).
const BLOCKED_URLS: [&str; 6] = [
    "http://*",
    "https://*",
    "file://*",
    "ftp://*",
    "ws://*",
    "wss://*",
];

/// Waits for the load event (at most 2 s) and then for web fonts.
const READY_SCRIPT: &str = "new Promise(r => { if (document.readyState === 'complete') r(); \
    else { window.addEventListener('load', () => r()); setTimeout(r, 2000); } })\
    .then(() => document.fonts ? document.fonts.ready : null).then(() => true)";

/// Options of a [`ChromiumPdfRenderer`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChromiumOptions {
    /// The Chromium binary. Default `/usr/bin/chromium`.
    pub chromium_path: PathBuf,
    /// Conversions running at once (each in its own browser context and tab of one shared
    /// browser). Default 2 (the reference's `PDF_POOL_WORKERS`). At least 1.
    pub pool_size: usize,
    /// Longest a caller waits for one conversion, slot wait and a browser (re)start included.
    /// Default 90 s (the reference's `PDF_TIMEOUT_SECONDS`).
    pub timeout: Duration,
    /// Longest wait for the browser to start listening. Default 30 s.
    pub launch_timeout: Duration,
    /// Extra pause after the document is ready and before printing (the reference waits
    /// ~500 ms). Default 0: the renderer already waits for the load event and web fonts.
    pub settle: Duration,
    /// Paper and margins. Default US Letter, 0.5 in. CSS `@page` sizes are ignored.
    pub page: PageSetup,
}

impl Default for ChromiumOptions {
    fn default() -> Self {
        Self {
            chromium_path: PathBuf::from("/usr/bin/chromium"),
            pool_size: 2,
            timeout: Duration::from_secs(90),
            launch_timeout: Duration::from_secs(30),
            settle: Duration::ZERO,
            page: PageSetup::default(),
        }
    }
}

/// A [`PdfRenderer`] on headless Chromium.
///
/// - The browser is started lazily (first `render`/`check`) with a private temporary profile
///   and restarted if its connection drops; [`shutdown`](Self::shutdown) stops it (dropping
///   the renderer kills it).
/// - Each conversion gets a fresh browser context (no cookies or storage shared between
///   reports) and tab, disposed afterwards, even on timeout.
/// - Script execution is disabled in the page (`Emulation.setScriptExecutionDisabled`):
///   nothing in the document runs.
/// - Network and file URLs are blocked in the page; the HTML is set with
///   `Page.setDocumentContent` (no size limit of `data:` URLs).
/// - At most `pool_size` conversions at once; the whole call is bounded by `timeout`.
/// - A missing binary makes `check` and `render` return [`PdfError::Unavailable`].
/// - Output under 1,000 bytes or not starting with `%PDF-` is [`PdfError::Failed`].
#[derive(Clone)]
pub struct ChromiumPdfRenderer {
    options: Arc<ChromiumOptions>,
    timeout: Duration,
    slots: Arc<Semaphore>,
    browser: Arc<Mutex<Option<Arc<Browser>>>>,
}

impl std::fmt::Debug for ChromiumPdfRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChromiumPdfRenderer")
            .field("options", &self.options)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Disposes a browser context when dropped — also when the conversion future is dropped by
/// a timeout.
struct ContextGuard {
    browser: Arc<Browser>,
    id: String,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        let browser = Arc::clone(&self.browser);
        let id = std::mem::take(&mut self.id);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = browser
                    .call(
                        "Target.disposeBrowserContext",
                        json!({ "browserContextId": id }),
                        None,
                    )
                    .await;
            });
        }
    }
}

fn field<'a>(v: &'a Value, key: &str, method: &str) -> Result<&'a str, PdfError> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PdfError::Failed(format!("{method}: no {key} in reply")))
}

impl ChromiumPdfRenderer {
    /// A renderer; nothing is started until the first `render` or `check`.
    pub fn new(options: ChromiumOptions) -> Self {
        Self {
            timeout: options.timeout,
            slots: Arc::new(Semaphore::new(options.pool_size.max(1))),
            options: Arc::new(options),
            browser: Arc::default(),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &ChromiumOptions {
        &self.options
    }

    /// The same renderer — same browser, same pool slots — with another timeout.
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout,
            ..self.clone()
        }
    }

    /// Pool slots free right now.
    pub fn idle_slots(&self) -> usize {
        self.slots.available_permits()
    }

    /// Stops the browser (it starts again on the next call).
    pub async fn shutdown(&self) {
        let browser = self.browser.lock().await.take();
        if let Some(b) = browser {
            b.close().await;
        }
    }

    async fn browser(&self) -> Result<Arc<Browser>, PdfError> {
        let mut slot = self.browser.lock().await;
        if let Some(b) = slot.as_ref()
            && !b.is_closed()
        {
            return Ok(Arc::clone(b));
        }
        let b = Arc::new(
            Browser::launch(&self.options.chromium_path, self.options.launch_timeout).await?,
        );
        *slot = Some(Arc::clone(&b));
        Ok(b)
    }

    /// Prints `html` in a fresh browser context (closed by its guard, whatever happens).
    async fn convert(&self, html: &str) -> Result<Vec<u8>, PdfError> {
        let _permit = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(|_| PdfError::Unavailable("renderer closed".into()))?;
        let browser = self.browser().await?;
        let ctx = browser
            .call("Target.createBrowserContext", json!({}), None)
            .await?;
        let guard = ContextGuard {
            browser: Arc::clone(&browser),
            id: field(&ctx, "browserContextId", "Target.createBrowserContext")?.to_owned(),
        };
        let session = open_page(&browser, &guard.id).await?;
        let s = Some(session.as_str());
        load_document(&browser, s, html).await?;
        if !self.options.settle.is_zero() {
            tokio::time::sleep(self.options.settle).await;
        }
        let pdf = self.print(&browser, s).await?;
        drop(guard);
        Ok(pdf)
    }

    /// `Page.printToPDF` with the configured paper and margins, decoded.
    async fn print(&self, browser: &Browser, s: Option<&str>) -> Result<Vec<u8>, PdfError> {
        let (w, h) = self.options.page.paper.inches();
        let m = self.options.page.margins;
        let printed = browser
            .call(
                "Page.printToPDF",
                json!({
                    "paperWidth": w, "paperHeight": h,
                    "marginTop": m.top, "marginRight": m.right,
                    "marginBottom": m.bottom, "marginLeft": m.left,
                    "printBackground": true, "preferCSSPageSize": false,
                }),
                s,
            )
            .await?;
        let data = field(&printed, "data", "Page.printToPDF")?;
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| PdfError::Failed(format!("Page.printToPDF: bad base64: {e}")))
    }
}

/// A blank page in browser context `context`, attached flat: its session id. Network
/// requests to anything but inline data are blocked and script is disabled.
async fn open_page(browser: &Browser, context: &str) -> Result<String, PdfError> {
    let target = browser
        .call(
            "Target.createTarget",
            json!({ "url": "about:blank", "browserContextId": context }),
            None,
        )
        .await?;
    let target_id = field(&target, "targetId", "Target.createTarget")?;
    let attached = browser
        .call(
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
            None,
        )
        .await?;
    let session = field(&attached, "sessionId", "Target.attachToTarget")?.to_owned();
    let s = Some(session.as_str());
    browser.call("Network.enable", json!({}), s).await?;
    browser
        .call("Network.setBlockedURLs", json!({ "urls": BLOCKED_URLS }), s)
        .await?;
    browser.call("Page.enable", json!({}), s).await?;
    // The document never runs script: only this renderer's own readiness probe (DevTools
    // evaluation is not page script) runs in the page.
    browser
        .call(
            "Emulation.setScriptExecutionDisabled",
            json!({ "value": true }),
            s,
        )
        .await?;
    Ok(session)
}

/// Sets the page's document to `html` and waits until its fonts and layout are ready.
async fn load_document(browser: &Browser, s: Option<&str>, html: &str) -> Result<(), PdfError> {
    let tree = browser.call("Page.getFrameTree", json!({}), s).await?;
    let frame_id = tree
        .pointer("/frameTree/frame/id")
        .and_then(Value::as_str)
        .ok_or_else(|| PdfError::Failed("Page.getFrameTree: no frame id".into()))?;
    browser
        .call(
            "Page.setDocumentContent",
            json!({ "frameId": frame_id, "html": html }),
            s,
        )
        .await?;
    browser
        .call(
            "Runtime.evaluate",
            json!({ "expression": READY_SCRIPT, "awaitPromise": true }),
            s,
        )
        .await?;
    Ok(())
}

#[async_trait]
impl PdfRenderer for ChromiumPdfRenderer {
    async fn render(&self, html: &str) -> Result<Vec<u8>, PdfError> {
        let pdf = tokio::time::timeout(self.timeout, self.convert(html))
            .await
            .map_err(|_| PdfError::Timeout(self.timeout))??;
        validate(pdf)
    }

    /// Starts the browser if needed and asks it for its version.
    async fn check(&self) -> Result<(), PdfError> {
        let run = async {
            let browser = self.browser().await?;
            browser
                .call("Browser.getVersion", json!({}), None)
                .await
                .map(drop)
        };
        tokio::time::timeout(self.options.launch_timeout, run)
            .await
            .map_err(|_| PdfError::Unavailable("chromium did not answer in time".into()))?
    }
}
