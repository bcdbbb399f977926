package af

/*
#include <stdlib.h>
#include "af/af.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Kind is the kind of a Value (AF_KIND_* in af.h).
type Kind int32

// Value kinds.
const (
	KindInvalid     Kind = -1 // a closed or nil Value
	KindNull        Kind = C.AF_KIND_NULL
	KindBool        Kind = C.AF_KIND_BOOL
	KindInt         Kind = C.AF_KIND_INT
	KindFloat       Kind = C.AF_KIND_FLOAT
	KindStr         Kind = C.AF_KIND_STR
	KindList        Kind = C.AF_KIND_LIST
	KindDict        Kind = C.AF_KIND_DICT
	KindPlaceholder Kind = C.AF_KIND_PLACEHOLDER // a traced leaf, only seen inside a trace
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "bool"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindStr:
		return "str"
	case KindList:
		return "list"
	case KindDict:
		return "dict"
	case KindPlaceholder:
		return "placeholder"
	case KindInvalid:
		return "invalid"
	}
	return "kind(" + itoa(int(k)) + ")"
}

// Value is an immutable, reference-counted tree: null, bool, int (int64),
// float (float64), str (UTF-8), list, dict (string keys, insertion order
// kept). Inside a trace a Value may be, or contain, a placeholder: a traced
// leaf whose content is only known when the program runs.
//
// A Value returned by this package is owned: Close it when done (a
// finalizer frees a forgotten one). The input Values a trace function
// receives are borrowed instead: see TraceFunc.
type Value struct {
	ptr      cPtr[*C.af_value_t] // guarded: freed once closed and no use is in progress
	borrowed bool
	// engines are the lazy engines whose promises v may hold (nil for none):
	// a promise needs its engine to be evaluated and libaf does not keep it
	// alive, so v does (see takeResult). Set before v is shared, never
	// changed after (Close leaves it: methods racing Close read it).
	engines []*Engine
}

// newValue wraps an owned af_value_t*.
func newValue(p *C.af_value_t) *Value {
	v := &Value{}
	v.ptr.init(p)
	runtime.SetFinalizer(v, (*Value).Close)
	return v
}

// borrowValue wraps a value libaf lends a callback for the call only. The
// handle takes a reference of its own (af_value_clone: a reference count),
// so that another goroutine's use racing the callback's return completes on
// a live value rather than on one libaf has freed; endBorrow closes it when
// the callback returns (no finalizer: that always runs). User code cannot
// Close it (see Close).
func borrowValue(p *C.af_value_t) *Value {
	v := &Value{borrowed: true}
	v.ptr.init(C.af_value_clone(p))
	return v
}

// endBorrow ends a borrowed value's life when its callback returns: later
// uses get the closed-handle error, and its reference is dropped now or by
// the last use still in progress (see cPtr).
func (v *Value) endBorrow() { v.ptr.Close(freeValue) }

func freeValue(p *C.af_value_t) { C.af_value_free(p) }

// takeValue finishes a call that produced an owned value in *out.
func takeValue(e *C.af_error_t, out *C.af_value_t) (*Value, error) {
	if err := takeError(e); err != nil {
		return nil, err
	}
	return newValue(out), nil
}

// takeValueWith is takeValue for a value that may hold promises of
// engines, which it then keeps alive.
func takeValueWith(e *C.af_error_t, out *C.af_value_t, engines []*Engine) (*Value, error) {
	v, err := takeValue(e, out)
	if err == nil {
		v.engines = engines
	}
	return v, err
}

// Close releases the Value's reference. Idempotent; a no-op on a borrowed
// trace input.
func (v *Value) Close() {
	if v == nil || v.borrowed {
		return
	}
	// Frees once however many goroutines close at once, and only after the
	// uses in progress (see cPtr).
	if v.ptr.Close(freeValue) {
		runtime.SetFinalizer(v, nil)
	}
}

// Clone returns a new owned handle to the same value (which stays valid
// after a trace function returns, even for a borrowed input).
func (v *Value) Clone() (*Value, error) {
	p, err := v.acquire()
	if err != nil {
		return nil, err
	}
	defer v.release()
	out := newValue(C.af_value_clone(p))
	out.engines = v.engines // the same promises
	return out, nil
}

// acquire holds v open for a C call (see cPtr): its C handle, or the
// closed-handle error for a nil or closed Value. Release it with release.
func (v *Value) acquire() (*C.af_value_t, error) {
	if v != nil {
		if p, ok := v.ptr.Acquire(); ok {
			return p, nil
		}
	}
	return nil, errClosed("value")
}

// release ends a use begun by a successful acquire.
func (v *Value) release() { v.ptr.Release(freeValue) }

// acquireValues holds every value of vs open for a C call and returns their
// C handles (nil for an empty slice) and the values held, to be released
// with releaseValues(held): a copy of vs, so that a caller changing vs
// meanwhile cannot make it release other values. On error none is held.
func acquireValues(vs []*Value) (ps []*C.af_value_t, held []*Value, err error) {
	if len(vs) == 0 {
		return nil, nil, nil
	}
	held = append([]*Value(nil), vs...)
	ps = make([]*C.af_value_t, len(held))
	for i, v := range held {
		if ps[i], err = v.acquire(); err != nil {
			releaseValues(held[:i])
			return nil, nil, err
		}
	}
	return ps, held, nil
}

// releaseValues releases the values acquireValues held.
func releaseValues(held []*Value) {
	for _, v := range held {
		v.release()
	}
}

// cArray returns a pointer to the first handle (NULL when empty). The
// slice holds C pointers only, so cgo allows passing it.
func cArray(ps []*C.af_value_t) **C.af_value_t {
	if len(ps) == 0 {
		return nil
	}
	return &ps[0]
}

// --- Constructors -----------------------------------------------------------
//
// Values belong to no context. The package-level constructors (NullValue,
// StrValue, ...: af_value_<kind>_new) need no Engine, e.g. in a host
// function. The Engine methods (Null, Str, ...) are the same values made
// through the older C forms that take a context (af_value_<kind>(ctx, ...),
// which libaf ignores); they also fail with the closed error on a closed
// Engine, as any other use of it does. Each pair shares one function below:
// ctx == nil picks the context-free form.

// withEngine runs make with eng's context while eng is in use.
func withEngine(eng *Engine, make func(ctx *C.af_context_t) (*Value, error)) (*Value, error) {
	ctx, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	return make(ctx)
}

func jsonValue(ctx *C.af_context_t, json string) (*Value, error) {
	var out *C.af_value_t
	s, n := cstr(json)
	if ctx == nil {
		return takeValue(C.af_value_json_new(s, n, &out), out)
	}
	return takeValue(C.af_value_from_json(ctx, s, n, &out), out)
}

func nullValue(ctx *C.af_context_t) (*Value, error) {
	var out *C.af_value_t
	if ctx == nil {
		return takeValue(C.af_value_null_new(&out), out)
	}
	return takeValue(C.af_value_null(ctx, &out), out)
}

func boolValue(ctx *C.af_context_t, b bool) (*Value, error) {
	var i C.int32_t
	if b {
		i = 1
	}
	var out *C.af_value_t
	if ctx == nil {
		return takeValue(C.af_value_bool_new(i, &out), out)
	}
	return takeValue(C.af_value_bool(ctx, i, &out), out)
}

func intValue(ctx *C.af_context_t, i int64) (*Value, error) {
	var out *C.af_value_t
	if ctx == nil {
		return takeValue(C.af_value_int_new(C.int64_t(i), &out), out)
	}
	return takeValue(C.af_value_int(ctx, C.int64_t(i), &out), out)
}

func floatValue(ctx *C.af_context_t, f float64) (*Value, error) {
	var out *C.af_value_t
	if ctx == nil {
		return takeValue(C.af_value_float_new(C.double(f), &out), out)
	}
	return takeValue(C.af_value_float(ctx, C.double(f), &out), out)
}

func strValue(ctx *C.af_context_t, s string) (*Value, error) {
	var out *C.af_value_t
	p, n := cstr(s)
	if ctx == nil {
		return takeValue(C.af_value_str_new(p, n, &out), out)
	}
	return takeValue(C.af_value_str(ctx, p, n, &out), out)
}

func listValue(ctx *C.af_context_t, items []*Value) (*Value, error) {
	ps, held, err := acquireValues(items)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	var out *C.af_value_t
	var e *C.af_error_t
	if ctx == nil {
		e = C.af_value_list_new(cArray(ps), C.size_t(len(ps)), &out)
	} else {
		e = C.af_value_list(ctx, cArray(ps), C.size_t(len(ps)), &out)
	}
	return takeValueWith(e, out, enginesOf(nil, held))
}

func dictValue(ctx *C.af_context_t, keys []string, values []*Value) (*Value, error) {
	if len(keys) != len(values) {
		return nil, &Error{Message: "dict: " + itoa(len(keys)) + " keys but " + itoa(len(values)) + " values", code: CodeInvalidArgument}
	}
	ps, held, err := acquireValues(values)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	n := len(keys)
	var kptr **C.char
	var klen *C.size_t
	if n > 0 {
		// The key pointers must live in C memory (a Go array of pointers into
		// Go memory is not allowed to cross into C), so keys are copied into
		// one C block: [n]*char, [n]size_t, then the key bytes.
		total := 0
		for _, k := range keys {
			total += len(k)
		}
		ptrSize := unsafe.Sizeof((*C.char)(nil))
		lenSize := unsafe.Sizeof(C.size_t(0))
		block := C.malloc(C.size_t(uintptr(n)*(ptrSize+lenSize) + uintptr(total) + 1))
		if block == nil {
			return nil, &Error{Message: "dict: out of memory copying keys", code: CodeOutOfMemory}
		}
		defer C.free(block)
		kptrs := unsafe.Slice((**C.char)(block), n)
		klens := unsafe.Slice((*C.size_t)(unsafe.Add(block, uintptr(n)*ptrSize)), n)
		bytes := unsafe.Slice((*byte)(unsafe.Add(block, uintptr(n)*(ptrSize+lenSize))), total+1)
		off := 0
		for i, k := range keys {
			copy(bytes[off:], k)
			kptrs[i] = (*C.char)(unsafe.Pointer(&bytes[off]))
			klens[i] = C.size_t(len(k))
			off += len(k)
		}
		kptr, klen = &kptrs[0], &klens[0]
	}
	var out *C.af_value_t
	var e *C.af_error_t
	if ctx == nil {
		e = C.af_value_dict_new(kptr, klen, cArray(ps), C.size_t(n), &out)
	} else {
		e = C.af_value_dict(ctx, kptr, klen, cArray(ps), C.size_t(n), &out)
	}
	return takeValueWith(e, out, enginesOf(nil, held))
}

// JSONValue parses exact JSON: integers stay int, numbers with '.' or an
// exponent stay float. CodeInvalidArgument for malformed JSON, duplicate
// keys or integers outside int64.
func JSONValue(json string) (*Value, error) { return jsonValue(nil, json) }

// NullValue makes a null value.
func NullValue() (*Value, error) { return nullValue(nil) }

// BoolValue makes a bool value.
func BoolValue(b bool) (*Value, error) { return boolValue(nil, b) }

// IntValue makes an int value.
func IntValue(i int64) (*Value, error) { return intValue(nil, i) }

// FloatValue makes a float value (its JSON keeps a '.', "2.0").
func FloatValue(f float64) (*Value, error) { return floatValue(nil, f) }

// StrValue makes a str value; CodeInvalidArgument if s is not valid UTF-8.
func StrValue(s string) (*Value, error) { return strValue(nil, s) }

// ListValue makes a list of items (the list takes its own references; the
// caller still owns and should Close the items).
func ListValue(items ...*Value) (*Value, error) { return listValue(nil, items) }

// DictValue makes a dict with keys[i] -> values[i], in that order.
// CodeInvalidArgument on a duplicate key or when the lengths differ.
func DictValue(keys []string, values []*Value) (*Value, error) { return dictValue(nil, keys, values) }

// FromJSON is JSONValue on an open Engine.
func (eng *Engine) FromJSON(json string) (*Value, error) {
	return withEngine(eng, func(ctx *C.af_context_t) (*Value, error) { return jsonValue(ctx, json) })
}

// Null is NullValue on an open Engine.
func (eng *Engine) Null() (*Value, error) {
	return withEngine(eng, func(ctx *C.af_context_t) (*Value, error) { return nullValue(ctx) })
}

// Bool is BoolValue on an open Engine.
func (eng *Engine) Bool(b bool) (*Value, error) {
	return withEngine(eng, func(ctx *C.af_context_t) (*Value, error) { return boolValue(ctx, b) })
}

// Int is IntValue on an open Engine.
func (eng *Engine) Int(i int64) (*Value, error) {
	return withEngine(eng, func(ctx *C.af_context_t) (*Value, error) { return intValue(ctx, i) })
}

// Float is FloatValue on an open Engine.
func (eng *Engine) Float(f float64) (*Value, error) {
	return withEngine(eng, func(ctx *C.af_context_t) (*Value, error) { return floatValue(ctx, f) })
}

// Str is StrValue on an open Engine.
func (eng *Engine) Str(s string) (*Value, error) {
	return withEngine(eng, func(ctx *C.af_context_t) (*Value, error) { return strValue(ctx, s) })
}

// List is ListValue on an open Engine.
func (eng *Engine) List(items ...*Value) (*Value, error) {
	return withEngine(eng, func(ctx *C.af_context_t) (*Value, error) { return listValue(ctx, items) })
}

// Dict is DictValue on an open Engine.
func (eng *Engine) Dict(keys []string, values []*Value) (*Value, error) {
	return withEngine(eng, func(ctx *C.af_context_t) (*Value, error) { return dictValue(ctx, keys, values) })
}

// --- Accessors --------------------------------------------------------------

// Kind is the kind of v (KindInvalid for a nil or closed Value). It never
// reads a placeholder's content.
func (v *Value) Kind() Kind {
	p, err := v.acquire()
	if err != nil {
		return KindInvalid
	}
	defer v.release()
	k := Kind(C.af_value_kind(p))
	return k
}

// Len is the number of items of a list or dict; CodeInvalidArgument for
// other kinds.
func (v *Value) Len() (int, error) {
	p, err := v.acquire()
	if err != nil {
		return 0, err
	}
	defer v.release()
	return valueLen(p)
}

// valueLen is Len of a held value.
func valueLen(p *C.af_value_t) (int, error) {
	var n C.size_t
	if err := takeError(C.af_value_len(p, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Index is item i of a list, or the value of the i-th entry of a dict
// (insertion order).
func (v *Value) Index(i int) (*Value, error) {
	p, err := v.acquire()
	if err != nil {
		return nil, err
	}
	defer v.release()
	if i < 0 {
		return nil, &Error{Message: "index " + itoa(i) + " is negative", code: CodeInvalidArgument}
	}
	var out *C.af_value_t
	e := C.af_value_index(p, C.size_t(i), &out)
	return takeValueWith(e, out, v.engines)
}

// Key is the value under key in a dict; CodeNotFound if absent.
func (v *Value) Key(key string) (*Value, error) {
	p, err := v.acquire()
	if err != nil {
		return nil, err
	}
	defer v.release()
	var out *C.af_value_t
	s, n := cstr(key)
	e := C.af_value_key(p, s, n, &out)
	return takeValueWith(e, out, v.engines)
}

// KeyAt is the i-th key of a dict (insertion order).
func (v *Value) KeyAt(i int) (string, error) {
	p, err := v.acquire()
	if err != nil {
		return "", err
	}
	defer v.release()
	return valueKeyAt(p, i)
}

// valueKeyAt is KeyAt of a held value.
func valueKeyAt(p *C.af_value_t, i int) (string, error) {
	if i < 0 {
		return "", &Error{Message: "index " + itoa(i) + " is negative", code: CodeInvalidArgument}
	}
	var s *C.char
	var n C.size_t
	if err := takeError(C.af_value_key_at(p, C.size_t(i), &s, &n)); err != nil {
		return "", err
	}
	return goString(s, n), nil // copied while the value is held: the bytes are borrowed
}

// Keys are the keys of a dict in insertion order.
func (v *Value) Keys() ([]string, error) {
	p, err := v.acquire() // held across every read below
	if err != nil {
		return nil, err
	}
	defer v.release()
	n, err := valueLen(p)
	if err != nil {
		return nil, err
	}
	if k := Kind(C.af_value_kind(p)); k != KindDict {
		return nil, &Error{Message: "keys: expected a dict, found " + k.String(), code: CodeInvalidArgument}
	}
	keys := make([]string, n)
	for i := range keys {
		if keys[i], err = valueKeyAt(p, i); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// AsString is the content of a str (copied into Go memory).
func (v *Value) AsString() (string, error) {
	p, err := v.acquire()
	if err != nil {
		return "", err
	}
	defer v.release()
	var s *C.char
	var n C.size_t
	e := C.af_value_get_str(p, &s, &n)
	if err := takeError(e); err != nil {
		return "", err
	}
	str := goString(s, n)
	return str, nil
}

// AsInt is the content of an int.
func (v *Value) AsInt() (int64, error) {
	p, err := v.acquire()
	if err != nil {
		return 0, err
	}
	defer v.release()
	var out C.int64_t
	e := C.af_value_get_int(p, &out)
	if err := takeError(e); err != nil {
		return 0, err
	}
	return int64(out), nil
}

// AsFloat is the content of a float.
func (v *Value) AsFloat() (float64, error) {
	p, err := v.acquire()
	if err != nil {
		return 0, err
	}
	defer v.release()
	var out C.double
	e := C.af_value_get_float(p, &out)
	if err := takeError(e); err != nil {
		return 0, err
	}
	return float64(out), nil
}

// AsBool is the content of a bool.
func (v *Value) AsBool() (bool, error) {
	p, err := v.acquire()
	if err != nil {
		return false, err
	}
	defer v.release()
	var out C.int32_t
	e := C.af_value_get_bool(p, &out)
	if err := takeError(e); err != nil {
		return false, err
	}
	return out != 0, nil
}

// JSON is the compact JSON of v; floats use the shortest round-trip form
// and keep a '.' ("2.0"). CodeInvalidArgument for NaN, infinities and
// placeholders.
func (v *Value) JSON() (string, error) {
	p, err := v.acquire()
	if err != nil {
		return "", err
	}
	defer v.release()
	return valueJSON(p)
}

// valueJSON is JSON of a held value.
func valueJSON(p *C.af_value_t) (string, error) {
	var b C.af_bytes_t
	if err := takeError(C.af_value_to_json(p, &b)); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// String is the JSON of v, or a description when v has none (placeholder,
// closed value), for fmt and debugging.
func (v *Value) String() string {
	p, err := v.acquire() // held across both reads: one open value
	if err != nil {
		return "<af.Value closed>"
	}
	defer v.release()
	s, err := valueJSON(p)
	if err != nil {
		return "<af.Value " + Kind(C.af_value_kind(p)).String() + ">"
	}
	return s
}
