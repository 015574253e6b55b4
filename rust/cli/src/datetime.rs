//! The two time arguments of `reset`: an ISO-8601 date-time (`--to-datetime`) and an ISO-8601
//! duration (`--by-duration`), as Kafka's `kafka-consumer-groups` takes them.

use chrono::{DateTime, Local, NaiveDateTime, TimeZone};

const DATETIME_FORMS: &str =
    "YYYY-MM-DDTHH:mm:SS[.sss][Z|+HH:mm|-HH:mm] (without a zone: local time), e.g. 2024-05-01T12:00:00Z";

/// Milliseconds since the epoch of an ISO-8601 date-time. Seconds are required, a fraction is
/// optional; without a zone the machine's local time is meant, as in Kafka's tool.
pub fn parse_datetime(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let bad = || format!("date-time '{text}' is not ISO-8601; expected {DATETIME_FORMS}");
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.timestamp_millis());
    }
    // +HHmm and +HH offsets, which RFC 3339 does not allow but ISO-8601 does.
    if let Ok(at) = DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%#z") {
        return Ok(at.timestamp_millis());
    }
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").map_err(|_| bad())?;
    // A time that occurs twice (clocks set back) is taken at its first occurrence.
    Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|at| at.timestamp_millis())
        .ok_or_else(|| format!("date-time '{text}' does not exist in the local time zone (a clock change skips it)"))
}

/// Milliseconds in an ISO-8601 duration `PnDTnHnMn.nS` (Java's `Duration` form: days, hours,
/// minutes and seconds; case does not matter). Negative durations are refused.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let bad = |why: &str| {
        format!(
            "duration '{text}' {why}; expected ISO-8601 PnDTnHnMnS, e.g. PT30M, P1DT12H, PT0.5S"
        )
    };
    let upper = text.trim().to_ascii_uppercase();
    if upper.contains('-') {
        return Err(bad("is negative"));
    }
    let rest = upper
        .strip_prefix('+')
        .unwrap_or(&upper)
        .strip_prefix('P')
        .ok_or_else(|| bad("does not start with P"))?;
    let (date, time) = match rest.split_once('T') {
        Some((_, "")) => return Err(bad("has T with nothing after it")),
        Some((date, time)) => (date, time),
        None => (rest, ""),
    };
    // (amount, milliseconds per unit) of each component, in order.
    let mut parts: Vec<(i64, i64)> = Vec::new();
    if !date.is_empty() {
        let days = date
            .strip_suffix('D')
            .ok_or_else(|| bad("has a date part other than days"))?;
        parts.push((
            whole(days).ok_or_else(|| bad("has a bad number"))?,
            86_400_000,
        ));
    }
    let mut time = time;
    let mut last_rank = 0;
    while !time.is_empty() {
        let end = time
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .ok_or_else(|| bad("has a number without a unit"))?;
        let number = &time[..end];
        let (rank, unit_ms) = match time[end..].chars().next() {
            Some('H') => (1, 3_600_000),
            Some('M') => (2, 60_000),
            Some('S') => (3, 1000),
            _ => return Err(bad("has a unit other than H, M or S after T")),
        };
        if rank <= last_rank {
            return Err(bad("has units out of order or repeated"));
        }
        last_rank = rank;
        if rank == 3 {
            let (seconds, fraction) = number.split_once(['.', ',']).unwrap_or((number, ""));
            let seconds = whole(seconds).ok_or_else(|| bad("has bad seconds"))?;
            if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("has bad seconds"));
            }
            // Milliseconds: the first three digits of the fraction, padded.
            let millis = format!("{fraction:0<3}")[..3]
                .parse::<i64>()
                .map_err(|_| bad("has bad seconds"))?;
            parts.push((seconds, 1000));
            parts.push((millis, 1));
        } else {
            parts.push((
                whole(number).ok_or_else(|| bad("has a bad number"))?,
                unit_ms,
            ));
        }
        time = &time[end + 1..];
    }
    if parts.is_empty() {
        return Err(bad("has no days, hours, minutes or seconds"));
    }
    parts
        .into_iter()
        .try_fold(0i64, |total, (amount, unit_ms)| {
            amount
                .checked_mul(unit_ms)
                .and_then(|ms| total.checked_add(ms))
                .ok_or_else(|| bad("is too long"))
        })
}

