//! Rendering of rows as an aligned table, CSV or JSON.

/// How `describe` and `list-groups` print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// aligned columns, as kafka-consumer-groups prints them
    Table,
    /// a header line, then one comma-separated line per row
    Csv,
    /// one JSON document
    Json,
}

/// A JSON value, enough for the CLI's output.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Number(i64),
    Text(String),
}

impl From<Option<i64>> for Json {
    fn from(value: Option<i64>) -> Json {
        value.map_or(Json::Null, Json::Number)
    }
}

impl From<&str> for Json {
    fn from(value: &str) -> Json {
        Json::Text(value.to_string())
    }
}

/// Rows with named columns.
pub struct Rows {
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<Json>>,
}

impl Rows {
    pub fn new(header: &[&'static str]) -> Rows {
        Rows {
            header: header.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<Json>) {
        self.rows.push(row);
    }

    /// Left-aligned columns two spaces apart; `-` for a missing value.
    pub fn table(&self) -> String {
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| row.iter().map(|v| plain(v, "-")).collect())
            .collect();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.len()).collect();
        for row in &cells {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let header: Vec<String> = self.header.iter().map(|h| h.to_string()).collect();
        std::iter::once(&header)
            .chain(&cells)
            .map(|row| {
                let line: Vec<String> = row
                    .iter()
                    .zip(&widths)
                    .map(|(cell, width)| format!("{cell:<width$}"))
                    .collect();
                line.join("  ").trim_end().to_string() + "\n"
            })
            .collect()
    }

    /// A header of snake_case column names, then the rows; empty cells for missing values.
    pub fn csv(&self) -> String {
        let header: Vec<String> = self.header.iter().map(|h| key(h)).collect();
        std::iter::once(header.join(","))
            .chain(self.rows.iter().map(|row| {
                row.iter()
                    .map(|v| csv_cell(&plain(v, "")))
                    .collect::<Vec<_>>()
                    .join(",")
            }))
            .map(|line| line + "\n")
            .collect()
    }

    /// A JSON array of objects keyed by snake_case column names.
    pub fn json_array(&self) -> String {
        let keys: Vec<String> = self.header.iter().map(|h| key(h)).collect();
        let objects: Vec<String> = self
            .rows
            .iter()
            .map(|row| {
                let fields: Vec<String> = keys
                    .iter()
                    .zip(row)
                    .map(|(key, value)| format!("{}:{}", json_string(key), json_value(value)))
                    .collect();
                format!("{{{}}}", fields.join(","))
            })
            .collect();
        format!("[{}]", objects.join(","))
    }

    pub fn render(&self, format: Format, json_wrapper: impl FnOnce(String) -> String) -> String {
        match format {
            Format::Table => self.table(),
            Format::Csv => self.csv(),
            Format::Json => json_wrapper(self.json_array()) + "\n",
        }
    }
}

fn plain(value: &Json, missing: &str) -> String {
    match value {
        Json::Null => missing.to_string(),
        Json::Number(n) => n.to_string(),
        Json::Text(text) => text.clone(),
    }
}

/// `LOG-END-OFFSET` becomes `log_end_offset`.
fn key(header: &str) -> String {
    header.to_ascii_lowercase().replace('-', "_")
}

fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

pub fn json_value(value: &Json) -> String {
    match value {
        Json::Null => "null".to_string(),
        Json::Number(n) => n.to_string(),
        Json::Text(text) => json_string(text),
    }
}

pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Rows {
        let mut rows = Rows::new(&["TOPIC", "PARTITION", "LAG", "STATUS"]);
        rows.push(vec![
            "orders".into(),
            Json::Number(0),
            Some(5).into(),
            "ok".into(),
        ]);
        rows.push(vec![
            "orders".into(),
            Json::Number(11),
            None.into(),
            "partition gone".into(),
        ]);
        rows
    }

    #[test]
    fn tables_align_columns_and_show_dashes() {
        assert_eq!(
            sample().table(),
            "TOPIC   PARTITION  LAG  STATUS\n\
             orders  0          5    ok\n\
             orders  11         -    partition gone\n"
        );
    }

    #[test]
    fn csv_has_snake_case_header_and_empty_cells() {
        assert_eq!(
            sample().csv(),
            "topic,partition,lag,status\norders,0,5,ok\norders,11,,partition gone\n"
        );
        assert_eq!(csv_cell("a,\"b\""), "\"a,\"\"b\"\"\"");
    }

    #[test]
    fn json_uses_null_and_escapes() {
        assert_eq!(
            sample().json_array(),
            r#"[{"topic":"orders","partition":0,"lag":5,"status":"ok"},{"topic":"orders","partition":11,"lag":null,"status":"partition gone"}]"#
        );
        assert_eq!(json_string("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
    }
}
