package af_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// orPanic is the cookbook's shortcut for error handling: a real program
// returns the error instead.
func orPanic[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The README's cookbook, compiled and run by go test (TestReadmeCookbookIsTheExample
// checks that README.md shows this very code).
func Example_cookbook() {
	// cookbook:begin
	eng := orPanic(af.NewEngine()) // libaf's context: host functions, routes, scheduler
	defer eng.Close()
	ctx := context.Background() // the context.Context blocking calls take first

	// A host tool: registered by name (a saved graph refers to the name only).
	shout := func(args []*af.Value) (*af.Value, error) {
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		return eng.ValueOf(strings.ToUpper(s))
	}
	orPanic(0, eng.RegisterFunction("shout", orPanic(eng.ValueOf("str")), shout))

	// Trace, with a switch on a match result.
	q := orPanic(eng.ValueOf("q"))
	pong := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.ValueOf("pong")
	}, q))
	loud := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.HostCall("shout", in[0])
	}, q))
	reply := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		isPing, err := eng.Match(in[0], orPanic(eng.ValueOf("ping")))
		if err != nil {
			return nil, err
		}
		key, err := eng.Format("{}", isPing) // "true" or "false"
		if err != nil {
			return nil, err
		}
		return eng.Switch(key, []af.Branch{{Name: "true", IR: pong}, {Name: "false", IR: loud}}, in[0])
	}, q))

	// Compile and run; batch runs the same program over a list.
	prog := orPanic(af.Compile(eng, reply))
	fmt.Println(orPanic(eng.Call(ctx, prog, orPanic(eng.ValueOf("ping")))))
	batched := orPanic(af.Compile(eng, orPanic(reply.Batch(eng, nil))))
	fmt.Println(orPanic(eng.Call(ctx, batched, orPanic(eng.ValueOf([]string{"ping", "hi"})))))

	// A slow echo model stands in for an LM: a deadline on ctx ends the run,
	// and an async run is cancelled through its Future.
	orPanic(0, eng.Route("*", orPanic(af.NewEchoProvider(`{"latency_ms": 5000}`))))
	ask := orPanic(af.Compile(eng, orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		msgs, err := eng.ValueOf([]map[string]any{{"role": "user", "content": in[0]}})
		if err != nil {
			return nil, err
		}
		return eng.LMCall(msgs, orPanic(eng.ValueOf("some-model")))
	}, q))))
	soon, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := eng.Call(soon, ask, orPanic(eng.ValueOf("hi")))
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	run := orPanic(ask.CallAsync(eng, nil, orPanic(eng.ValueOf("hi"))))
	run.Cancel()
	_, err = run.Wait()
	fmt.Println(errors.Is(err, af.ErrCancelled))

	// Save; load in another process (here another engine) and register its tools there.
	path := filepath.Join(os.TempDir(), fmt.Sprintf("af-cookbook-%d.afg", os.Getpid()))
	orPanic(0, prog.Save(path))
	other := orPanic(af.NewEngine())
	defer other.Close()
	orPanic(0, other.RegisterFunction("shout", orPanic(other.ValueOf("str")), func(args []*af.Value) (*af.Value, error) {
		s, _ := args[0].AsString()
		return other.ValueOf(s + "!")
	}))
	fmt.Println(orPanic(other.Call(ctx, orPanic(af.LoadProgram(other, path)), orPanic(other.ValueOf("hi")))))
	os.Remove(path)

	// Pullback: text feedback on the output flows back to each input.
	greet := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.Format("Hello, {}!", in[0])
	}, q))
	back := orPanic(eng.Call(ctx, orPanic(greet.Pullback(eng)),
		orPanic(eng.ValueOf([]string{"Ada"})), orPanic(eng.ValueOf("be warmer"))))
	fmt.Println(orPanic(back.Index(0)), orPanic(orPanic(back.Index(1)).Len()))
	// cookbook:end

	// Output:
	// "pong"
	// ["pong","HI"]
	// true
	// true
	// "hi!"
	// "Hello, Ada!" 1
}

