package af_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// Tool calling: LMToolCall (af_lm_tool_call) and ToolResults
// (af_tool_results). Eagerly on an echo engine (it calls each tool once, in
// order, with its smallest arguments, then answers "<model>|<last
// message>"), an agent loop traced as a while_loop over the history (run,
// saved and reloaded), and the errors.

const toolsJSON = `[
	{"name": "add", "description": "a + b",
	 "parameters": {"a": {"type": "int", "min": 2}, "b": {"type": "int", "min": 3}}},
	{"name": "lookup", "description": "today's weather in a city",
	 "parameters": {"city": {"type": "enum", "values": ["Paris", "Rome"]}}}
]`

const toolMessagesJSON = `[
	{"role": "system", "content": "Answer with the tools."},
	{"role": "user", "content": "What is 2 + 3, and the weather in Paris?"}
]`

// agentEngine is an echo engine with the host functions "add" and "lookup"
// (each takes its tool's arguments JSON and returns a str).
func agentEngine(t *testing.T) *af.Engine {
	t.Helper()
	eng := newCtx(t)
	echo := must(af.NewEchoProvider(""))(t)
	t.Cleanup(echo.Close)
	must(0, eng.Route("*", echo))(t)
	str := js(t, eng, `"str"`)
	must(0, eng.RegisterFunction("add", str, func(args []*af.Value) (*af.Value, error) {
		var a struct{ A, B int }
		s, err := args[0].AsString()
		if err == nil {
			err = json.Unmarshal([]byte(s), &a)
		}
		if err != nil {
			return nil, err
		}
		return eng.Str(strconv.Itoa(a.A + a.B))
	}))(t)
	must(0, eng.RegisterFunction("lookup", str, func(args []*af.Value) (*af.Value, error) {
		var a struct{ City string }
		s, err := args[0].AsString()
		if err == nil {
			err = json.Unmarshal([]byte(s), &a)
		}
		if err != nil {
			return nil, err
		}
		if a.City == "Paris" {
			return eng.Str("Paris: 21C, sunny")
		}
		return eng.Str("no data")
	}))(t)
	return eng
}

// key is v[k], failing the test if absent.
func key(t *testing.T, v *af.Value, k string) *af.Value {
	t.Helper()
	out := must(v.Key(k))(t)
	t.Cleanup(out.Close)
	return out
}

// historyOf decodes a history str.
func historyOf(t *testing.T, h *af.Value) []map[string]any {
	t.Helper()
	var msgs []map[string]any
	must(0, json.Unmarshal([]byte(must(h.AsString())(t)), &msgs))(t)
	return msgs
}

func TestToolCallEagerConversation(t *testing.T) {
	eng := agentEngine(t)
	msgs, tools, model := js(t, eng, toolMessagesJSON), js(t, eng, toolsJSON), js(t, eng, `"echo"`)

	r := must(eng.LMToolCall(msgs, js(t, eng, `""`), model, tools))(t)
	keys := must(r.Keys())(t)
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"arguments", "called", "names", "text", "turn"}) {
		t.Fatalf("keys %v", keys)
	}
	wantJSON(t, key(t, r, "called"), `true`)
	wantJSON(t, key(t, r, "text"), `""`)
	wantJSON(t, key(t, r, "names"), `["add"]`)
	wantJSON(t, key(t, r, "arguments"), `["{\"a\":2,\"b\":3}"]`)
	h1 := must(eng.ToolResults(js(t, eng, `""`), key(t, r, "turn"), js(t, eng, `["5"]`)))(t)
	hist := historyOf(t, h1)
	if len(hist) != 2 || hist[0]["role"] != "assistant" || hist[1]["role"] != "tool" ||
		hist[1]["tool_call_id"] != "call_0" || hist[1]["content"] != "5" {
		t.Fatalf("history %v", hist)
	}

	// "[]" is no history too; params are sampling params.
	again := must(eng.LMToolCallWith(msgs, js(t, eng, `"[]"`), model, tools, js(t, eng, `{"temperature": 0}`)))(t)
	wantJSON(t, again, must(r.JSON())(t))

	r = must(eng.LMToolCall(msgs, h1, model, tools))(t)
	wantJSON(t, key(t, r, "names"), `["lookup"]`)
	wantJSON(t, key(t, r, "arguments"), `["{\"city\":\"Paris\"}"]`)
	h2 := must(eng.ToolResults(h1, key(t, r, "turn"), js(t, eng, `["Paris: 21C, sunny"]`)))(t)

	r = must(eng.LMToolCall(msgs, h2, model, tools))(t)
	wantJSON(t, key(t, r, "called"), `false`)
	wantJSON(t, key(t, r, "text"), `"echo|Paris: 21C, sunny"`)
	wantJSON(t, key(t, r, "names"), `[]`)
	wantJSON(t, key(t, r, "arguments"), `[]`)
	// A final turn with no results is appended alone.
	h3 := must(eng.ToolResults(h2, key(t, r, "turn"), js(t, eng, `[]`)))(t)
	if hist := historyOf(t, h3); len(hist) != 5 || hist[4]["content"] != "echo|Paris: 21C, sunny" {
		t.Fatalf("history %v", hist)
	}
}

