package af

/*
#include "af/af.h"
*/
import "C"

// Operations are recorded as equations when called from a trace function
// (on its goroutine) and evaluated at once otherwise.

// Format applies a Python-style template: "{}" automatic, "{0}"
// positional, "{{" / "}}" escapes. Non-string arguments are stringified as
// JSON ("2.5", "true", "[1,2]"). CodeInvalidArgument for unbalanced
// braces, automatic and manual numbering mixed, a missing argument, or a
// container argument that holds a placeholder.
func (eng *Engine) Format(template string, args ...*Value) (*Value, error) {
	return eng.FormatNamed(template, nil, args...)
}

// FormatNamed is Format with named arguments ("{name}"): named is a dict,
// or nil for none.
func (eng *Engine) FormatNamed(template string, named *Value, args ...*Value) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ps, held, err := acquireValues(args)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	var np *C.af_value_t
	if named != nil {
		if np, err = named.acquire(); err != nil {
			return nil, err
		}
		defer named.release()
	}
	var out *C.af_value_t
	t, tn := cstr(template)
	e := C.af_format(cp, t, tn, cArray(ps), C.size_t(len(ps)), np, &out)
	return eng.takeResult(e, out, nil)
}

// Concat concatenates strings (every argument must be a str).
func (eng *Engine) Concat(args ...*Value) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ps, held, err := acquireValues(args)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	var out *C.af_value_t
	e := C.af_concat(cp, cArray(ps), C.size_t(len(ps)), &out)
	return eng.takeResult(e, out, nil)
}

// Match is string equality: a bool value.
func (eng *Engine) Match(a, b *Value) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ap, err := a.acquire()
	if err != nil {
		return nil, err
	}
	defer a.release()
	bp, err := b.acquire()
	if err != nil {
		return nil, err
	}
	defer b.release()
	var out *C.af_value_t
	e := C.af_match(cp, ap, bp, &out)
	return eng.takeResult(e, out, nil)
}

// StopGradient is the identity on a tree; tangents and cotangents through
// it are zero.
func (eng *Engine) StopGradient(v *Value) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	vp, err := v.acquire()
	if err != nil {
		return nil, err
	}
	defer v.release()
	var out *C.af_value_t
	e := C.af_stop_gradient(cp, vp, &out)
	return eng.takeResult(e, out, nil)
}

// Depends is value, produced only after every dep exists (keeps the deps
// alive through dead-code elimination).
func (eng *Engine) Depends(value *Value, deps ...*Value) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	vp, err := value.acquire()
	if err != nil {
		return nil, err
	}
	defer value.release()
	ps, held, err := acquireValues(deps)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	var out *C.af_value_t
	e := C.af_depends(cp, vp, cArray(ps), C.size_t(len(ps)), &out)
	return eng.takeResult(e, out, nil)
}

// Checkpoint is the identity that marks v as checkpoint key of collection
// (the hook of collect/inject). Never removed by DCE nor merged by CSE.
func (eng *Engine) Checkpoint(v *Value, key, collection string) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	vp, err := v.acquire()
	if err != nil {
		return nil, err
	}
	defer v.release()
	var out *C.af_value_t
	k, kn := cstr(key)
	col, coln := cstr(collection)
	e := C.af_checkpoint(cp, vp, k, kn, col, coln, &out)
	return eng.takeResult(e, out, nil)
}

// --- Tags and fold (only inside a trace function) ---------------------------

// PushTag starts a tag scope: every equation recorded by the innermost
// trace of this thread carries the tag until the matching PopTag (nested
// scopes union). CodeInvalidArgument outside a trace. Prefer WithTag.
func (eng *Engine) PushTag(tag string) error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	t, n := cstr(tag)
	e := C.af_tag_push(cp, t, n)
	return takeError(e)
}

// PopTag ends the innermost tag scope; CodeInvalidArgument without a
// matching PushTag.
func (eng *Engine) PopTag() error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	e := C.af_tag_pop(cp)
	return takeError(e)
}

// WithTag runs fn inside a tag scope (PushTag, fn, PopTag even if fn fails
// or panics). fn's error comes first; a PopTag error is returned otherwise.
func (eng *Engine) WithTag(tag string, fn func() error) (err error) {
	if err := eng.PushTag(tag); err != nil {
		return err
	}
	defer func() {
		if perr := eng.PopTag(); err == nil {
			err = perr
		}
	}()
	return fn()
}

// PushName starts a name scope: what the innermost trace of this thread
// records (or, outside a trace, a lazy context) carries the name in its
// name path ("triage/classify") until the matching PopName.
// CodeInvalidArgument outside a trace on an eager context, for an empty
// name or one holding '/'. Prefer WithName.
func (c *Context) PushName(name string) error {
	cp, err := c.acquire()
	if err != nil {
		return err
	}
	defer c.release()
	s, n := cstr(name)
	e := C.af_name_push(cp, s, n)
	return takeError(e)
}

// PopName ends the innermost name scope; CodeInvalidArgument without a
// matching PushName.
func (c *Context) PopName() error {
	cp, err := c.acquire()
	if err != nil {
		return err
	}
	defer c.release()
	e := C.af_name_pop(cp)
	return takeError(e)
}

// WithName runs fn inside a name scope (popped however fn returns).
func (c *Context) WithName(name string, fn func() error) (err error) {
	if err := c.PushName(name); err != nil {
		return err
	}
	defer func() {
		if perr := c.PopName(); err == nil {
			err = perr
		}
	}()
	return fn()
}

// PushFold starts a fold scope: until PopFold, operations of the innermost
// trace run at trace time and their results become literals. An operation
// whose input is a placeholder then fails with CodeInvalidArgument.
// Prefer Folded.
func (eng *Engine) PushFold() error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	e := C.af_fold_push(cp)
	return takeError(e)
}

// PopFold ends the innermost fold scope.
func (eng *Engine) PopFold() error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	e := C.af_fold_pop(cp)
	return takeError(e)
}

// Folded runs fn inside a fold scope (PushFold, fn, PopFold even if fn
// fails or panics).
func (eng *Engine) Folded(fn func() error) (err error) {
	if err := eng.PushFold(); err != nil {
		return err
	}
	defer func() {
		if perr := eng.PopFold(); err == nil {
			err = perr
		}
	}()
	return fn()
}
