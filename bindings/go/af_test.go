package af_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// --- helpers ------------------------------------------------------------------

func newCtx(t *testing.T) *af.Context {
	t.Helper()
	ctx, err := af.NewContext()
	if err != nil {
		t.Fatalf("NewContext: %v", err)
	}
	t.Cleanup(ctx.Close)
	return ctx
}

// must(f())(t) returns f's value, failing the test if f returned an error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// wantCode asserts that err holds an *af.Error (errors.As: the outermost
// one) with the given code, and returns it.
func wantCode(t *testing.T, err error, code af.Code) *af.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want error with code %d (%s), got nil", code, af.CodeName(code))
	}
	var ae *af.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want *af.Error with code %d, got %T: %v", code, err, err)
	}
	if ae.Code() != code {
		t.Fatalf("want code %d (%s), got %d: %v", code, af.CodeName(code), ae.Code(), err)
	}
	return ae
}

// hello(x) = concat(format("Hello, {}!", x), "?")
func hello(ctx *af.Context, in []*af.Value) (*af.Value, error) {
	greeting, err := ctx.Format("Hello, {}!", in[0])
	if err != nil {
		return nil, err
	}
	defer greeting.Close()
	q, err := ctx.Str("?")
	if err != nil {
		return nil, err
	}
	defer q.Close()
	return ctx.Concat(greeting, q)
}

func traceHello(t *testing.T, ctx *af.Context) *af.IR {
	t.Helper()
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	ir := must(af.Trace(ctx, hello, x))(t)
	t.Cleanup(ir.Close)
	return ir
}

// --- 1. trace and call ----------------------------------------------------------

func TestTraceHelloAndCall(t *testing.T) {
	ctx := newCtx(t)
	ir := traceHello(t, ctx)
	if got := ir.InputCount(); got != 1 {
		t.Errorf("InputCount = %d, want 1", got)
	}
	world := must(ctx.Str("World"))(t)
	defer world.Close()
	out := must(ir.Call(ctx, world))(t)
	defer out.Close()
	if k := out.Kind(); k != af.KindStr {
		t.Fatalf("output kind = %v, want str", k)
	}
	if got := must(out.AsString())(t); got != "Hello, World!?" {
		t.Fatalf("hello(World) = %q, want %q", got, "Hello, World!?")
	}
	// The IR can be called again, with non-ASCII text.
	other := must(ctx.Str("wörld ✓"))(t)
	defer other.Close()
	out2 := must(ir.Call(ctx, other))(t)
	defer out2.Close()
	if got := must(out2.AsString())(t); got != "Hello, wörld ✓!?" {
		t.Fatalf("hello(wörld ✓) = %q", got)
	}
	if af.IsTracing() {
		t.Fatal("IsTracing() is true outside a trace")
	}
}

// The trace function sees borrowed placeholder inputs and IsTracing; the
// caller keeps its own handle to the value it returned.
func TestTraceFunctionSeesPlaceholders(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	var kind af.Kind
	var tracing bool
	var kept, result *af.Value
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		kind, tracing = in[0].Kind(), af.IsTracing()
		kept = in[0]
		in[0].Close() // a no-op on borrowed inputs
		var err error
		result, err = ctx.Format("<{}>", in[0])
		return result, err
	}, x))(t)
	defer ir.Close()
	// The caller keeps its own handle to the returned value: still valid
	// (a placeholder), and closing it does not affect the IR.
	if k := result.Kind(); k != af.KindPlaceholder {
		t.Errorf("returned value after the trace: kind %v, want placeholder", k)
	}
	result.Close()
	if kind != af.KindPlaceholder {
		t.Errorf("input kind inside trace = %v, want placeholder", kind)
	}
	if !tracing {
		t.Error("IsTracing() was false inside the trace function")
	}
	// A borrowed input used after the trace function returned is an error,
	// not a crash.
	if _, err := kept.JSON(); err == nil {
		t.Error("borrowed input still usable after the trace function returned")
	} else {
		wantCode(t, err, af.CodeInvalidArgument)
	}
	y := must(ctx.Str("y"))(t)
	defer y.Close()
	out := must(ir.Call(ctx, y))(t)
	defer out.Close()
	if got := must(out.AsString())(t); got != "<y>" {
		t.Fatalf("got %q, want <y>", got)
	}
}

