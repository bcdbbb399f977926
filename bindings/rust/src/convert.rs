//! Value equality and conversions from `Value` to Rust primitives (the
//! conversions into `Value` sit next to the constructors in `value.rs`).

use crate::error::{Error, ErrorCode, Result};
use crate::value::{Kind, Value};

/// Structural equality: same kind and same content; dicts compare as maps
/// (insertion order ignored), floats as IEEE numbers (NaN is unequal to
/// itself, hence no `Eq`), an int never equals a float. A placeholder equals
/// only the very same placeholder.
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        if self.as_ptr() == other.as_ptr() {
            return true;
        }
        let kind = self.kind();
        if kind != other.kind() {
            return false;
        }
        match kind {
            Kind::Null => true,
            Kind::Bool => self.as_bool().ok() == other.as_bool().ok(),
            Kind::Int => self.as_int().ok() == other.as_int().ok(),
            Kind::Float => matches!((self.as_float(), other.as_float()), (Ok(a), Ok(b)) if a == b),
            Kind::Str => {
                matches!((self.as_str_ref(), other.as_str_ref()), (Ok(a), Ok(b)) if a == b)
            }
            Kind::List => match (self.items(), other.items()) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            },
            Kind::Dict => match (self.entries(), other.entries()) {
                (Ok(mut a), Ok(mut b)) => {
                    a.sort_by(|x, y| x.0.cmp(&y.0));
                    b.sort_by(|x, y| x.0.cmp(&y.0));
                    a == b
                }
                _ => false,
            },
            _ => false,
        }
    }
}

macro_rules! value_eq {
    ($($t:ty),*) => {$(
        /// Compares with the `Value` this converts to.
        impl PartialEq<$t> for Value {
            fn eq(&self, other: &$t) -> bool {
                *self == Value::from(other.clone())
            }
        }
    )*};
}
value_eq!(&str, String, i64, i32, f64, bool);

macro_rules! try_from_value {
    ($t:ty, $get:ident) => {
        /// `InvalidArgument` naming both kinds if the value is of another kind.
        impl TryFrom<&Value> for $t {
            type Error = Error;
            fn try_from(v: &Value) -> Result<$t> {
                v.$get()
            }
        }
        impl TryFrom<Value> for $t {
            type Error = Error;
            fn try_from(v: Value) -> Result<$t> {
                v.$get()
            }
        }
    };
}
try_from_value!(i64, as_int);
try_from_value!(f64, as_float);
try_from_value!(bool, as_bool);
try_from_value!(String, as_str);

/// `InvalidArgument` if the int does not fit an i32.
impl TryFrom<&Value> for i32 {
    type Error = Error;
    fn try_from(v: &Value) -> Result<i32> {
        let i = v.as_int()?;
        i32::try_from(i).map_err(|_| {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("{i} does not fit an i32"),
            )
        })
    }
}

/// A list's items (`InvalidArgument` for other kinds).
impl TryFrom<&Value> for Vec<Value> {
    type Error = Error;
    fn try_from(v: &Value) -> Result<Vec<Value>> {
        if v.kind() != Kind::List {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("expected a list, found {:?}", v.kind()),
            ));
        }
        v.items()
    }
}
