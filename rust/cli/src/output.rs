//! Rendering of rows as an aligned table, CSV or JSON.

use serde::ser::{Serialize, Serializer};
use serde_json::Value;

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

/// How `describe` prints: as the other commands, or for a Prometheus scraper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DescribeFormat {
    /// aligned columns, as kafka-consumer-groups prints them
    Table,
    /// a header line, then one comma-separated line per row
    Csv,
    /// one JSON document
    Json,
    /// Prometheus text exposition format 0.0.4 (gauges; for node_exporter's textfile collector)
    Prometheus,
}

impl DescribeFormat {
    /// The row format, `None` for Prometheus.
    pub fn rows(self) -> Option<Format> {
        match self {
            DescribeFormat::Table => Some(Format::Table),
            DescribeFormat::Csv => Some(Format::Csv),
            DescribeFormat::Json => Some(Format::Json),
            DescribeFormat::Prometheus => None,
        }
    }
}

/// Rows with named columns.
pub struct Rows {
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<Value>>,
}

impl Rows {
    pub fn new(header: &[&'static str]) -> Rows {
        Rows {
            header: header.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<Value>) {
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

    /// The rows as a JSON array of objects keyed by snake_case column names, in column order.
    pub fn objects(&self) -> Objects<'_> {
        Objects {
            keys: self.header.iter().map(|h| key(h)).collect(),
            rows: &self.rows,
        }
    }

    /// Table, CSV, or the JSON document `json` makes of the rows' objects.
    pub fn render<'a, W: Serialize>(
        &'a self,
        format: Format,
        json: impl FnOnce(Objects<'a>) -> W,
    ) -> String {
        match format {
            Format::Table => self.table(),
            Format::Csv => self.csv(),
            // Strings, integers and string keys: serializing cannot fail.
            Format::Json => serde_json::to_string(&json(self.objects())).unwrap_or_default() + "\n",
        }
    }
}

/// See [`Rows::objects`].
pub struct Objects<'a> {
    keys: Vec<String>,
    rows: &'a [Vec<Value>],
}

impl Serialize for Objects<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            self.rows
                .iter()
                .map(|row| Object(self.keys.iter().zip(row.iter()))),
        )
    }
}

struct Object<I>(I);

impl<'a, I: Iterator<Item = (&'a String, &'a Value)> + Clone> Serialize for Object<I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.clone())
    }
}

fn plain(value: &Value, missing: &str) -> String {
    match value {
        Value::Null => missing.to_string(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Rows {
        let mut rows = Rows::new(&["TOPIC", "PARTITION", "LAG", "STATUS"]);
        rows.push(vec!["orders".into(), 0.into(), Some(5).into(), "ok".into()]);
        rows.push(vec![
            "orders".into(),
            11.into(),
            None::<i64>.into(),
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
    fn json_uses_null_column_order_and_escapes() {
        assert_eq!(
            sample().render(Format::Json, |rows| rows),
            "[{\"topic\":\"orders\",\"partition\":0,\"lag\":5,\"status\":\"ok\"},{\"topic\":\"orders\",\"partition\":11,\"lag\":null,\"status\":\"partition gone\"}]\n"
        );
        let mut odd = Rows::new(&["TOPIC"]);
        odd.push(vec!["a\"b\\c\n\u{1}".into()]);
        assert_eq!(
            odd.render(Format::Json, |rows| rows),
            "[{\"topic\":\"a\\\"b\\\\c\\n\\u0001\"}]\n"
        );
    }
}
