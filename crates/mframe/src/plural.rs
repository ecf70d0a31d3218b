//! Counts in reports: "1 frame", "2 frames", "0 frames".

/// `n` and `noun`, with an `s` unless `n` is 1: `count(1, "frame")` is
/// "1 frame". A noun of several words takes the `s` on its last one
/// ("2 malformed payloads").
pub(crate) fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if let Some(stem) = noun.strip_suffix("ry") {
        format!("{n} {stem}ries")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_every_other_count_plural() {
        assert_eq!(count(1, "frame"), "1 frame");
        assert_eq!(count(0, "frame"), "0 frames");
        assert_eq!(count(2, "malformed payload"), "2 malformed payloads");
        assert_eq!(count(3, "retry"), "3 retries");
    }
}
