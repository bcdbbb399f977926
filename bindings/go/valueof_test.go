package af_test

import (
	"encoding/json"
	"math"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

type ticket struct {
	ID    int      `json:"id"`
	Title string   `json:"title"`
	Tags  []string `json:"tags,omitempty"`
}

func TestValueOfGoValues(t *testing.T) {
	ctx := newCtx(t)
	x := must(ctx.Str("x"))(t)
	defer x.Close()
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, `null`},
		{true, `true`},
		{int8(-3), `-3`},
		{uint16(7), `7`},
		{2.5, `2.5`},
		{float32(0.5), `0.5`},
		{"s", `"s"`},
		{x, `"x"`},
		{[]any{1, "a", nil}, `[1,"a",null]`},
		{[2]bool{true, false}, `[true,false]`},
		{[]string(nil), `[]`},
		{map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{ticket{ID: 4, Title: "printer"}, `{"id":4,"title":"printer"}`},
		{&ticket{ID: 5, Title: "vpn", Tags: []string{"net"}}, `{"id":5,"title":"vpn","tags":["net"]}`},
		{json.RawMessage(`{"k":[1.0]}`), `{"k":[1.0]}`},
	} {
		v := must(ctx.ValueOf(c.in))(t)
		wantJSON(t, v, c.want)
		v.Close()
	}
	for _, bad := range []any{uint64(math.MaxUint64), map[int]string{1: "a"}, make(chan int)} {
		_, err := ctx.ValueOf(bad)
		wantCode(t, err, af.CodeInvalidArgument)
	}
}

func TestValueJSONMarshallingBothWays(t *testing.T) {
	ctx := newCtx(t)
	v := js(t, ctx, `{"id":9,"title":"disk","tags":["hw"]}`)
	var got ticket
	must(0, v.Decode(&got))(t)
	if got.ID != 9 || got.Title != "disk" || len(got.Tags) != 1 {
		t.Fatalf("decoded %+v", got)
	}
	b := must(json.Marshal(map[string]any{"v": v}))(t)
	if string(b) != `{"v":{"id":9,"title":"disk","tags":["hw"]}}` {
		t.Fatalf("marshalled %s", b)
	}
	var n int
	wantCode(t, js(t, ctx, `"text"`).Decode(&n), af.CodeInvalidArgument)
}
