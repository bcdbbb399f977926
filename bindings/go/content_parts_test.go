package af_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// LM call messages whose content is a list of text and image parts.

const (
	partsPNG = "iVBORw0KGgo="
	partsURL = "https://example.com/cat.png"
)

// partsMessages is [{"role": "user", "content": [text, image url, image
// data, "Be brief."]}]; text and url may be Go strings or *af.Value.
func partsMessages(t *testing.T, eng *af.Engine, text, url any) *af.Value {
	t.Helper()
	msgs := must(eng.ValueOf([]map[string]any{{"role": "user", "content": []map[string]any{
		{"type": "text", "text": text},
		{"type": "image", "url": url},
		{"type": "image", "media_type": "image/png", "data": partsPNG},
		{"type": "text", "text": "Be brief."},
	}}}))(t)
	t.Cleanup(msgs.Close)
	return msgs
}

func TestContentPartsEchoReadsTheTextParts(t *testing.T) {
	eng := newCtx(t)
	must(0, eng.Route("*", must(af.NewEchoProvider(""))(t)))(t)
	out := must(eng.LMCall(partsMessages(t, eng, "What is this?", partsURL), js(t, eng, `"m"`)))(t)
	wantJSON(t, out, `"m|What is this?\n\nBe brief."`)
}

func TestContentPartsAHostProviderSeesEveryPart(t *testing.T) {
	eng := newCtx(t)
	seen := make(chan string, 1)
	host := must(af.NewHostProvider(func(req *af.LMRequest) {
		j, err := req.JSON()
		if err != nil {
			req.Fail(err)
			return
		}
		seen <- j
		req.Complete("ok")
	}))(t)
	defer host.Close()
	must(0, eng.Route("*", host))(t)
	wantJSON(t, must(eng.LMCall(partsMessages(t, eng, "What is this?", partsURL), js(t, eng, `"m"`)))(t), `"ok"`)
	var req struct {
		Messages []struct {
			Role    string              `json:"role"`
			Content []map[string]string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(<-seen), &req); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{
		{"type": "text", "text": "What is this?"},
		{"type": "image", "url": partsURL},
		{"type": "image", "media_type": "image/png", "data": partsPNG},
		{"type": "text", "text": "Be brief."},
	}
	if len(req.Messages) != 1 || req.Messages[0].Role != "user" || !reflect.DeepEqual(req.Messages[0].Content, want) {
		t.Fatalf("the host provider saw %+v", req.Messages)
	}
}

func TestContentPartsTracedTextAndURL(t *testing.T) {
	eng := newCtx(t)
	must(0, eng.Route("*", must(af.NewEchoProvider(""))(t)))(t)
	ir := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		msgs, err := eng.ValueOf([]map[string]any{{"role": "user", "content": []map[string]any{
			{"type": "text", "text": in[0]},
			{"type": "image", "url": in[1]},
			{"type": "image", "media_type": "image/png", "data": partsPNG},
			{"type": "text", "text": "Be brief."},
		}}})
		if err != nil {
			return nil, err
		}
		defer msgs.Close()
		model, err := eng.ValueOf("m")
		if err != nil {
			return nil, err
		}
		defer model.Close()
		return eng.LMCall(msgs, model)
	}, js(t, eng, `"q"`), js(t, eng, `"u"`)))(t)
	defer ir.Close()
	if ir.EqnCount() != 1 || ir.EqnPrim(0) != "lm_call" {
		t.Fatalf("traced %s", ir)
	}
	out := must(ir.Call(eng, js(t, eng, `"What is this?"`), js(t, eng, `"`+partsURL+`"`)))(t)
	wantJSON(t, out, `"m|What is this?\n\nBe brief."`)
}

func TestContentPartsABadPartIsInvalidArgument(t *testing.T) {
	eng := newCtx(t)
	must(0, eng.Route("*", must(af.NewEchoProvider(""))(t)))(t)
	msgs := js(t, eng, `[{"role": "user", "content": [{"type": "text", "text": "hi"},
		{"type": "image", "media_type": "image/png", "data": "not base64!"}]}]`)
	_, err := eng.LMCall(msgs, js(t, eng, `"m"`))
	e := wantCode(t, err, af.CodeInvalidArgument)
	if !strings.Contains(e.Message, "not base64") || !strings.Contains(e.Message, "messages[0].content[1]") {
		t.Fatalf("%v", err)
	}
}