// --- 2. bad templates -----------------------------------------------------------

func TestBadTemplateInTrace(t *testing.T) {
	for _, tmpl := range []string{"Hello, {", "{} {0}", "}"} {
		t.Run(tmpl, func(t *testing.T) {
			ctx := newCtx(t)
			x := must(ctx.Str("x"))(t)
			defer x.Close()
			var inner error
			ir, err := af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
				v, err := ctx.Format(tmpl, in[0], in[0])
				inner = err
				return v, err
			}, x)
			if ir != nil {
				ir.Close()
				t.Fatalf("template %q traced without error", tmpl)
			}
			wantCode(t, inner, af.CodeInvalidArgument) // the operation itself
			wantCode(t, err, af.CodeInvalidArgument)   // what Trace returns
			if !errors.Is(err, inner) {
				t.Errorf("Trace's error is not the operation's error: %v", err)
			}
			if ae := wantCode(t, err, af.CodeInvalidArgument); strings.Count(err.Error(), ae.Message) != 1 {
				t.Errorf("Error() should hold the message once: %q", err.Error())
			}
		})
	}
}

// A trace function that wraps an operation's error fails the trace with a
// CALLBACK error whose cause keeps the operation's code.
func TestWrappedOperationErrorInTrace(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	_, err := af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		v, err := ctx.Format("{", in[0])
		if err != nil {
			return nil, fmt.Errorf("greeting: %w", err)
		}
		return v, nil
	}, x)
	ae := wantCode(t, err, af.CodeCallback)
	cause, ok := ae.Unwrap().(*af.Error)
	if !ok || cause.Code() != af.CodeInvalidArgument || !strings.HasPrefix(cause.Message, "greeting: ") {
		t.Fatalf("cause = %#v", ae.Unwrap())
	}
	var inner *af.Error
	if !errors.As(cause.Unwrap(), &inner) || inner.Code() != af.CodeInvalidArgument {
		t.Errorf("the original Go error chain is lost: %v", cause.Unwrap())
	}
}

// The same templates fail outside a trace too (eager evaluation).
func TestBadTemplateEager(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	for _, tmpl := range []string{"Hello, {", "{} {0}"} {
		v, err := ctx.Format(tmpl, x, x)
		if v != nil {
			v.Close()
		}
		wantCode(t, err, af.CodeInvalidArgument)
	}
	ok := must(ctx.Format("{0}+{0} {{}}", x))(t)
	defer ok.Close()
	if got := must(ok.AsString())(t); got != "x+x {}" {
		t.Fatalf("got %q, want %q", got, "x+x {}")
	}
}

// --- 3. wrong input kind ------------------------------------------------------

func TestCallWrongInputKind(t *testing.T) {
	ctx := newCtx(t)
	ir := traceHello(t, ctx)
	three := must(ctx.Int(3))(t)
	defer three.Close()
	out, err := ir.Call(ctx, three)
	if out != nil {
		out.Close()
	}
	ae := wantCode(t, err, af.CodeInvalidArgument)
	if !strings.Contains(ae.Message, "str") || !strings.Contains(ae.Message, "int") {
		t.Errorf("message should name the expected and found kinds: %q", ae.Message)
	}
	// Wrong number of inputs.
	out, err = ir.Call(ctx)
	if out != nil {
		out.Close()
	}
	wantCode(t, err, af.CodeInvalidArgument)
}

// --- 4. values and JSON -------------------------------------------------------

