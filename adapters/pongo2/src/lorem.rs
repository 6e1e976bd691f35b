//! The text of `{% lorem %}`: the traditional Lorem Ipsum filler (public domain), seven
//! paragraphs, as Pongo2 ships it.

/// Paragraphs separated by newlines.
pub const TEXT: &str = include_str!("lorem.txt");
