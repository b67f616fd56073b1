//! The JSON request layer: `{query, operationName, variables, extensions}`.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::classifier::Classifier;
use crate::error::{Error, ErrorKind, echo};
use crate::operation::Classification;

/// A request refused while reading the JSON; the offset is filled in from
/// the JSON reader's position.
enum Problem {
    NotAnObject(&'static str),
    DuplicateKey(String),
    UnknownKey(String),
    WrongType(&'static str, &'static str),
    Persisted(&'static str),
}

impl Problem {
    fn into_kind(self, offset: usize) -> ErrorKind {
        match self {
            Self::NotAnObject(found) => ErrorKind::NotAnObject { offset, found },
            Self::DuplicateKey(key) => ErrorKind::DuplicateKey { key, offset },
            Self::UnknownKey(key) => ErrorKind::UnknownKey { key, offset },
            Self::WrongType(field, expected) => ErrorKind::WrongType {
                field,
                expected,
                offset,
            },
            Self::Persisted(field) => ErrorKind::PersistedQuery { field, offset },
        }
    }
}

/// The fields of a request that matter.
pub(crate) struct Request {
    pub(crate) query: Option<String>,
    pub(crate) operation_name: Option<String>,
}

/// A JSON value seen only for its type (strings are kept).
enum Value {
    Str(String),
    Null,
    Other(&'static str),
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Other("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Value, E> {
        Ok(Value::Other("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Value, E> {
        Ok(Value::Other("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Value, E> {
        Ok(Value::Other("a number"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Value::Other("an object"))
    }
}

impl<'de> de::Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// `extensions`: an object, checked for `persistedQuery`.
struct ExtensionsSeed<'s>(&'s mut Option<Problem>);

impl<'de> DeserializeSeed<'de> for ExtensionsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExtensionsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "persistedQuery" {
                return Err(fail(
                    self.0,
                    Problem::Persisted("extensions.persistedQuery"),
                ));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(fail(
            self.0,
            Problem::WrongType("extensions", "an object or null"),
        ))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(fail(
            self.0,
            Problem::WrongType("extensions", "an object or null"),
        ))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(fail(
            self.0,
            Problem::WrongType("extensions", "an object or null"),
        ))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(fail(
            self.0,
            Problem::WrongType("extensions", "an object or null"),
        ))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(fail(
            self.0,
            Problem::WrongType("extensions", "an object or null"),
        ))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(fail(
            self.0,
            Problem::WrongType("extensions", "an object or null"),
        ))
    }
}

fn fail<E: de::Error>(slot: &mut Option<Problem>, p: Problem) -> E {
    *slot = Some(p);
    E::custom("request refused")
}

/// The body object.
struct RequestSeed<'s>(&'s mut Option<Problem>);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_> {
    type Value = Request;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Request, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_> {
    type Value = Request;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Request, A::Error> {
        let slot = self.0;
        let mut req = Request {
            query: None,
            operation_name: None,
        };
        let mut seen: [bool; 4] = [false; 4];
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let index = match key.as_ref() {
                "query" => 0,
                "operationName" => 1,
                "variables" => 2,
                "extensions" => 3,
                "documentId" => return Err(fail(slot, Problem::Persisted("documentId"))),
                "id" => return Err(fail(slot, Problem::Persisted("id"))),
                other => return Err(fail(slot, Problem::UnknownKey(echo(other)))),
            };
            if std::mem::replace(&mut seen[index], true) {
                return Err(fail(slot, Problem::DuplicateKey(echo(&key))));
            }
            match index {
                0 => match map.next_value::<Value>()? {
                    Value::Str(s) => req.query = Some(s),
                    _ => return Err(fail(slot, Problem::WrongType("query", "a string"))),
                },
                1 => match map.next_value::<Value>()? {
                    Value::Str(s) => req.operation_name = Some(s),
                    Value::Null => {}
                    Value::Other(_) => {
                        return Err(fail(
                            slot,
                            Problem::WrongType("operationName", "a string or null"),
                        ));
                    }
                },
                2 => match map.next_value::<Value>()? {
                    Value::Null | Value::Other("an object") => {}
                    _ => {
                        return Err(fail(
                            slot,
                            Problem::WrongType("variables", "an object or null"),
                        ));
                    }
                },
                _ => map.next_value_seed(ExtensionsSeed(&mut *slot))?,
            }
        }
        Ok(req)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Request, A::Error> {
        Err(fail(self.0, Problem::NotAnObject("an array")))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Request, E> {
        Err(fail(self.0, Problem::NotAnObject("a string")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Request, E> {
        Err(fail(self.0, Problem::NotAnObject("null")))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Request, E> {
        Err(fail(self.0, Problem::NotAnObject("a boolean")))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Request, E> {
        Err(fail(self.0, Problem::NotAnObject("a number")))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Request, E> {
        Err(fail(self.0, Problem::NotAnObject("a number")))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Request, E> {
        Err(fail(self.0, Problem::NotAnObject("a number")))
    }
}

/// The byte offset of a 1-based line and column in `body`.
fn offset_of(body: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    if line > 1 {
        let mut seen = 1;
        for (i, &b) in body.iter().enumerate() {
            if b == b'\n' {
                seen += 1;
                if seen == line {
                    start = i + 1;
                    break;
                }
            }
        }
    }
    (start + column.saturating_sub(1)).min(body.len())
}

/// Refuses JSON nested deeper than `limit`, without recursing.
fn check_json_depth(body: &[u8], limit: usize) -> Result<(), Error> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in body.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Err(Error::at(
                        ErrorKind::JsonTooDeep { offset: i, limit },
                        body,
                        i,
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Reads the request fields from a JSON body.
pub(crate) fn read_json(body: &[u8], max_depth: usize) -> Result<Request, Error> {
    check_json_depth(body, max_depth)?;
    let mut slot = None;
    let mut de = serde_json::Deserializer::from_slice(body);
    let result = RequestSeed(&mut slot)
        .deserialize(&mut de)
        .and_then(|r| de.end().map(|()| r));
    match result {
        Ok(req) => Ok(req),
        Err(e) => {
            let offset = offset_of(body, e.line(), e.column());
            let kind = match slot {
                Some(problem) => problem.into_kind(offset),
                None => ErrorKind::Json {
                    offset,
                    message: e.to_string(),
                },
            };
            Err(Error::at(kind, body, offset))
        }
    }
}

impl Classifier {
    /// Classifies a JSON request body `{query, operationName, variables,
    /// extensions}`.
    ///
    /// Refused: bodies over the size or nesting limits, anything but one
    /// JSON object (arrays are batches), duplicate or unknown keys, a
    /// missing or non-string `query`, a non-string `operationName`,
    /// `variables` that is not an object, and the persisted-query forms
    /// (`extensions.persistedQuery`, `documentId`, `id`) with or without a
    /// query, since a server honouring them may run a stored document.
    pub fn classify_json(&self, body: &[u8]) -> Result<Classification, Error> {
        if body.len() > self.max_request_bytes {
            return Err(Error::new(ErrorKind::RequestTooLarge {
                size: body.len(),
                limit: self.max_request_bytes,
            }));
        }
        let req = read_json(body, self.max_json_depth)?;
        let query = req
            .query
            .ok_or_else(|| Error::new(ErrorKind::MissingQuery))?;
        self.classify_document(&query, req.operation_name.as_deref())
    }
}