func TestJSONRoundTrip(t *testing.T) {
	ctx := newCtx(t)
	for _, js := range []string{
		`2`, `2.0`, `-7`, `1.5`, `"hi"`, `true`, `null`, `[]`, `{}`,
		`[1,2.0,"x",false,null]`,
		`{"b":2,"a":2.0,"l":[1,{"z":null}]}`,
	} {
		v := must(ctx.FromJSON(js))(t)
		if got := must(v.JSON())(t); got != js {
			t.Errorf("round trip of %s gave %s", js, got)
		}
		v.Close()
	}

	two := must(ctx.FromJSON(`2`))(t)
	defer two.Close()
	twoF := must(ctx.FromJSON(`2.0`))(t)
	defer twoF.Close()
	if two.Kind() != af.KindInt || twoF.Kind() != af.KindFloat {
		t.Fatalf("kinds: 2 -> %v, 2.0 -> %v", two.Kind(), twoF.Kind())
	}
	if i := must(two.AsInt())(t); i != 2 {
		t.Errorf("AsInt = %d", i)
	}
	if f := must(twoF.AsFloat())(t); f != 2.0 {
		t.Errorf("AsFloat = %v", f)
	}
	_, err := two.AsFloat()
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = twoF.AsInt()
	wantCode(t, err, af.CodeInvalidArgument)

	// Constructors keep int and float apart too.
	fi := must(ctx.Float(2))(t)
	defer fi.Close()
	if got := must(fi.JSON())(t); got != "2.0" {
		t.Errorf("Float(2).JSON() = %s, want 2.0", got)
	}
	ii := must(ctx.Int(2))(t)
	defer ii.Close()
	if got := must(ii.JSON())(t); got != "2" {
		t.Errorf("Int(2).JSON() = %s, want 2", got)
	}

	// Malformed JSON and duplicate keys.
	for _, bad := range []string{`{`, `[1,]`, `{"a":1,"a":2}`, `99999999999999999999`} {
		v, err := ctx.FromJSON(bad)
		if v != nil {
			v.Close()
		}
		wantCode(t, err, af.CodeInvalidArgument)
	}
}

func TestListDictAccess(t *testing.T) {
	ctx := newCtx(t)
	d := must(ctx.FromJSON(`{"name":"Ada","age":36,"tags":["x","y"],"ok":true,"none":null}`))(t)
	defer d.Close()
	if d.Kind() != af.KindDict {
		t.Fatalf("kind %v", d.Kind())
	}
	if n := must(d.Len())(t); n != 5 {
		t.Errorf("Len = %d", n)
	}
	keys := must(d.Keys())(t)
	if got := strings.Join(keys, ","); got != "name,age,tags,ok,none" {
		t.Errorf("Keys = %s (insertion order expected)", got)
	}
	name := must(d.Key("name"))(t)
	defer name.Close()
	if s := must(name.AsString())(t); s != "Ada" {
		t.Errorf("name = %q", s)
	}
	age := must(d.Index(1))(t) // value of the second entry
	defer age.Close()
	if i := must(age.AsInt())(t); i != 36 {
		t.Errorf("age = %d", i)
	}
	tags := must(d.Key("tags"))(t)
	defer tags.Close()
	if n := must(tags.Len())(t); n != 2 {
		t.Errorf("len(tags) = %d", n)
	}
	y := must(tags.Index(1))(t)
	defer y.Close()
	if s := must(y.AsString())(t); s != "y" {
		t.Errorf("tags[1] = %q", s)
	}
	okv := must(d.Key("ok"))(t)
	defer okv.Close()
	if b := must(okv.AsBool())(t); !b {
		t.Error("ok = false")
	}
	none := must(d.Key("none"))(t)
	defer none.Close()
	if none.Kind() != af.KindNull {
		t.Errorf("none kind %v", none.Kind())
	}

	// Missing key: NOT_FOUND naming the key.
	_, err := d.Key("missing")
	ae := wantCode(t, err, af.CodeNotFound)
	if !strings.Contains(ae.Message, "missing") {
		t.Errorf("message does not name the key: %q", ae.Message)
	}
	// Out-of-range index, Len of a leaf, KeyAt of a list.
	_, err = tags.Index(2)
	if err == nil {
		t.Error("tags.Index(2) succeeded")
	}
	_, err = name.Len()
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = tags.KeyAt(0)
	if err == nil {
		t.Error("KeyAt on a list succeeded")
	}
}

