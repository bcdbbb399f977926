package af_test

import (
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// The package-level constructors need no Engine and make what the Engine
// methods make; a closed Engine's methods fail, the package-level ones never
// look at one.
func TestValueConstructorsWithAndWithoutAnEngine(t *testing.T) {
	eng := newCtx(t)
	type pair struct {
		free, method func() (*af.Value, error)
		want         string
	}
	a := must(af.StrValue("a"))(t)
	defer a.Close()
	pairs := []pair{
		{af.NullValue, eng.Null, `null`},
		{func() (*af.Value, error) { return af.BoolValue(true) }, func() (*af.Value, error) { return eng.Bool(true) }, `true`},
		{func() (*af.Value, error) { return af.IntValue(-7) }, func() (*af.Value, error) { return eng.Int(-7) }, `-7`},
		{func() (*af.Value, error) { return af.FloatValue(2) }, func() (*af.Value, error) { return eng.Float(2) }, `2.0`},
		{func() (*af.Value, error) { return af.StrValue("hé") }, func() (*af.Value, error) { return eng.Str("hé") }, `"hé"`},
		{func() (*af.Value, error) { return af.ListValue(a, a) }, func() (*af.Value, error) { return eng.List(a, a) }, `["a","a"]`},
		{func() (*af.Value, error) { return af.DictValue([]string{"k", "j"}, []*af.Value{a, a}) },
			func() (*af.Value, error) { return eng.Dict([]string{"k", "j"}, []*af.Value{a, a}) }, `{"k":"a","j":"a"}`},
		{func() (*af.Value, error) { return af.DictValue(nil, nil) }, func() (*af.Value, error) { return eng.Dict(nil, nil) }, `{}`},
		{func() (*af.Value, error) { return af.JSONValue(`{"x":[1,2.5]}`) },
			func() (*af.Value, error) { return eng.FromJSON(`{"x":[1,2.5]}`) }, `{"x":[1,2.5]}`},
	}
	for _, p := range pairs {
		for _, make := range []func() (*af.Value, error){p.free, p.method} {
			v := must(make())(t)
			if got := must(v.JSON())(t); got != p.want {
				t.Errorf("got %s, want %s", got, p.want)
			}
			v.Close()
		}
	}
	// Both report bad input the same way.
	for _, make := range []func() (*af.Value, error){
		func() (*af.Value, error) { return af.StrValue("\xff") },
		func() (*af.Value, error) { return eng.Str("\xff") },
		func() (*af.Value, error) { return af.DictValue([]string{"k", "k"}, []*af.Value{a, a}) },
		func() (*af.Value, error) { return af.DictValue([]string{"k"}, nil) },
		func() (*af.Value, error) { return af.JSONValue("{") },
	} {
		v, err := make()
		if v != nil {
			v.Close()
		}
		wantCode(t, err, af.CodeInvalidArgument)
	}
	closed := must(af.NewEngine())(t)
	closed.Close()
	if _, err := closed.Str("x"); err == nil {
		t.Error("a closed Engine made a value")
	}
	if v, err := af.StrValue("x"); err != nil {
		t.Error(err)
	} else {
		v.Close()
	}
}
