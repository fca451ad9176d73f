//! The latest calendar day anywhere on Earth, by this machine's clock: the
//! bound a rate's date may not pass (`idem_core::date::not_after`).

/// `YYYY-MM-DD` at UTC+14 now.
pub fn latest_today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2))
        .unwrap_or_default();
    idem_core::date::latest_today(secs)
}