func TestToolResultsErrors(t *testing.T) {
	eng := agentEngine(t)
	r := must(eng.LMToolCall(js(t, eng, toolMessagesJSON), js(t, eng, `""`), js(t, eng, `"echo"`), js(t, eng, toolsJSON)))(t)
	turn := key(t, r, "turn")
	for _, results := range []string{`[]`, `["5", "6"]`} {
		_, err := eng.ToolResults(js(t, eng, `""`), turn, js(t, eng, results))
		wantCode(t, err, af.CodeInvalidArgument)
	}
	_, err := eng.ToolResults(js(t, eng, `"not json"`), turn, js(t, eng, `["5"]`))
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = eng.ToolResults(js(t, eng, `""`), js(t, eng, `"{"`), js(t, eng, `[]`))
	wantCode(t, err, af.CodeInvalidArgument)
	// A tool list that is not one: an unnamed tool.
	_, err = eng.LMToolCall(js(t, eng, toolMessagesJSON), js(t, eng, `""`), js(t, eng, `"echo"`),
		js(t, eng, `[{"description": "x"}]`))
	wantCode(t, err, af.CodeInvalidArgument)
	// A nil or closed value is the closed-handle error.
	_, err = eng.ToolResults(nil, turn, js(t, eng, `[]`))
	wantCode(t, err, af.CodeInvalidArgument)
}

// traceAgent traces agent(history) = the state after the loop: while
// state.called, r = LMToolCall(messages, state.history, "echo", tools), each
// call run by a scan over (names, arguments) switching on the name, and
// state = {called, history: ToolResults(history, r.turn, results), text}.
func traceAgent(t *testing.T, eng *af.Engine, maxSteps uint64) *af.IR {
	t.Helper()
	msgs, tools, model := js(t, eng, toolMessagesJSON), js(t, eng, toolsJSON), js(t, eng, `"echo"`)
	tool := func(name string) *af.IR {
		ir := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
			return eng.HostCall(name, in[0])
		}, js(t, eng, `"{}"`)))(t)
		t.Cleanup(ir.Close)
		return ir
	}
	branches := []af.Branch{{Name: "add", IR: tool("add")}, {Name: "lookup", IR: tool("lookup")}}
	// runTool(carry, {args, name}) = [carry, the tool's result]
	runTool := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		name, err := in[1].Key("name")
		if err != nil {
			return nil, err
		}
		args, err := in[1].Key("args")
		if err != nil {
			return nil, err
		}
		y, err := eng.Switch(name, branches, args)
		if err != nil {
			return nil, err
		}
		return eng.List(in[0], y)
	}, js(t, eng, `0`), js(t, eng, `{"args": "{}", "name": "add"}`)))(t)
	state := js(t, eng, `{"called": true, "history": "", "text": ""}`)
	step := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		history, err := in[0].Key("history")
		if err != nil {
			return nil, err
		}
		r, err := eng.LMToolCall(msgs, history, model, tools)
		if err != nil {
			return nil, err
		}
		out := map[string]*af.Value{}
		for _, k := range []string{"names", "arguments", "turn", "called", "text"} {
			if out[k], err = r.Key(k); err != nil {
				return nil, err
			}
		}
		calls, err := eng.ValueOf(map[string]*af.Value{"args": out["arguments"], "name": out["names"]})
		if err != nil {
			return nil, err
		}
		scanned, err := eng.Scan(runTool, js(t, eng, `0`), calls, false)
		if err != nil {
			return nil, err
		}
		results, err := scanned.Index(1)
		if err != nil {
			return nil, err
		}
		next, err := eng.ToolResults(history, out["turn"], results)
		if err != nil {
			return nil, err
		}
		return eng.ValueOf(map[string]*af.Value{"called": out["called"], "history": next, "text": out["text"]})
	}, state))(t)
	more := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return in[0].Key("called")
	}, state))(t)
	agent := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		init, err := eng.ValueOf(map[string]any{"called": true, "history": in[0], "text": ""})
		if err != nil {
			return nil, err
		}
		return eng.WhileLoop(more, step, init, maxSteps)
	}, js(t, eng, `""`)))(t)
	t.Cleanup(agent.Close)
	return agent
}