// The README's rolling summary (a cookbook entry of its own), compiled and
// run by go test (TestReadmeRollingSummaryIsTheExample checks that README.md
// shows this very code).
func Example_rollingSummary() {
	// rolling-summary:begin
	eng := orPanic(af.NewEngine())
	defer eng.Close()
	ctx := context.Background()
	// The echo provider stands in for a summarizer model (it answers
	// "<model>|<prompt>"); route "summarizer" to a real provider instead,
	// e.g. af.NewOpenAIProvider.
	orPanic(0, eng.Route("summarizer", orPanic(af.NewEchoProvider(""))))

	// One step: fold the next chunk into the summary so far. The new summary
	// is both the next carry and this chunk's y.
	summary, chunk := orPanic(eng.ValueOf("summary")), orPanic(eng.ValueOf("chunk"))
	step := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		prompt, err := eng.Format("Update the summary ({}) with: {}", in[0], in[1])
		if err != nil {
			return nil, err
		}
		msgs, err := eng.ValueOf([]map[string]any{{"role": "user", "content": prompt}})
		if err != nil {
			return nil, err
		}
		next, err := eng.LMCall(msgs, orPanic(eng.ValueOf("summarizer")))
		if err != nil {
			return nil, err
		}
		return eng.List(next, next) // [next carry, y]
	}, summary, chunk))

	// The program scans the step over a list of chunks of any length
	// (ListMask marks input 1), traced and compiled once.
	summarize := orPanic(af.Compile(eng, orPanic(af.TraceWith(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.Scan(step, in[0], in[1], false) // [final summary, summary after each chunk]
	}, af.TraceOptions{ListMask: orPanic(eng.ValueOf([]bool{false, true}))},
		summary, orPanic(eng.ValueOf([]string{"chunk"}))))))

	// Any document: its chunks are the list.
	for _, doc := range [][]string{
		{"Sales rose in May.", "June was flat."},
		{"Q1 up.", "Q2 flat.", "Q3 down."},
	} {
		out := orPanic(eng.Call(ctx, summarize, orPanic(eng.ValueOf("none")), orPanic(eng.ValueOf(doc))))
		after := orPanic(out.Index(1))
		for i, n := 0, orPanic(after.Len()); i < n; i++ {
			fmt.Printf("after chunk %d: %s\n", i+1, orPanic(orPanic(after.Index(i)).AsString()))
		}
	}
	// rolling-summary:end

	// Output:
	// after chunk 1: summarizer|Update the summary (none) with: Sales rose in May.
	// after chunk 2: summarizer|Update the summary (summarizer|Update the summary (none) with: Sales rose in May.) with: June was flat.
	// after chunk 1: summarizer|Update the summary (none) with: Q1 up.
	// after chunk 2: summarizer|Update the summary (summarizer|Update the summary (none) with: Q1 up.) with: Q2 flat.
	// after chunk 3: summarizer|Update the summary (summarizer|Update the summary (summarizer|Update the summary (none) with: Q1 up.) with: Q2 flat.) with: Q3 down.
}

