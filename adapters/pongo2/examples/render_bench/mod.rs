//! What the row benchmarks (`rows_bench`, `wide_bench`) share: their arguments, the render
//! limits, a feed of prepared chunks, the timed loop and the render child's large stack.
use reporter_ports::ports::{RenderError, RenderLimits, RowFeed};
use std::time::Instant;

/// `[rows] [repeats]` from the command line (default 100000 rows, 5 repeats).
pub fn rows_and_repeats() -> (usize, usize) {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    (
        args.first().copied().unwrap_or(100_000),
        args.get(1).copied().unwrap_or(5),
    )
}

/// Limits that no benchmark reaches: 1 GiB of output and fuel without end.
pub fn limits() -> RenderLimits {
    RenderLimits {
        max_output_bytes: 1 << 30,
        fuel: u64::MAX / 2,
        ..RenderLimits::default()
    }
}

/// Prepared chunks of rows; with `piece_bytes`, it takes the output in pieces of about that
/// many bytes and counts them (`written`), as the render child's feed does.
pub struct Feed {
    chunks: std::vec::IntoIter<Vec<u8>>,
    piece_bytes: Option<usize>,
    /// Bytes of output taken in pieces.
    pub written: usize,
}

impl Feed {
    /// A feed of `chunks`, taking output pieces of `piece_bytes` (`None`: no pieces).
    pub fn new(chunks: Vec<Vec<u8>>, piece_bytes: Option<usize>) -> Self {
        Self {
            chunks: chunks.into_iter(),
            piece_bytes,
            written: 0,
        }
    }
}

impl RowFeed for Feed {
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, RenderError> {
        Ok(self.chunks.next())
    }

    fn output_piece_bytes(&self) -> Option<usize> {
        self.piece_bytes
    }

    fn output(&mut self, piece: String) -> Result<(), RenderError> {
        self.written += piece.len();
        Ok(())
    }
}

/// Runs `render` (which answers the output's length) `repeats` times, printing each time.
/// A failed render stops the benchmark.
pub fn timed(rows: usize, repeats: usize, render: impl Fn() -> Result<usize, RenderError>) {
    for _ in 0..repeats {
        let started = Instant::now();
        let len = render().unwrap_or_else(|e| panic!("{e}"));
        println!("{rows} rows, {len} bytes: {:?}", started.elapsed());
    }
}

/// Runs `run` on a thread with the render child's 64 MiB stack, named `name` (`None`: unnamed).
pub fn on_render_stack(name: Option<&str>, run: impl FnOnce() + Send) {
    std::thread::scope(|s| {
        let builder = std::thread::Builder::new().stack_size(64 << 20);
        let builder = match name {
            Some(n) => builder.name(n.to_owned()),
            None => builder,
        };
        builder.spawn_scoped(s, run).map(|t| t.join()).ok();
    });
}
