//! `Serialize` and `Deserialize` for [`Value`] (the `serde` feature), with
//! libaf's JSON conventions in any serde format: an int stays an int and a
//! float a float (`2.0` is not `2`), dicts keep their insertion order, and
//! what `af_value_to_json` / `af_value_json_new` refuse is refused here
//! too (NaN and infinities, placeholders, duplicate keys, integers outside
//! i64, nesting deeper than 512).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::value::{Kind, Value};

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fail = |e: crate::Error| ser::Error::custom(e.message);
        match self.kind() {
            Kind::Null => s.serialize_unit(),
            Kind::Bool => s.serialize_bool(self.as_bool().map_err(fail)?),
            Kind::Int => s.serialize_i64(self.as_int().map_err(fail)?),
            Kind::Float => {
                let f = self.as_float().map_err(fail)?;
                if !f.is_finite() {
                    return Err(ser::Error::custom(format!(
                        "cannot serialize the float {f}: JSON has no NaN or infinity"
                    )));
                }
                s.serialize_f64(f)
            }
            Kind::Str => s.serialize_str(self.as_str_ref().map_err(fail)?),
            Kind::List => {
                let items = self.iter().map_err(fail)?;
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&item)?;
                }
                seq.end()
            }
            Kind::Dict => {
                let entries = self.iter_entries().map_err(fail)?;
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, &value)?;
                }
                map.end()
            }
            Kind::Placeholder => Err(ser::Error::custom(
                "cannot serialize a placeholder: its content is unknown while tracing \
                 (use Context::switch / Context::while_loop / Context::scan or a static input)",
            )),
            Kind::Other(k) => Err(ser::Error::custom(format!(
                "cannot serialize a value of kind {k} (unknown to this binding)"
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a libaf value (null, bool, int, float, string, list or string-keyed map)")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::null())
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::null())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::bool(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        Ok(Value::int(i))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        i64::try_from(u)
            .map(Value::int)
            .map_err(|_| E::custom(format!("integer {u} is outside int64")))
    }

    fn visit_i128<E: de::Error>(self, i: i128) -> Result<Value, E> {
        i64::try_from(i)
            .map(Value::int)
            .map_err(|_| E::custom(format!("integer {i} is outside int64")))
    }

    fn visit_u128<E: de::Error>(self, u: u128) -> Result<Value, E> {
        i64::try_from(u)
            .map(Value::int)
            .map_err(|_| E::custom(format!("integer {u} is outside int64")))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        Ok(Value::float(f))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        // Value::list panics beyond libaf's nesting limit: the checked path
        // makes a too-deep document an error instead.
        crate::value::list_checked(&items).map_err(|e| de::Error::custom(e.message))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries: Vec<(String, Value)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            entries.push((key, value));
        }
        // libaf refuses duplicate keys and nesting beyond its limit.
        Value::dict(entries).map_err(|e| de::Error::custom(e.message))
    }
}