func TestConstructors(t *testing.T) {
	ctx := newCtx(t)
	n := must(ctx.Null())(t)
	defer n.Close()
	b := must(ctx.Bool(true))(t)
	defer b.Close()
	s := must(ctx.Str("q\"uote"))(t)
	defer s.Close()
	empty := must(ctx.Str(""))(t)
	defer empty.Close()
	l := must(ctx.List(n, b, s, empty))(t)
	defer l.Close()
	d := must(ctx.Dict([]string{"z", "a", ""}, []*af.Value{l, b, n}))(t)
	defer d.Close()
	if got := must(d.JSON())(t); got != `{"z":[null,true,"q\"uote",""],"a":true,"":null}` {
		t.Errorf("dict JSON = %s", got)
	}
	emptyDict := must(ctx.Dict(nil, nil))(t)
	defer emptyDict.Close()
	if got := must(emptyDict.JSON())(t); got != `{}` {
		t.Errorf("empty dict JSON = %s", got)
	}
	emptyList := must(ctx.List())(t)
	defer emptyList.Close()
	if got := must(emptyList.JSON())(t); got != `[]` {
		t.Errorf("empty list JSON = %s", got)
	}
	_, err := ctx.Dict([]string{"k", "k"}, []*af.Value{n, b})
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = ctx.Str("bad \xff utf8")
	wantCode(t, err, af.CodeInvalidArgument)

	// Closed handles fail cleanly.
	c := must(s.Clone())(t)
	c.Close()
	c.Close() // idempotent
	if c.Kind() != af.KindInvalid {
		t.Error("closed value has a kind")
	}
	_, err = c.AsString()
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = ctx.List(s, c)
	wantCode(t, err, af.CodeInvalidArgument)
	if got := must(s.AsString())(t); got != "q\"uote" {
		t.Errorf("original after closing a clone: %q", got)
	}
}

// --- 5. callback errors and panics ----------------------------------------------

var errBoom = errors.New("boom: the host function failed")

func TestCallbackError(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	ir, err := af.Trace(ctx, func(*af.Context, []*af.Value) (*af.Value, error) {
		return nil, fmt.Errorf("step 2: %w", errBoom)
	}, x)
	if ir != nil {
		ir.Close()
		t.Fatal("trace succeeded")
	}
	ae := wantCode(t, err, af.CodeCallback)
	cause, ok := ae.Unwrap().(*af.Error)
	if !ok || cause == nil {
		t.Fatalf("CALLBACK error has no *af.Error cause: %#v", ae.Unwrap())
	}
	if cause.Message != "step 2: "+errBoom.Error() {
		t.Errorf("cause message = %q", cause.Message)
	}
	if !strings.Contains(err.Error(), errBoom.Error()) {
		t.Errorf("Error() does not include the cause: %q", err.Error())
	}
	if !errors.Is(err, errBoom) {
		t.Errorf("errors.Is does not find the callback's own error in %v", err)
	}
}

// A callback may fail with a chosen code through af.NewError.
func TestCallbackErrorWithCode(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	mine := af.NewError(af.CodeNotFound, "no such route")
	_, err := af.Trace(ctx, func(*af.Context, []*af.Value) (*af.Value, error) {
		return nil, mine
	}, x)
	if err == nil {
		t.Fatal("trace succeeded")
	}
	if !errors.Is(err, mine) {
		t.Errorf("errors.Is does not find the returned *af.Error in %v", err)
	}
	var found bool
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ae, ok := e.(*af.Error); ok && ae.Code() == af.CodeNotFound {
			found = true
		}
	}
	if !found {
		t.Errorf("no NOT_FOUND link in %v", err)
	}
}

func TestCallbackNilResult(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	_, err := af.Trace(ctx, func(*af.Context, []*af.Value) (*af.Value, error) {
		return nil, nil
	}, x)
	if err == nil {
		t.Fatal("trace of a nil result succeeded")
	}
}

func TestCallbackPanic(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	type myPanic struct{ n int }
	func() {
		defer func() {
			r := recover()
			if r == nil {
				t.Fatal("the panic did not reach the caller of Trace")
			}
			if p, ok := r.(myPanic); !ok || p.n != 42 {
				t.Fatalf("recovered %v (%T), want myPanic{42}", r, r)
			}
		}()
		_, _ = af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
			// Leave an open tag scope behind: libaf must unwind it.
			_ = ctx.PushTag("open")
			panic(myPanic{42})
		}, x)
		t.Fatal("Trace returned after a panic")
	}()
	if af.IsTracing() {
		t.Fatal("still tracing after the panic")
	}
	// libaf's trace state is clean: tracing again works.
	ir := must(af.Trace(ctx, hello, x))(t)
	defer ir.Close()
	if n := ir.EqnCount(); n != 2 {
		t.Fatalf("EqnCount after a panicked trace = %d, want 2", n)
	}
	// Operations outside a trace are not recorded anywhere: tags fail.
	wantCode(t, ctx.PushTag("t"), af.CodeInvalidArgument)
}

