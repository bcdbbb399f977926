package af_test

import (
	"strings"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// scanStep is body(c, x) = [concat(c, x), format("<{}>", x)], the body of
// tests/capi/scan_test.c.
func scanStep(eng *af.Engine, c, x *af.Value) (*af.Value, error) {
	next, err := eng.Concat(c, x)
	if err != nil {
		return nil, err
	}
	y, err := eng.Format("<{}>", x)
	if err != nil {
		return nil, err
	}
	return eng.List(next, y)
}

// scanBody traces scanStep on two strs.
func scanBody(t *testing.T, eng *af.Engine) *af.IR {
	t.Helper()
	body := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return scanStep(eng, in[0], in[1])
	}, js(t, eng, `"c"`), js(t, eng, `"x"`)))(t)
	t.Cleanup(body.Close)
	return body
}

// scanProgram traces f(init, xs) = Scan(body, init, xs, reverse) with xs a
// list input of any length (ListMask).
func scanProgram(t *testing.T, eng *af.Engine, body *af.IR, reverse bool) *af.IR {
	t.Helper()
	ir := must(af.TraceWith(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.Scan(body, in[0], in[1], reverse)
	}, af.TraceOptions{ListMask: js(t, eng, `[false, true]`)}, js(t, eng, `"c"`), js(t, eng, `["x"]`)))(t)
	t.Cleanup(ir.Close)
	return ir
}

func TestScanEagerly(t *testing.T) {
	eng := newCtx(t)
	body := scanBody(t, eng)
	init := js(t, eng, `">"`)
	xs := js(t, eng, `["a","b","c"]`)
	// The carry is threaded through the items; ys are by item index.
	wantJSON(t, must(eng.Scan(body, init, xs, false))(t), `[">abc",["<a>","<b>","<c>"]]`)
	// Reverse: the last item first; ys stay at their items' indices.
	wantJSON(t, must(eng.Scan(body, init, xs, true))(t), `[">cba",["<a>","<b>","<c>"]]`)
	// No items: the initial carry and empty ys; body never runs.
	wantJSON(t, must(eng.Scan(body, init, js(t, eng, `[]`), false))(t), `[">",[]]`)
	// A tree of lists of one length: the item is the tree of their i-th items.
	pair := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		q, err := in[1].Key("q")
		if err != nil {
			return nil, err
		}
		a, err := in[1].Key("a")
		if err != nil {
			return nil, err
		}
		line, err := eng.Format("{}={};", q, a)
		if err != nil {
			return nil, err
		}
		next, err := eng.Concat(in[0], line)
		if err != nil {
			return nil, err
		}
		return eng.List(next, line)
	}, js(t, eng, `"c"`), js(t, eng, `{"q":"x","a":"y"}`)))(t)
	defer pair.Close()
	wantJSON(t, must(eng.Scan(pair, js(t, eng, `""`), js(t, eng, `{"q":["1+1","2+2"],"a":["2","4"]}`), false))(t),
		`["1+1=2;2+2=4;",["1+1=2;","2+2=4;"]]`)
	_, err := eng.Scan(pair, js(t, eng, `""`), js(t, eng, `{"q":["1+1","2+2"],"a":["2"]}`), false)
	if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, "must have one length") {
		t.Fatalf("unexpected message: %v", e)
	}
}

func TestScanOnALazyEngineIsAPromise(t *testing.T) {
	eng := newLazy(t)
	body := scanBody(t, eng)
	out := must(eng.Scan(body, js(t, eng, `""`), js(t, eng, `["p","q"]`), false))(t)
	defer out.Close()
	if out.Ready() {
		t.Fatal("the scan ran before it was read")
	}
	wantJSON(t, out, `["pq",["<p>","<q>"]]`)
}

