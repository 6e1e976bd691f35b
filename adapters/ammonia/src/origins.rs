//! Which URLs a sanitized report may load from: [`AllowedOrigins`] and [`UrlUse`].
use std::collections::BTreeSet;
use url::Url;

/// Origins (`scheme://host[:port]`, http or https) a report may load images, stylesheets and
/// fonts from. Empty (the default): a report loads nothing from elsewhere.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedOrigins(BTreeSet<String>);

/// Why a configured origin was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// Not an absolute URL.
    #[error("'{0}' is not an absolute URL (write an origin such as https://cdn.example.com)")]
    NotAUrl(String),
    /// A scheme other than http or https.
    #[error("'{0}' is not an http or https origin")]
    Scheme(String),
    /// A path, query, fragment or user name: an origin is scheme, host and port only.
    #[error("'{0}' is not an origin: write scheme://host[:port] only, without path, query or user")]
    NotAnOrigin(String),
}

/// How a URL would be used, which decides the `data:` URIs allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UrlUse {
    /// An `<img src>`: raster `data:image/…` (never SVG, which is a document).
    Image,
    /// A CSS `url()`, `image-set()` string…: raster images and fonts inline (`data:image/…`
    /// but SVG, `data:font/…`, `data:application/font-…`, `data:application/x-font-…`) and
    /// same-document fragments (`#clip`).
    Css,
    /// A CSS `@import`: a stylesheet may itself load, so no `data:` and no fragment.
    Import,
}

impl AllowedOrigins {
    /// Parses origins such as `https://cdn.example.com` or `http://10.0.0.5:8080` (a trailing
    /// `/` is accepted).
    pub fn parse<S: AsRef<str>>(origins: &[S]) -> Result<Self, OriginError> {
        let mut set = BTreeSet::new();
        for raw in origins {
            let raw = raw.as_ref().trim();
            let url = Url::parse(raw).map_err(|_| OriginError::NotAUrl(raw.to_owned()))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(OriginError::Scheme(raw.to_owned()));
            }
            if url.path() != "/"
                || url.query().is_some()
                || url.fragment().is_some()
                || !url.username().is_empty()
                || url.password().is_some()
                || url.host().is_none()
            {
                return Err(OriginError::NotAnOrigin(raw.to_owned()));
            }
            set.insert(url.origin().ascii_serialization());
        }
        Ok(Self(set))
    }

    /// The origins, serialized (`https://cdn.example.com`), sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// True when nothing may load from elsewhere.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `value` (an attribute value or a CSS URL, already unescaped) may load when the
    /// report is opened, served or saved: an absolute http(s) URL of an allowed origin, or
    /// what `use_` keeps inline. Anything else — relative URLs (a saved report resolves them
    /// against the file system or a network share), `//host/…`, other schemes — is not.
    pub(crate) fn allows(&self, value: &str, use_: UrlUse) -> bool {
        // What a browser does before it reads a URL: strip leading and trailing C0 controls
        // and spaces, remove tabs and newlines anywhere.
        let cleaned: String = value
            .trim_matches(|c: char| c <= ' ')
            .chars()
            .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
            .collect();
        let lower = cleaned.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("data:") {
            return inline_data_allowed(rest, use_);
        }
        if lower.starts_with('#') {
            return use_ == UrlUse::Css;
        }
        match Url::parse(&cleaned) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {
                self.0.contains(&url.origin().ascii_serialization())
            }
            _ => false,
        }
    }
}

/// Whether a `data:` URI whose text after `data:` is `rest` (lower case) is kept for `use_`.
fn inline_data_allowed(rest: &str, use_: UrlUse) -> bool {
    let media = rest.split([';', ',']).next().unwrap_or_default().trim();
    let raster = media.starts_with("image/") && !media.contains("svg");
    match use_ {
        UrlUse::Image => raster,
        UrlUse::Css => {
            raster
                || media.starts_with("font/")
                || media.starts_with("application/font-")
                || media.starts_with("application/x-font-")
        }
        UrlUse::Import => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        let o = AllowedOrigins::parse(&["https://cdn.example.com/", "http://10.0.0.5:8080"])
            .expect("valid");
        assert_eq!(
            o.iter().collect::<Vec<_>>(),
            ["http://10.0.0.5:8080", "https://cdn.example.com"]
        );
        for bad in [
            "cdn.example.com",
            "ftp://cdn.example.com",
            "https://cdn.example.com/fonts",
            "https://u@cdn.example.com",
            "https://cdn.example.com/?q",
            "data:image/png,x",
        ] {
            assert!(AllowedOrigins::parse(&[bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_allowed_origins_and_inline_data_load() {
        let o = AllowedOrigins::parse(&["https://cdn.example.com"]).expect("valid");
        for ok in [
            "https://cdn.example.com/logo.png",
            "HTTPS://CDN.EXAMPLE.COM:443/x",
            " https://cdn.exa\tmple.com/x ",
        ] {
            assert!(o.allows(ok, UrlUse::Image), "{ok}");
        }
        for no in [
            "https://cdn.example.com.evil.test/x",
            "http://cdn.example.com/x",
            "//cdn.example.com/x",
            "logo.png",
            "/logo.png",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:image/svg+xml,<svg/>",
            "",
        ] {
            assert!(!o.allows(no, UrlUse::Image), "{no}");
        }
        assert!(o.allows("data:image/png;base64,AA", UrlUse::Image));
        assert!(o.allows("data:font/woff2;base64,AA", UrlUse::Css));
        assert!(!o.allows("data:font/woff2;base64,AA", UrlUse::Image));
        assert!(!o.allows("data:text/css,a{}", UrlUse::Import));
        assert!(o.allows("#clip", UrlUse::Css));
        assert!(!o.allows("#clip", UrlUse::Import));
        assert!(o.allows("https://cdn.example.com/a.css", UrlUse::Import));
    }
}