// --- 6. inspecting the IR -------------------------------------------------------

func TestIRInspection(t *testing.T) {
	ctx := newCtx(t)
	ir := traceHello(t, ctx)
	text := must(ir.Text())(t)
	for _, want := range []string{"format", "concat"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if n := ir.EqnCount(); n != 2 {
		t.Fatalf("EqnCount = %d, want 2\n%s", n, text)
	}
	if p0, p1 := ir.EqnPrim(0), ir.EqnPrim(1); p0 != "format" || p1 != "concat" {
		t.Errorf("prims = %q, %q", p0, p1)
	}
	if p := ir.EqnPrim(2); p != "" {
		t.Errorf("EqnPrim(2) = %q, want \"\"", p)
	}
	dot := must(ir.DOT())(t)
	if !strings.Contains(dot, "digraph") {
		t.Errorf("DOT is not a digraph:\n%s", dot)
	}

	// Structural equality and hash: a second trace of the same function.
	again := traceHello(t, ctx)
	if !ir.Equal(again) || ir.Hash() != again.Hash() {
		t.Errorf("two traces of hello differ (equal=%v, hashes %x %x)", ir.Equal(again), ir.Hash(), again.Hash())
	}
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	other := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Format("Bye, {}!", in[0])
	}, x))(t)
	defer other.Close()
	if ir.Equal(other) {
		t.Error("different IRs compare equal")
	}
	clone := must(ir.Clone())(t)
	clone.Close()
	if ir.EqnCount() != 2 {
		t.Error("closing a clone affected the original")
	}
	if clone.EqnCount() != 0 || clone.Hash() != 0 {
		t.Error("a closed IR still reports equations")
	}
	_, err := clone.Text()
	wantCode(t, err, af.CodeInvalidArgument)
}

// --- more operations ------------------------------------------------------------

func TestMatchAndIdentities(t *testing.T) {
	ctx := newCtx(t)
	a := must(ctx.Str("a"))(t)
	defer a.Close()
	b := must(ctx.Str("b"))(t)
	defer b.Close()
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		m, err := ctx.Match(in[0], in[1])
		if err != nil {
			return nil, err
		}
		defer m.Close()
		sg, err := ctx.StopGradient(in[0])
		if err != nil {
			return nil, err
		}
		defer sg.Close()
		cp, err := ctx.Checkpoint(sg, "k", "coll")
		if err != nil {
			return nil, err
		}
		defer cp.Close()
		dep, err := ctx.Depends(cp, in[1])
		if err != nil {
			return nil, err
		}
		defer dep.Close()
		return ctx.List(m, dep)
	}, a, b))(t)
	defer ir.Close()
	text := must(ir.Text())(t)
	for _, want := range []string{"match", "checkpoint"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	same := must(ctx.Str("same"))(t)
	defer same.Close()
	out := must(ir.Call(ctx, same, same))(t)
	defer out.Close()
	if got := must(out.JSON())(t); got != `[true,"same"]` {
		t.Errorf("got %s, want [true,\"same\"]", got)
	}
	out2 := must(ir.Call(ctx, a, b))(t)
	defer out2.Close()
	if got := must(out2.JSON())(t); got != `[false,"a"]` {
		t.Errorf("got %s, want [false,\"a\"]", got)
	}
}

