//! A process's CPU time from its own counters (`/proc/<pid>/stat`): the measure of the figures
//! that compare what Reporter, a baseline and the broker spend, whatever else shares the cores.

/// CPU time (user + system, every thread) the process used so far, seconds
/// (`/proc/<pid>/stat`, in clock ticks of 1/100 s); NaN when it cannot be read.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after its `)`.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let tick = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
    // utime and stime are fields 14 and 15 of stat(5): 12 and 13 after the `)`.
    match (tick(11), tick(12)) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_from_proc() {
        let me = cpu_seconds(std::process::id());
        assert!(me.is_finite() && me >= 0.0, "{me}");
        assert!(cpu_seconds(u32::MAX).is_nan());
    }
}