/// A non-empty run of decimal digits.
fn whole(digits: &str) -> Option<i64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_with_a_zone() {
        for (text, millis) in [
            ("1970-01-01T00:00:00Z", 0),
            ("2024-05-01T12:00:00Z", 1_714_564_800_000),
            ("2024-05-01T12:00:00.250Z", 1_714_564_800_250),
            ("2024-05-01T14:00:00+02:00", 1_714_564_800_000),
            ("2024-05-01T14:00:00.5+0200", 1_714_564_800_500),
            ("2024-05-01T07:30:00-04:30", 1_714_564_800_000),
            (" 2024-05-01T12:00:00z ", 1_714_564_800_000),
        ] {
            assert_eq!(parse_datetime(text), Ok(millis), "{text}");
        }
    }

    #[test]
    fn datetimes_without_a_zone_are_local_time() {
        let naive =
            NaiveDateTime::parse_from_str("2024-05-01T12:00:00", "%Y-%m-%dT%H:%M:%S").map(|n| {
                Local
                    .from_local_datetime(&n)
                    .earliest()
                    .map(|t| t.timestamp_millis())
            });
        assert_eq!(
            parse_datetime("2024-05-01T12:00:00").ok(),
            naive.ok().flatten()
        );
        assert!(parse_datetime("2024-05-01T12:00:00.123").is_ok());
    }

    #[test]
    fn bad_datetimes_name_the_value_and_the_form() {
        for text in [
            "",
            "yesterday",
            "2024-05-01",
            "2024-05-01T12:00",
            "2024-13-01T00:00:00Z",
            "2024-05-01T12:00:00+25:00",
            "1714564800000",
        ] {
            let message = parse_datetime(text).unwrap_err();
            assert!(
                message.contains(&format!("'{}'", text.trim())) && message.contains("YYYY-MM-DD"),
                "{message}"
            );
        }
    }

    #[test]
    fn durations_follow_javas_form() {
        for (text, millis) in [
            ("PT0S", 0),
            ("PT30M", 1_800_000),
            ("PT1H", 3_600_000),
            ("P1D", 86_400_000),
            ("P1DT12H", 129_600_000),
            (
                "P2DT3H4M5S",
                2 * 86_400_000 + 3 * 3_600_000 + 4 * 60_000 + 5000,
            ),
            ("PT0.5S", 500),
            ("PT1,25S", 1250),
            ("PT0.0019S", 1),
            ("pt15m", 900_000),
            ("PT90S", 90_000),
        ] {
            assert_eq!(parse_duration(text), Ok(millis), "{text}");
        }
    }

    #[test]
    fn bad_durations_are_refused_with_the_value_named() {
        for (text, needle) in [
            ("", "does not start with P"),
            ("30m", "does not start with P"),
            ("P", "no days"),
            ("PT", "T with nothing"),
            ("-PT1H", "negative"),
            ("PT-1H", "negative"),
            ("P1Y", "other than days"),
            ("P1W", "other than days"),
            ("PT1M1H", "out of order"),
            ("PT1X", "other than H, M or S"),
            ("PT1H1H", "out of order"),
            ("PT5", "without a unit"),
            ("PTH", "bad number"),
            ("PT1.5H", "bad number"),
            ("PT.5S", "bad seconds"),
            ("P99999999999999999D", "too long"),
        ] {
            let message = parse_duration(text).unwrap_err();
            assert!(
                message.contains(needle) && message.contains(&format!("'{text}'")),
                "{text}: {message}"
            );
        }
    }
}