func TestTagsAndFold(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		var out *af.Value
		err := ctx.WithTag("greeting", func() error {
			var err error
			out, err = ctx.Format("Hi {}", in[0])
			return err
		})
		if err != nil {
			return nil, err
		}
		defer out.Close()
		// Folded: a constant computation becomes a literal.
		var lit *af.Value
		if err := ctx.Folded(func() error {
			a, err := ctx.Str("A")
			if err != nil {
				return err
			}
			defer a.Close()
			lit, err = ctx.Format("[{}]", a)
			return err
		}); err != nil {
			return nil, err
		}
		defer lit.Close()
		// Folding an operation on a placeholder fails.
		if err := ctx.Folded(func() error {
			v, err := ctx.Format("{}", in[0])
			if v != nil {
				v.Close()
			}
			return err
		}); err == nil {
			return nil, errors.New("folding a placeholder operation succeeded")
		} else if ae := (*af.Error)(nil); !errors.As(err, &ae) || ae.Code() != af.CodeInvalidArgument {
			return nil, fmt.Errorf("folding a placeholder: want INVALID_ARGUMENT, got %w", err)
		}
		if err := ctx.PopTag(); err == nil {
			return nil, errors.New("PopTag without a push succeeded")
		}
		return ctx.Concat(out, lit)
	}, x))(t)
	defer ir.Close()
	text := must(ir.Text())(t)
	if !strings.Contains(text, "greeting") {
		t.Errorf("tag missing from text:\n%s", text)
	}
	if n := ir.EqnCount(); n != 2 {
		t.Errorf("EqnCount = %d, want 2 (the folded format is a literal):\n%s", n, text)
	}
	y := must(ctx.Str("y"))(t)
	defer y.Close()
	out := must(ir.Call(ctx, y))(t)
	defer out.Close()
	if got := must(out.AsString())(t); got != "Hi y[A]" {
		t.Errorf("got %q", got)
	}
	// Fold scopes outside a trace are no-ops (docs/SEMANTICS.md).
	must(0, ctx.PushFold())(t)
	must(0, ctx.PopFold())(t)
}

// An IR called inside a trace is inlined.
func TestNestedCallInlines(t *testing.T) {
	ctx := newCtx(t)
	inner := traceHello(t, ctx)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	outer := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		h, err := inner.Call(ctx, in[0])
		if err != nil {
			return nil, err
		}
		defer h.Close()
		return ctx.Format("<{}>", h)
	}, x))(t)
	defer outer.Close()
	if n := outer.EqnCount(); n != 3 {
		t.Errorf("EqnCount = %d, want 3 (inlined)\n%s", n, outer)
	}
	w := must(ctx.Str("W"))(t)
	defer w.Close()
	out := must(outer.Call(ctx, w))(t)
	defer out.Close()
	if got := must(out.AsString())(t); got != "<Hello, W!?>" {
		t.Errorf("got %q", got)
	}
}

func TestStaticInput(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	sep := must(ctx.Str("-"))(t)
	defer sep.Close()
	mask := must(ctx.FromJSON(`[false,true]`))(t)
	defer mask.Close()
	ir := must(af.TraceStatic(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		if in[1].Kind() != af.KindStr {
			return nil, fmt.Errorf("static input is a %v, want str", in[1].Kind())
		}
		return ctx.Concat(in[0], in[1], in[0])
	}, mask, x, sep))(t)
	defer ir.Close()
	y := must(ctx.Str("y"))(t)
	defer y.Close()
	out := must(ir.Call(ctx, y, sep))(t)
	defer out.Close()
	if got := must(out.AsString())(t); got != "y-y" {
		t.Errorf("got %q", got)
	}
	plus := must(ctx.Str("+"))(t)
	defer plus.Close()
	_, err := ir.Call(ctx, y, plus) // static leaves must be equal
	wantCode(t, err, af.CodeInvalidArgument)
}