// Traced over a list input of any length, the scan is one equation; the
// program runs on lists of other lengths.
func TestScanTracedOverAListOfAnyLength(t *testing.T) {
	eng := newCtx(t)
	body := scanBody(t, eng)
	ir := scanProgram(t, eng, body, false)
	if text := must(ir.Text())(t); !strings.Contains(text, "scan[") {
		t.Fatalf("no scan equation in:\n%s", text)
	}
	for _, c := range []struct{ init, xs, want string }{
		{`"0"`, `["a"]`, `["0a",["<a>"]]`},
		{`"0"`, `["a","b","c","d"]`, `["0abcd",["<a>","<b>","<c>","<d>"]]`},
		{`"0"`, `[]`, `["0",[]]`},
	} {
		out := must(ir.Call(eng, js(t, eng, c.init), js(t, eng, c.xs)))(t)
		wantJSON(t, out, c.want)
		out.Close()
	}
	// Reverse, traced.
	rev := scanProgram(t, eng, body, true)
	wantJSON(t, must(rev.Call(eng, js(t, eng, `"0"`), js(t, eng, `["a","b","c"]`)))(t), `["0cba",["<a>","<b>","<c>"]]`)
	// Compiled, through Engine.Call.
	prog := must(af.Compile(eng, ir))(t)
	defer prog.Close()
	wantJSON(t, must(prog.Call(eng, js(t, eng, `"s"`), js(t, eng, `["x","y"]`)))(t), `["sxy",["<x>","<y>"]]`)
}

// Batch maps the scan over documents, each with its own length.
func TestScanBatchedOverDocumentsOfDifferentLengths(t *testing.T) {
	eng := newCtx(t)
	ir := scanProgram(t, eng, scanBody(t, eng), false)
	b := must(ir.Batch(eng, nil))(t)
	defer b.Close()
	must(0, b.Validate())(t)
	wantJSON(t, must(b.Call(eng, js(t, eng, `["1","2"]`), js(t, eng, `[["a","b"],["c"]]`)))(t),
		`[["1ab","2c"],[["<a>","<b>"],["<c>"]]]`)
}

// scanUnrolled traces f(c, x0, x1, x2): scanStep unrolled by hand over
// three items, returning [carry, [y0, y1, y2]] as the scan does.
func scanUnrolled(t *testing.T, eng *af.Engine) *af.IR {
	t.Helper()
	ir := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		carry := in[0]
		ys := make([]*af.Value, 0, 3)
		for _, x := range in[1:] {
			step, err := scanStep(eng, carry, x)
			if err != nil {
				return nil, err
			}
			if carry, err = step.Index(0); err != nil {
				return nil, err
			}
			y, err := step.Index(1)
			if err != nil {
				return nil, err
			}
			ys = append(ys, y)
		}
		list, err := eng.List(ys...)
		if err != nil {
			return nil, err
		}
		return eng.List(carry, list)
	}, js(t, eng, `"c"`), js(t, eng, `"x"`), js(t, eng, `"x"`), js(t, eng, `"x"`)))(t)
	t.Cleanup(ir.Close)
	return ir
}

// leaves is JSON with its brackets removed: the leaves in order, whatever
// the nesting (the values here hold no brackets).
func leaves(s string) string { return strings.NewReplacer("[", "", "]", "").Replace(s) }

// The pullback of the scan gives feedback to init and to every item.
func TestScanPullback(t *testing.T) {
	eng := newCtx(t)
	pb := must(scanProgram(t, eng, scanBody(t, eng), false).Pullback(eng))(t)
	defer pb.Close()
	must(0, pb.Validate())(t)
	// [primal output, [feedback to init, [feedback to each item]]]
	out := must(pb.Call(eng, js(t, eng, `["i",["a","b","c"]]`), js(t, eng, `["G",["y0",null,"y2"]]`)))(t)
	defer out.Close()
	wantJSON(t, out, `[["iabc",["<a>","<b>","<c>"]],["G",["Gy0","G","Gy2"]]]`)
}

