//! A znode's value, and the paths and names offsetkeeper reads back from ZooKeeper: parsing
//! never panics, a value read as an offset is exactly the decimal text, offsets round-trip,
//! and whatever passes the name and path checks cannot leave its folder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offsetkeeper::names::{check_base_path, check_name};
use offsetkeeper::zookeeper::layout::{encode_offset, parse_offset_path, GroupLayout};
use offsetkeeper::Stored;

fuzz_target!(|data: &[u8]| {
    match Stored::parse(data) {
        Stored::Offset(offset) => {
            assert!(offset >= 0);
            let text = std::str::from_utf8(data).expect("an offset is text").trim();
            assert!(text.bytes().all(|b| b.is_ascii_digit()));
            assert_eq!(text.parse::<i64>().ok(), Some(offset));
            assert_eq!(Stored::parse(&encode_offset(offset)), Stored::Offset(offset));
        }
        Stored::Corrupt(raw) => assert_eq!(raw, data),
        Stored::Missing => panic!("parse never says missing"),
    }
    // The report shows at most 32 bytes, escaped (at most 10 characters each, `\u{10ffff}`).
    let shown = Stored::parse(data).to_string();
    assert!(shown.len() <= 32 * 10 + 32, "the report cuts long values: {}", shown.len());

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if check_name("topic", text).is_ok() {
        assert!(!text.is_empty() && text.len() <= 249);
        assert!(text != "." && text != "..");
        assert!(!text.contains('/') && !text.contains('\0'));
    }
    if check_base_path(text).is_ok() {
        assert!(text.starts_with('/') && !text.ends_with('/'));
        assert!(text.split('/').skip(1).all(|s| !s.is_empty() && s != "." && s != ".."));
    }
    if let Some(parsed) = parse_offset_path("/consumers", text) {
        assert!(parsed.partition >= 0);
        let layout = GroupLayout {
            base_path: "/consumers",
            group: &parsed.group,
        };
        let again = layout.offset_path(&parsed.topic, parsed.partition);
        assert_eq!(parse_offset_path("/consumers", &again), Some(parsed));
    }
});