func TestWalk(t *testing.T) {
	ctx := newCtx(t)
	ir := traceHello(t, ctx)
	world := must(ctx.Str("World"))(t)
	defer world.Close()

	// Let libaf evaluate every equation.
	w := must(ir.Walk(ctx, world))(t)
	defer w.Close()
	var prims []string
	for {
		eqn, in, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if eqn == af.WalkDone {
			if in != nil {
				t.Error("inputs at the end of the walk")
			}
			break
		}
		in.Close()
		prims = append(prims, ir.EqnPrim(eqn))
		if err := w.Eval(); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(prims, ","); got != "format,concat" {
		t.Errorf("walked %s", got)
	}
	out := must(w.Outputs())(t)
	defer out.Close()
	if got := must(out.AsString())(t); got != "Hello, World!?" {
		t.Errorf("walk output %q", got)
	}

	// Supply the format equation's output ourselves.
	w2 := must(ir.Walk(ctx, world))(t)
	defer w2.Close()
	_, err := w2.Outputs() // equations remain
	wantCode(t, err, af.CodeInvalidArgument)
	eqn, in, err := w2.Next()
	if err != nil || eqn != 0 {
		t.Fatalf("Next = %d, %v", eqn, err)
	}
	in.Close()
	// format's output tree is one str leaf: a list is the wrong structure,
	// an int the wrong kind.
	for _, bad := range []string{`["Hi"]`, `7`} {
		v := must(ctx.FromJSON(bad))(t)
		wantCode(t, w2.Send(v), af.CodeInvalidArgument)
		v.Close()
	}
	hi := must(ctx.Str("Hi"))(t)
	defer hi.Close()
	if err := w2.Send(hi); err != nil {
		t.Fatalf("Send: %v", err)
	}
	for {
		eqn, in, err := w2.Next()
		if err != nil {
			t.Fatal(err)
		}
		if eqn == af.WalkDone {
			break
		}
		in.Close()
		if err := w2.Eval(); err != nil {
			t.Fatal(err)
		}
	}
	out2 := must(w2.Outputs())(t)
	defer out2.Close()
	if got := must(out2.AsString())(t); got != "Hi?" {
		t.Errorf("walk with a sent output = %q, want Hi?", got)
	}
}

// Traces on many goroutines at once: each is locked to its own thread and
// records only its own operations.
func TestConcurrentTraces(t *testing.T) {
	ctx := newCtx(t)
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			x, err := ctx.Str("x")
			if err != nil {
				errs <- err
				return
			}
			defer x.Close()
			for j := 0; j < 20; j++ {
				ir, err := af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
					runtime.Gosched()
					return ctx.Format(fmt.Sprintf("%d:{}", i), in[0])
				}, x)
				if err != nil {
					errs <- err
					return
				}
				v, err := ir.Call(ctx, x)
				if err != nil {
					ir.Close()
					errs <- err
					return
				}
				s, err := v.AsString()
				v.Close()
				cnt := ir.EqnCount()
				ir.Close()
				if err != nil {
					errs <- err
					return
				}
				if want := fmt.Sprintf("%d:x", i); s != want || cnt != 1 {
					errs <- fmt.Errorf("goroutine %d: got %q with %d eqns", i, s, cnt)
					return
				}
			}
			errs <- nil
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Finalizers release forgotten handles without crashing.
func TestFinalizers(t *testing.T) {
	ctx := newCtx(t)
	for i := 0; i < 200; i++ {
		v, err := ctx.Str("garbage")
		if err != nil {
			t.Fatal(err)
		}
		_ = v
		c, err := af.NewContext()
		if err != nil {
			t.Fatal(err)
		}
		_ = c
	}
	runtime.GC()
	runtime.GC()
}

func TestVersion(t *testing.T) {
	if af.Version() == "" {
		t.Error("empty version")
	}
	if af.ABIVersion() != af.HeaderABIVersion {
		t.Errorf("ABI %d, header %d", af.ABIVersion(), af.HeaderABIVersion)
	}
}

// A trace started inside a trace function is independent (innermost trace),
// and a panic in it travels through both traces to the outer caller.
func TestNestedTrace(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	var inner *af.IR
	outer := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		ex, err := ctx.Str("e")
		if err != nil {
			return nil, err
		}
		defer ex.Close()
		inner, err = af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
			return ctx.Concat(in[0], in[0])
		}, ex)
		if err != nil {
			return nil, err
		}
		return ctx.Format("[{}]", in[0])
	}, x))(t)
	defer outer.Close()
	defer inner.Close()
	if p := outer.EqnPrim(0); outer.EqnCount() != 1 || p != "format" {
		t.Errorf("outer: %d eqns, first %q\n%s", outer.EqnCount(), p, outer)
	}
	if p := inner.EqnPrim(0); inner.EqnCount() != 1 || p != "concat" {
		t.Errorf("inner: %d eqns, first %q\n%s", inner.EqnCount(), p, inner)
	}

	defer func() {
		if r := recover(); r != "deep" {
			t.Fatalf("recovered %v, want \"deep\"", r)
		}
		if af.IsTracing() {
			t.Fatal("still tracing")
		}
	}()
	_, _ = af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		_, err := af.Trace(ctx, func(*af.Context, []*af.Value) (*af.Value, error) {
			panic("deep")
		}, x)
		return nil, fmt.Errorf("unreachable: the inner Trace re-panics (%v)", err)
	}, x)
	t.Fatal("Trace returned after a nested panic")
}