// Pushforward and pullback of the scan equal those of the same body
// unrolled by hand: tangents and feedback thread through the carry alike.
func TestScanTransformsMatchTheUnrolledBody(t *testing.T) {
	eng := newCtx(t)
	scan := scanProgram(t, eng, scanBody(t, eng), false)
	unrolled := scanUnrolled(t, eng)
	for _, c := range []struct{ transform, scanIn, scanArg, unrolledIn, unrolledArg string }{
		{"pushforward", `["i",["a","b","c"]]`, `["di",["da",null,"dc"]]`, `["i","a","b","c"]`, `["di","da",null,"dc"]`},
		{"pullback", `["i",["a","b","c"]]`, `["G",["y0",null,"y2"]]`, `["i","a","b","c"]`, `["G",["y0",null,"y2"]]`},
		{"pullback", `["i",["a","b","c"]]`, `[null,["y0","y1","y2"]]`, `["i","a","b","c"]`, `[null,["y0","y1","y2"]]`},
	} {
		transform := (*af.IR).Pullback
		if c.transform == "pushforward" {
			transform = (*af.IR).Pushforward
		}
		s := must(transform(scan, eng))(t)
		u := must(transform(unrolled, eng))(t)
		must(0, s.Validate())(t)
		so := must(s.Call(eng, js(t, eng, c.scanIn), js(t, eng, c.scanArg)))(t)
		uo := must(u.Call(eng, js(t, eng, c.unrolledIn), js(t, eng, c.unrolledArg)))(t)
		// The unrolled program has each item as an input of its own: compare
		// leaf by leaf.
		sl, ul := leaves(must(so.JSON())(t)), leaves(must(uo.JSON())(t))
		if sl != ul || !strings.HasPrefix(sl, `"iabc"`) {
			t.Fatalf("%s %s: scan gives %s, unrolled gives %s", c.transform, c.scanArg, sl, ul)
		}
		for _, h := range []interface{ Close() }{so, uo, s, u} {
			h.Close()
		}
	}
}

func TestScanErrors(t *testing.T) {
	eng := newCtx(t)
	body := scanBody(t, eng)
	init := js(t, eng, `""`)
	for _, c := range []struct{ xs, msg string }{
		{`"a"`, "not a list"},
		{`[1,2]`, "xs leaf 0 is list<int>"},
	} {
		_, err := eng.Scan(body, init, js(t, eng, c.xs), false)
		if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, c.msg) {
			t.Fatalf("xs %s: message lacks %q: %v", c.xs, c.msg, e)
		}
	}
	// A body of one input, one not returning [carry, y], one changing the
	// carry's kind.
	one := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return in[0].Clone()
	}, js(t, eng, `"c"`)))(t)
	defer one.Close()
	noPair := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return in[1].Clone()
	}, js(t, eng, `"c"`), js(t, eng, `"x"`)))(t)
	defer noPair.Close()
	boolCarry := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		m, err := eng.Match(in[0], in[1])
		if err != nil {
			return nil, err
		}
		return eng.List(m, in[1])
	}, js(t, eng, `"c"`), js(t, eng, `"x"`)))(t)
	defer boolCarry.Close()
	xs := js(t, eng, `["a"]`)
	for _, c := range []struct {
		body *af.IR
		msg  string
	}{
		{one, "must take two inputs"},
		{noPair, "must return [next carry, y]"},
		{boolCarry, "changes carry leaf 0"},
	} {
		_, err := eng.Scan(c.body, init, xs, false)
		if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, c.msg) {
			t.Fatalf("message lacks %q: %v", c.msg, e)
		}
	}
	// Closed or nil handles are the binding's closed-handle error.
	_, err := eng.Scan(nil, init, xs, false)
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = eng.Scan(body, nil, xs, false)
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = eng.Scan(body, init, nil, false)
	wantCode(t, err, af.CodeInvalidArgument)
}
