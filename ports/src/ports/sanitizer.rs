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

    /// A sanitizing pass fed the document in pieces as it is written (a render's output as
    /// it is produced): [`HtmlSanitizeStream::finish`] returns exactly what
    /// [`Self::sanitize`] returns for the pieces joined, however the document was cut. The
    /// default gathers the pieces and sanitizes them whole at the end; an implementation
    /// that rewrites as a stream does its work as the pieces arrive.
    fn stream(&self) -> Box<dyn HtmlSanitizeStream + '_> {
        Box::new(Gathered {
            sanitizer: self,
            html: String::new(),
        })
    }
}

/// A document being sanitized as it is written ([`HtmlSanitizer::stream`]).
pub trait HtmlSanitizeStream {
    /// The next piece of the document (the text that follows the pieces before).
    fn write(&mut self, piece: &str);
    /// The sanitized document.
    fn finish(self: Box<Self>) -> String;
}

/// The default stream: the pieces gathered, sanitized whole by [`HtmlSanitizeStream::finish`].
struct Gathered<'s, S: HtmlSanitizer + ?Sized> {
    sanitizer: &'s S,
    html: String,
}

impl<S: HtmlSanitizer + ?Sized> HtmlSanitizeStream for Gathered<'_, S> {
    fn write(&mut self, piece: &str) {
        self.html.push_str(piece);
    }

    fn finish(self: Box<Self>) -> String {
        self.sanitizer.sanitize(&self.html)
    }
}
