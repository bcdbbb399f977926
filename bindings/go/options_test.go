package af

import (
	"encoding/json"
	"strings"
	"testing"
)

type optionKey struct {
	Key     string      `json:"key"`
	Kind    string      `json:"kind"`
	Default any         `json:"default"`
	Doc     string      `json:"doc"`
	Keys    []optionKey `json:"keys"`
}

// defaultsOf is every described key at its default (objects: their keys').
func defaultsOf(keys []optionKey) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if k.Kind == "object" {
			if k.Keys != nil {
				out[k.Key] = defaultsOf(k.Keys)
			}
		} else if k.Default != nil {
			out[k.Key] = k.Default
		}
	}
	return out
}

func TestOptionsJSONDescribesWhatTheReadersTake(t *testing.T) {
	text, err := OptionsJSON()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Context    []optionKey            `json:"af_context_new_with"`
		Providers  map[string][]optionKey `json:"af_provider_new"`
		SetOptions []optionKey            `json:"af_provider_set_options"`
	}
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Context) == 0 || len(d.Providers["echo"]) == 0 || len(d.SetOptions) == 0 {
		t.Fatalf("missing tables: %s", text)
	}
	for _, k := range d.Context {
		if k.Doc == "" {
			t.Errorf("context option %q has no doc", k.Key)
		}
	}
	// Every key at its described default is accepted by the reader.
	ctxJSON, _ := json.Marshal(defaultsOf(d.Context))
	eng, err := NewEngineWith(string(ctxJSON))
	if err != nil {
		t.Fatalf("context defaults %s: %v", ctxJSON, err)
	}
	defer eng.Close()
	echoJSON, _ := json.Marshal(defaultsOf(d.Providers["echo"]))
	p, err := NewEchoProvider(string(echoJSON))
	if err != nil {
		t.Fatalf("echo defaults %s: %v", echoJSON, err)
	}
	defer p.Close()
	setJSON, _ := json.Marshal(defaultsOf(d.SetOptions))
	if err := p.SetOptions(string(setJSON)); err != nil {
		t.Fatalf("set_options defaults %s: %v", setJSON, err)
	}
	// and a key it does not describe is refused, naming it
	if _, err := NewEchoProvider(`{"latency_msec": 1}`); err == nil || !strings.Contains(err.Error(), "latency_msec") {
		t.Fatalf("an undescribed key: %v", err)
	}
}