func TestToolCallAgentLoopTracedSavedReloaded(t *testing.T) {
	eng := agentEngine(t)
	agent := traceAgent(t, eng, 4)
	prog := must(af.Compile(eng, agent))(t)
	defer prog.Close()
	ctx := context.Background()
	out := must(eng.Call(ctx, prog, js(t, eng, `""`)))(t)
	wantJSON(t, key(t, out, "called"), `false`)
	wantJSON(t, key(t, out, "text"), `"echo|Paris: 21C, sunny"`)
	history := key(t, out, "history")
	hist := historyOf(t, history)
	var roles []string
	for _, m := range hist {
		roles = append(roles, m["role"].(string))
	}
	if len(hist) != 5 || roles[0] != "assistant" || roles[1] != "tool" || roles[2] != "assistant" ||
		roles[3] != "tool" || roles[4] != "assistant" || hist[1]["content"] != "5" ||
		hist[3]["content"] != "Paris: 21C, sunny" || hist[3]["tool_call_id"] != "call_1" {
		t.Fatalf("history %v", hist)
	}

	// The same history, step by step.
	msgs, tools, model := js(t, eng, toolMessagesJSON), js(t, eng, toolsJSON), js(t, eng, `"echo"`)
	h := js(t, eng, `""`)
	for {
		r := must(eng.LMToolCall(msgs, h, model, tools))(t)
		var names, args []string
		must(0, key(t, r, "names").Decode(&names))(t)
		must(0, key(t, r, "arguments").Decode(&args))(t)
		var results []*af.Value
		for i, name := range names {
			results = append(results, must(eng.HostCall(name, js(t, eng, strconv.Quote(args[i]))))(t))
		}
		h = must(eng.ToolResults(h, key(t, r, "turn"), must(eng.List(results...))(t)))(t)
		if !must(key(t, r, "called").AsBool())(t) {
			break
		}
	}
	wantJSON(t, h, must(history.JSON())(t))

	// Resuming from a history: the loop goes on from its first turn.
	first := must(json.Marshal(hist[:2]))(t)
	resumed := must(eng.Call(ctx, prog, must(eng.Str(string(first)))(t)))(t)
	wantJSON(t, key(t, resumed, "text"), `"echo|Paris: 21C, sunny"`)

	// Saved and reloaded: bytes, and a program file run on another engine.
	loaded := must(af.IRFromBytes(eng, must(agent.Bytes())(t)))(t)
	defer loaded.Close()
	if !loaded.Equal(agent) {
		t.Fatal("the reloaded IR differs")
	}
	want := must(out.JSON())(t)
	wantJSON(t, must(eng.Call(ctx, loaded, js(t, eng, `""`)))(t), want)
	path := filepath.Join(t.TempDir(), "agent.afg")
	must(0, prog.Save(path))(t)
	other := agentEngine(t)
	wantJSON(t, must(other.Call(ctx, must(af.LoadProgram(other, path))(t), js(t, other, `""`)))(t), want)
}

func TestToolCallAgentLoopStopsAtMaxSteps(t *testing.T) {
	eng := agentEngine(t)
	// Two steps: both call a tool, so the loop ends still called, no text.
	out := must(traceAgent(t, eng, 2).Call(eng, js(t, eng, `""`)))(t)
	wantJSON(t, key(t, out, "called"), `true`)
	wantJSON(t, key(t, out, "text"), `""`)
	if hist := historyOf(t, key(t, out, "history")); len(hist) != 4 {
		t.Fatalf("history %v", hist)
	}
}

func TestToolResultsTraced(t *testing.T) {
	eng := agentEngine(t)
	// ToolResults(history, turn, results): the results a list of any length.
	ir := must(af.TraceWith(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.ToolResults(in[0], in[1], in[2])
	}, af.TraceOptions{ListMask: js(t, eng, `[false, false, true]`)},
		js(t, eng, `""`), js(t, eng, `"{}"`), js(t, eng, `["r"]`)))(t)
	defer ir.Close()
	if n := ir.EqnCount(); n != 1 || ir.EqnPrim(0) != "tool_results" {
		t.Fatalf("%d equations, the first %s", n, ir.EqnPrim(0))
	}
	r := must(eng.LMToolCall(js(t, eng, toolMessagesJSON), js(t, eng, `""`), js(t, eng, `"echo"`), js(t, eng, toolsJSON)))(t)
	turn := key(t, r, "turn")
	traced := must(ir.Call(eng, js(t, eng, `""`), turn, js(t, eng, `["5"]`)))(t)
	eager := must(eng.ToolResults(js(t, eng, `""`), turn, js(t, eng, `["5"]`)))(t)
	wantJSON(t, traced, must(eager.JSON())(t))
	// Saved and reloaded.
	loaded := must(af.IRFromBytes(eng, must(ir.Bytes())(t)))(t)
	defer loaded.Close()
	wantJSON(t, must(loaded.Call(eng, js(t, eng, `""`), turn, js(t, eng, `["5"]`)))(t), must(eager.JSON())(t))
	// The wrong number of results is an error of the run.
	_, err := ir.Call(eng, js(t, eng, `""`), turn, js(t, eng, `["5", "6"]`))
	wantCode(t, err, af.CodeInvalidArgument)
}
