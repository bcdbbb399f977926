package af

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// ValueOf converts a Go value into a Value:
//
//   - nil -> null; bool; every int and uint kind -> int (a uint64 above
//     math.MaxInt64 is CodeInvalidArgument); float32, float64 -> float;
//     string -> str;
//   - *Value -> a new handle to the same value (the caller keeps its own);
//   - slices and arrays -> list (a []byte too: use string(b) for text);
//   - maps with string keys -> dict, keys sorted (a Go map has no order);
//   - anything else (structs, pointers, types with MarshalJSON) through
//     encoding/json, so struct tags apply; a value json.Marshal rejects is
//     CodeInvalidArgument.
func (eng *Engine) ValueOf(x any) (*Value, error) {
	switch v := x.(type) {
	case nil:
		return eng.Null()
	case *Value:
		return v.Clone()
	case bool:
		return eng.Bool(v)
	case string:
		return eng.Str(v)
	case float64:
		return eng.Float(v)
	case float32:
		return eng.Float(float64(v))
	case json.Marshaler:
		return eng.valueOfJSON(x)
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return eng.Int(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > 1<<63-1 {
			return nil, &Error{Message: fmt.Sprintf("ValueOf: %d does not fit an int64", u), code: CodeInvalidArgument}
		}
		return eng.Int(int64(u))
	case reflect.Float32, reflect.Float64:
		return eng.Float(rv.Float())
	case reflect.Bool:
		return eng.Bool(rv.Bool())
	case reflect.String:
		return eng.Str(rv.String())
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return eng.List()
		}
		items := make([]*Value, 0, rv.Len())
		defer func() { closeAll(items) }()
		for i := 0; i < rv.Len(); i++ {
			item, err := eng.ValueOf(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			items = append(items, item)
		}
		return eng.List(items...)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, &Error{Message: "ValueOf: a map needs string keys, found " + rv.Type().Key().String(), code: CodeInvalidArgument}
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		values := make([]*Value, 0, len(keys))
		defer func() { closeAll(values) }()
		for _, k := range keys {
			item, err := eng.ValueOf(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface())
			if err != nil {
				return nil, err
			}
			values = append(values, item)
		}
		return eng.Dict(keys, values)
	}
	return eng.valueOfJSON(x)
}

func (eng *Engine) valueOfJSON(x any) (*Value, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("ValueOf(%T): %v", x, err), code: CodeInvalidArgument, cause: err}
	}
	return eng.FromJSON(string(b))
}

// closeAll closes the intermediate values a conversion made.
func closeAll(vs []*Value) {
	for _, v := range vs {
		v.Close()
	}
}

// MarshalJSON makes a *Value usable inside json.Marshal: its exact JSON
// (an error for a placeholder or NaN).
func (v *Value) MarshalJSON() ([]byte, error) {
	s, err := v.JSON()
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// Decode stores v into the Go value dst points to, as json.Unmarshal of v's
// JSON would (struct tags apply). CodeInvalidArgument if they do not fit.
func (v *Value) Decode(dst any) error {
	s, err := v.JSON()
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(s), dst); err != nil {
		return &Error{Message: fmt.Sprintf("Decode into %T: %v", dst, err), code: CodeInvalidArgument, cause: err}
	}
	return nil
}
