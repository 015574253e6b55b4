//! The two time arguments of `reset`: an ISO-8601 date-time (`--to-datetime`) and an ISO-8601
//! duration (`--by-duration`), as Kafka's `kafka-consumer-groups` takes them.

use jiff::fmt::temporal::{Pieces, SpanParser};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::SpanRelativeTo;

const DATETIME_FORMS: &str =
    "YYYY-MM-DDTHH:mm:SS[.sss][Z|+HH:mm|-HH:mm] (without a zone: local time), e.g. 2024-05-01T12:00:00Z";

static SPANS: SpanParser = SpanParser::new();

/// Milliseconds since the epoch of an ISO-8601 date-time. Seconds are required, a fraction is
/// optional; without a zone the machine's local time is meant, as in Kafka's tool.
pub fn parse_datetime(text: &str) -> Result<i64, String> {
    parse_datetime_in(text, &TimeZone::system())
}

/// [`parse_datetime`] with `local` as the local time zone.
fn parse_datetime_in(text: &str, local: &TimeZone) -> Result<i64, String> {
    let text = text.trim();
    let bad = || format!("date-time '{text}' is not ISO-8601; expected {DATETIME_FORMS}");
    // ISO-8601 lets the seconds (and the minutes) go; Kafka's tool does not.
    let bytes = text.as_bytes();
    if bytes.len() < 19 || bytes[13] != b':' || bytes[16] != b':' {
        return Err(bad());
    }
    let pieces = Pieces::parse(text).map_err(|_| bad())?;
    let time = pieces.time().ok_or_else(bad)?;
    if pieces.time_zone_annotation().is_some() {
        return Err(bad());
    }
    let naive = pieces.date().to_datetime(time);
    if let Some(offset) = pieces.to_numeric_offset() {
        // ISO-8601 offsets stop short of a day; jiff's reach past it (Temporal's).
        if offset.seconds().abs() >= 86_400 {
            return Err(bad());
        }
        return offset
            .to_timestamp(naive)
            .map(|at| at.as_millisecond())
            .map_err(|_| bad());
    }
    // A time that occurs twice (clocks set back) is taken at its first occurrence.
    let offset = match local.to_ambiguous_timestamp(naive).offset() {
        AmbiguousOffset::Unambiguous { offset } => offset,
        AmbiguousOffset::Fold { before, .. } => before,
        AmbiguousOffset::Gap { .. } => {
            return Err(format!(
                "date-time '{text}' does not exist in the local time zone (a clock change skips it)"
            ))
        }
    };
    offset
        .to_timestamp(naive)
        .map(|at| at.as_millisecond())
        .map_err(|_| bad())
}

/// Milliseconds in an ISO-8601 duration `PnDTnHnMn.nS` (Java's `Duration` form: days, hours,
/// minutes and seconds, a fraction on the seconds only; case does not matter; days are 24
/// hours). Negative durations are refused.
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
    let unsigned = upper.strip_prefix('+').unwrap_or(&upper);
    if !unsigned.starts_with('P') {
        return Err(bad("does not start with P"));
    }
    let span = SPANS
        .parse_span(unsigned)
        .map_err(|err| bad(&format!("is not a duration ({err})")))?;
    if span.get_years() != 0 || span.get_months() != 0 || span.get_weeks() != 0 {
        return Err(bad("has a date part other than days"));
    }
    // jiff takes a fraction on the smallest unit given; Java's Duration only on seconds.
    let fraction_on_seconds = upper
        .split_once(['.', ','])
        .is_none_or(|(_, rest)| rest.trim_start_matches(|c: char| c.is_ascii_digit()) == "S");
    if !fraction_on_seconds {
        return Err(bad("has a fraction on a unit other than seconds"));
    }
    span.to_duration(SpanRelativeTo::days_are_24_hours())
        .ok()
        .and_then(|duration| i64::try_from(duration.as_millis()).ok())
        .ok_or_else(|| bad("is too long"))
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
        let local = jiff::civil::date(2024, 5, 1)
            .at(12, 0, 0, 0)
            .to_zoned_datetime(TimeZone::system())
            .map(|at| at.timestamp().as_millisecond());
        assert_eq!(parse_datetime("2024-05-01T12:00:00").ok(), local.ok());
        assert!(parse_datetime("2024-05-01T12:00:00.123").is_ok());
    }

    #[test]
    fn local_times_a_clock_change_repeats_or_skips() {
        let paris = TimeZone::get("Europe/Paris").expect("the system's zoneinfo");
        // 2024-10-27 03:00 CEST went back to 02:00 CET: 02:30 came first at 00:30 UTC.
        assert_eq!(
            parse_datetime_in("2024-10-27T02:30:00", &paris),
            Ok(1_729_989_000_000)
        );
        // 2024-03-31 02:00 CET went forward to 03:00 CEST: 02:30 never happened.
        let message = parse_datetime_in("2024-03-31T02:30:00", &paris).unwrap_err();
        assert!(
            message.contains("'2024-03-31T02:30:00' does not exist"),
            "{message}"
        );
        assert_eq!(
            parse_datetime_in("2024-05-01T14:00:00", &paris),
            Ok(1_714_564_800_000)
        );
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
            ("P", "is not a duration"),
            ("PT", "is not a duration"),
            ("-PT1H", "negative"),
            ("PT-1H", "negative"),
            ("P1Y", "other than days"),
            ("P1M", "other than days"),
            ("P1W", "other than days"),
            ("PT1M1H", "is not a duration"),
            ("PT1X", "is not a duration"),
            ("PT1H1H", "is not a duration"),
            ("PT5", "is not a duration"),
            ("PTH", "is not a duration"),
            ("PT1.5H", "fraction on a unit other than seconds"),
            ("PT1H0.5M", "fraction on a unit other than seconds"),
            ("PT.5S", "is not a duration"),
            ("1 hour", "does not start with P"),
            ("P99999999999999999D", "is not a duration"),
            ("PT9223372036854775807S", "is not a duration"),
        ] {
            let message = parse_duration(text).unwrap_err();
            assert!(
                message.contains(needle) && message.contains(&format!("'{text}'")),
                "{text}: {message}"
            );
        }
    }
}