// The README's agent loop (a cookbook entry of its own), compiled and run by
// go test (TestReadmeAgentLoopIsTheExample checks that README.md shows this
// very code).
func Example_agentLoop() {
	// agent-loop:begin
	eng := orPanic(af.NewEngine())
	defer eng.Close()
	ctx := context.Background()
	// The echo provider stands in for a model that calls tools: it calls
	// each tool once, in order, with its smallest arguments, then answers
	// "<model>|<last message>". Route "echo" to a real provider instead.
	orPanic(0, eng.Route("echo", orPanic(af.NewEchoProvider(""))))

	// The tools: what the model is told (a schema of each tool's arguments)
	// and host functions taking the arguments as JSON text.
	tools := orPanic(eng.FromJSON(`[
		{"name": "add", "description": "a + b",
		 "parameters": {"a": {"type": "int", "min": 2}, "b": {"type": "int", "min": 3}}},
		{"name": "lookup", "description": "today's weather in a city",
		 "parameters": {"city": {"type": "enum", "values": ["Paris", "Rome"]}}}]`))
	str := orPanic(eng.ValueOf("str"))
	orPanic(0, eng.RegisterFunction("add", str, func(args []*af.Value) (*af.Value, error) {
		var a struct{ A, B int }
		if err := json.Unmarshal([]byte(orPanic(args[0].AsString())), &a); err != nil {
			return nil, err
		}
		return eng.Str(strconv.Itoa(a.A + a.B))
	}))
	orPanic(0, eng.RegisterFunction("lookup", str, func(args []*af.Value) (*af.Value, error) {
		var a struct{ City string }
		if err := json.Unmarshal([]byte(orPanic(args[0].AsString())), &a); err != nil {
			return nil, err
		}
		return eng.Str(a.City + ": 21C, sunny")
	}))

	// runTool(carry, {args, name}) = [carry, the tool's result]: a switch on
	// the name, each branch a host call.
	hostCall := func(name string) *af.IR {
		return orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
			return eng.HostCall(name, in[0])
		}, orPanic(eng.ValueOf("{}"))))
	}
	branches := []af.Branch{{Name: "add", IR: hostCall("add")}, {Name: "lookup", IR: hostCall("lookup")}}
	runTool := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		result, err := eng.Switch(orPanic(in[1].Key("name")), branches, orPanic(in[1].Key("args")))
		if err != nil {
			return nil, err
		}
		return eng.List(in[0], result)
	}, orPanic(eng.ValueOf(0)), orPanic(eng.ValueOf(map[string]string{"args": "{}", "name": "add"}))))

	// One step of the agent: ask the model (with the history so far), run
	// the tools it called — a scan, which handles any number of calls,
	// none included — and add its turn and their results to the history.
	messages := orPanic(eng.ValueOf([]map[string]string{
		{"role": "system", "content": "Use the tools, then answer."},
		{"role": "user", "content": "What is 2 + 3, and the weather in Paris?"},
	}))
	model := orPanic(eng.ValueOf("echo"))
	state := orPanic(eng.ValueOf(map[string]any{"called": true, "history": "", "text": ""}))
	step := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		history := orPanic(in[0].Key("history"))
		r, err := eng.LMToolCall(messages, history, model, tools)
		if err != nil {
			return nil, err
		}
		calls := orPanic(eng.ValueOf(map[string]*af.Value{
			"args": orPanic(r.Key("arguments")), "name": orPanic(r.Key("names"))}))
		scanned, err := eng.Scan(runTool, orPanic(eng.ValueOf(0)), calls, false)
		if err != nil {
			return nil, err
		}
		history, err = eng.ToolResults(history, orPanic(r.Key("turn")), orPanic(scanned.Index(1)))
		if err != nil {
			return nil, err
		}
		return eng.ValueOf(map[string]*af.Value{
			"called": orPanic(r.Key("called")), "history": history, "text": orPanic(r.Key("text"))})
	}, state))
	called := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return in[0].Key("called")
	}, state))

	// The agent: steps while the model calls tools, at most 4. Its input is
	// the history to start from ("" for a new conversation).
	agent := orPanic(af.Compile(eng, orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		init := orPanic(eng.ValueOf(map[string]any{"called": true, "history": in[0], "text": ""}))
		return eng.WhileLoop(called, step, init, 4)
	}, orPanic(eng.ValueOf(""))))))

	out := orPanic(eng.Call(ctx, agent, orPanic(eng.ValueOf(""))))
	fmt.Println("answer:", orPanic(orPanic(out.Key("text")).AsString()))
	var history []struct {
		Role, Content string
		ToolCalls     []struct{ Name, Arguments string } `json:"tool_calls"`
	}
	orPanic(0, json.Unmarshal([]byte(orPanic(orPanic(out.Key("history")).AsString())), &history))
	for _, m := range history {
		for _, call := range m.ToolCalls {
			fmt.Printf("%s calls %s %s\n", m.Role, call.Name, call.Arguments)
		}
		if m.Content != "" {
			fmt.Printf("%s: %s\n", m.Role, m.Content)
		}
	}
	// agent-loop:end

	// Output:
	// answer: echo|Paris: 21C, sunny
	// assistant calls add {"a":2,"b":3}
	// tool: 5
	// assistant calls lookup {"city":"Paris"}
	// tool: Paris: 21C, sunny
	// assistant: echo|Paris: 21C, sunny
}
