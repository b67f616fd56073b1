//! A reader following the docker CLI's `--mount` parsing: one record of
//! Go's `encoding/csv` with default settings (comma separator, no comment
//! character, no lazy quotes, leading spaces kept), then each field split
//! at its first `=` into a lower-cased key and a value.

/// Reads one CSV record (the input holds no newline).
pub(crate) fn read_record(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut rest = line;
    loop {
        if let Some(after) = rest.strip_prefix('"') {
            // Quoted field: `""` is a quote; the closing quote must be
            // followed by a comma or the end of the line.
            let mut field = String::new();
            let mut s = after;
            loop {
                let Some(i) = s.find('"') else {
                    return Err("extraneous or missing \" in quoted-field".into());
                };
                field.push_str(&s[..i]);
                s = &s[i + 1..];
                if let Some(next) = s.strip_prefix('"') {
                    field.push('"');
                    s = next;
                } else if let Some(next) = s.strip_prefix(',') {
                    fields.push(field);
                    rest = next;
                    break;
                } else if s.is_empty() {
                    fields.push(field);
                    return Ok(fields);
                } else {
                    return Err("extraneous or missing \" in quoted-field".into());
                }
            }
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let field = &rest[..end];
            if field.contains('"') {
                return Err("bare \" in non-quoted-field".into());
            }
            fields.push(field.to_owned());
            if end == rest.len() {
                return Ok(fields);
            }
            rest = &rest[end + 1..];
        }
    }
}

/// Splits each field at its first `=`: `(lower-cased key, value)`.
pub(crate) fn key_values(fields: &[String]) -> Vec<(String, Option<String>)> {
    fields
        .iter()
        .map(|f| match f.split_once('=') {
            Some((k, v)) => (k.to_ascii_lowercase(), Some(v.to_owned())),
            None => (f.to_ascii_lowercase(), None),
        })
        .collect()
}

#[test]
fn reader_follows_go_csv_rules() {
    assert_eq!(read_record("a,b").unwrap(), ["a", "b"]);
    assert_eq!(read_record("a,").unwrap(), ["a", ""]);
    assert_eq!(read_record(r#""a,b","c""d""#).unwrap(), ["a,b", "c\"d"]);
    assert_eq!(read_record(r#"" x",y"#).unwrap(), [" x", "y"]);
    assert!(read_record(r#"a"b"#).is_err());
    assert!(read_record(r#""a"b"#).is_err());
    assert!(read_record(r#""ab"#).is_err());
}
