/// Makes an HTML document safe to open in a browser: whatever the input, the output MUST
/// contain nothing that executes script (no `<script>`, event-handler attributes,
/// `javascript:` URLs, frames, objects, SVG/MathML script vectors, `<meta http-equiv>` but a
/// UTF-8 content type),
/// and nothing that loads from elsewhere when the document is opened, served or saved to disk
/// (remote or relative image sources, stylesheets, CSS `url()`, `@import`, `@font-face`
/// sources, escapes included) unless the implementation was configured to allow its origin,
/// while keeping what report layouts use (tables, inline styles, `<style>`, images from
/// `data:` URIs, the document skeleton). Synchronous and CPU-bound: run it where template
/// work runs (the sandbox), never on an async runtime thread.
pub trait HtmlSanitizer: Send + Sync {
    /// The sanitized document.
    fn sanitize(&self, html: &str) -> String;
}
